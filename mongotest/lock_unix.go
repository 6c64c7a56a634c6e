//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package mongotest

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on path, waiting for it, and returns
// the function that releases it. The system releases it too when the
// process ends, so a build killed halfway leaves no stale lock.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}
