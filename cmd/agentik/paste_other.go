//go:build !linux

package main

import (
	"fmt"
	"io"
	"os"
)

// pasteMode turns on bracketed paste when f is a terminal (see
// paste_linux.go; here the terminal's echo is left as it is).
func pasteMode(f *os.File, out io.Writer) (restore func()) {
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	fmt.Fprint(out, "\x1b[?2004h")
	return func() { fmt.Fprint(out, "\x1b[?2004l") }
}
