package satcmd

import (
	"flag"
	"io"

	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
)

// sat issues and sat gate: the commissioning issues log and its gates,
// kept in the lifecycle store (internal/lifecycle/lifecyclecmd).
func init() {
	register("issues", lifecyclecmd.IssuesSummary, nested("issues", lifecyclecmd.IssuesMain)).
		WithExample("sat issues list --store site.db --module ma")
	program.NoBudget["issues"] = true
	register("gate", lifecyclecmd.GateSummary, runGate).
		WithExample("sat gate L4 --module ma --store site.db")
	program.NoBudget["gate"] = true
}

func runGate(args []string, stdout, stderr io.Writer) int {
	return lifecyclecmd.GateMain(args, stdout, stderr, func(fs *flag.FlagSet, err error) int {
		return program.Fail(stderr, "gate", fs, err)
	})
}
