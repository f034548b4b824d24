//go:build unix

package eventlog

import (
	"os"
	"syscall"
)

// mapsFiles tells whether mapFile maps (its bytes are not Go's memory).
const mapsFiles = true

// mapFile maps the first size bytes of f, read only and shared: file
// pages the kernel may drop and read again, not the process's own.
func mapFile(f *os.File, size int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
}

// unmapFile unmaps what mapFile mapped.
func unmapFile(m []byte) error { return syscall.Munmap(m) }
