package bmcsecret

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Lock takes the secrets file's writer lock (an exclusive flock on
// PATH.lock beside it), so that two rotations never write the file at
// once: the second would write back what the first replaced, and a
// BMC's new secret would be lost. It does not wait: a lock another
// process holds is an error naming it. unlock releases it; the lock
// also ends with the process, however it ends.
func Lock(path string) (unlock func(), err error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("BMC secrets file lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(name)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := strings.TrimSpace(string(holder))
			if who != "" {
				who = " (process " + who + ")"
			}
			return nil, fmt.Errorf("BMC secrets file %s is being written by another rotation%s: wait for it to end, or stop it (a stopped rotation is continued by the next)", path, who)
		}
		return nil, fmt.Errorf("BMC secrets file lock %s: %w", name, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
