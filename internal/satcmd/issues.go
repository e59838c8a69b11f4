package satcmd

import (
	"flag"
	"fmt"
	"io"

	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
)

// sat issues and sat gate: the commissioning issues log and its gates,
// kept in the lifecycle store (internal/lifecycle/lifecyclecmd).
func init() {
	register("issues", lifecyclecmd.IssuesSummary, runIssues).
		WithExample("sat issues list --store site.db --module ma")
	program.NoBudget["issues"] = true
	register("gate", lifecyclecmd.GateSummary, runGate).
		WithExample("sat gate L4 --module ma --store site.db")
	program.NoBudget["gate"] = true
}

// runIssues is lifecyclecmd's IssuesMain; its -h is sat's: the summary,
// the log's subcommands, and the example.
func runIssues(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		c := program.Lookup("issues")
		fmt.Fprintf(stdout, "sat issues: %s\n", c.Summary)
		code := lifecyclecmd.IssuesMain(args, stdout, stderr)
		fmt.Fprintf(stdout, "example: %s\n", c.Example)
		return code
	}
	return lifecyclecmd.IssuesMain(args, stdout, stderr)
}

func runGate(args []string, stdout, stderr io.Writer) int {
	return lifecyclecmd.GateMain(args, stdout, stderr, func(fs *flag.FlagSet, err error) int {
		return program.Fail(stderr, "gate", fs, err)
	})
}
