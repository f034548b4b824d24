//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// errLocked is tryLock's answer when another open file holds the lock.
var errLocked = errors.New("locked")

// tryLock takes an exclusive flock on f without waiting.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
