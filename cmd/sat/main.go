// Command sat runs seam test plans against a site or the simulated site.
// Run `sat help` for usage.
package main

import (
	"os"

	"github.com/seamdc/seam/internal/satcmd"
)

func main() { os.Exit(satcmd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
