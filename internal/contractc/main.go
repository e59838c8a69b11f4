// Package contractc is the contractc command: one file per subcommand,
// each a function from arguments to an exit code.
package contractc

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seamdc/seam/internal/cli"
)

var program = &cli.Program{
	Name:  "contractc",
	About: "contractc checks seam contracts and compiles them into test plans.",
	Exits: "0 clean, 1 the tool failed, 2 findings.",
}

// register adds a subcommand; each file registers its own in init.
// None runs under the program's whole-command budget: Main arms the
// budget, and each contract evaluation (contract.Load, cueload.Load) is
// bounded by it, not the servers and scheduler clients that run on
// after (redfish serve, topology apply).
func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) *cli.Command {
	if program.NoBudget == nil {
		program.NoBudget = map[string]bool{}
	}
	program.NoBudget[name] = true
	return program.Register(name, summary, run)
}

// Main runs contractc with args (without the program name), with the
// CUE budget of one evaluation (cli.EvalBudgetFromEnv) armed.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && program.NoBudget[args[0]] {
		lookup := program.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		b, err := cli.EvalBudgetFromEnv(lookup)
		if err != nil {
			fmt.Fprintf(stderr, "contractc %s: %v\n", args[0], err)
			return cli.ExitTool
		}
		defer cli.Arm(stderr, "contractc "+args[0], b)()
	}
	return program.Main(args, stdout, stderr)
}

// fail prints an error and returns the matching exit code.
func fail(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	return program.Fail(stderr, name, fs, err)
}

func printFlags(w io.Writer, name string, fs *flag.FlagSet) { program.PrintFlags(w, name, fs) }
