// Package satcmd is the sat command: one file per subcommand,
// each a function from arguments to an exit code.
package satcmd

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/cli"
)

var program = &cli.Program{
	Name:  "sat",
	About: "sat runs seam test plans against a site or the simulated site.",
	Exits: "0 all passed, 1 the tool failed, 2 a test failed, 3 aborted.",
	// run bounds its own CUE evaluations (the binding, the simulator's
	// inputs); the evidence commands evaluate no CUE; sim and probe
	// --watch run for long, under the memory budget only
	NoBudget:     map[string]bool{"run": true, "verify": true, "report": true, "compare": true, "sign-off": true, "attach": true},
	NoTimeBudget: map[string]bool{"sim": true, "probe": true},
}

func init() {
	// report.go registers report (its owner's file); its example is here
	program.Example("report", "sat report out/run1")
}

// register adds a subcommand; each file registers its own in init.
func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) *cli.Command {
	return program.Register(name, summary, run)
}

// Main runs sat with args (without the program name).
func Main(args []string, stdout, stderr io.Writer) int { return program.Main(args, stdout, stderr) }

// fail prints an error and returns the matching exit code.
func fail(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	return program.Fail(stderr, name, fs, err)
}

// subcommand answers a command's arguments that name none of its
// subcommands (known): none (its subcommands listed, exit 1), help
// (listed, exit 0) or an unknown one (named, exit 1). done is false
// when args[0] is one of known: the command runs it.
func subcommand(args []string, stderr io.Writer, cmd, help string, known ...string) (code int, done bool) {
	switch {
	case len(args) > 0 && slices.Contains(known, args[0]):
		return 0, false
	case len(args) == 0:
		code = cli.ExitTool
	case args[0] == "-h" || args[0] == "--help" || args[0] == "help":
		code = cli.ExitOK
	default:
		list := strings.Join(known, ", ")
		if i := strings.LastIndex(list, ", "); i >= 0 {
			list = list[:i] + " or " + list[i+2:]
		}
		fmt.Fprintf(stderr, "sat %s: unknown subcommand %q (%s)\n\n", cmd, args[0], list)
		code = cli.ExitTool
	}
	program.PrintSubs(stderr, cmd, help)
	return code, true
}
