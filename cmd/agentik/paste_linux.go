package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pasteMode turns on bracketed paste when f is a terminal, so a pasted
// block of lines arrives marked (readMessages makes it one message), and
// stops the terminal echoing those markers as ^[[200~ (ECHOCTL off; the
// terminal ignores the markers it is sent back). restore undoes both; nil
// when f is no terminal.
func pasteMode(f *os.File, out io.Writer) (restore func()) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil
	}
	t := *old
	t.Lflag &^= unix.ECHOCTL
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &t); err != nil {
		return nil
	}
	fmt.Fprint(out, "\x1b[?2004h")
	return func() {
		fmt.Fprint(out, "\x1b[?2004l")
		_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
	}
}
