package contractc

import (
	"flag"
	"io"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
)

func init() {
	register("vet", "check contracts: schema, units, joints, budgets, shared dependencies", runVet).
		WithExample("contractc vet contracts/examples/threemodule")
}

func runVet(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR", flag.ContinueOnError)
	format := fs.String("format", "text", "output format: "+strings.Join(diag.Formats, ", "))
	strict := fs.Bool("strict", false, "fail on warnings too")
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	}
	if err != nil {
		return fail(stderr, "vet", fs, err)
	}
	_, diags, err := contract.VetInventory(pos[0], inv.paths())
	if err != nil {
		return fail(stderr, "vet", fs, err)
	}
	diags = diags.Rebase(cli.RelDir(pos[0]))
	if err := diag.Render(stdout, *format, diags, contract.Rules); err != nil {
		return fail(stderr, "vet", fs, cli.Usagef("%v", err))
	}
	level := diag.Error
	if *strict {
		level = diag.Warning
	}
	if diags.Count(level) > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}
