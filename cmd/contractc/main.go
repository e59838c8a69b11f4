// Command contractc checks seam contracts, reports site budgets and
// compiles contracts into test plans. Run `contractc help` for usage.
package main

import (
	"os"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contractc"
)

func main() {
	cli.TuneGC()
	os.Exit(contractc.Main(os.Args[1:], os.Stdout, os.Stderr))
}
