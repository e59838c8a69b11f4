// Command facilityd turns facility alarms into scheduler drains: one
// alarm stream, holds with owners, and an undrain a named person
// approves. Run `facilityd help` for usage; docs/facilityd.md.
package main

import (
	"os"

	"github.com/seamdc/seam/internal/drain/facilityd"
)

func main() { os.Exit(facilityd.Main(os.Args[1:], os.Stdout, os.Stderr)) }
