//go:build unix

package evidence

import (
	"os"
	"syscall"
)

// openFlags open a bundle file without following a link and without
// blocking on a FIFO, so that its kind can be checked before any read.
const openFlags = os.O_RDONLY | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
