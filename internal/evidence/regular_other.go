//go:build !unix

package evidence

import "os"

const openFlags = os.O_RDONLY
