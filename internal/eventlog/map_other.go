//go:build !unix

package eventlog

import "os"

// mapsFiles tells whether mapFile maps: not here, where syscall.Mmap is
// missing.
const mapsFiles = false

// mapFile reads the first size bytes of f into memory, in place of a
// mapping.
func mapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, err
	}
	return b, nil
}

// unmapFile lets the garbage collector have what mapFile read.
func unmapFile([]byte) error { return nil }
