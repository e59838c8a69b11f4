package satcmd

import (
	"fmt"
	"io"

	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
)

// sat lifecycle: the lifecycle store (internal/lifecycle/lifecyclecmd
// has its subcommands). Its own program bounds the one subcommand that
// evaluates CUE (init); the others work on the store, for as long as a
// large one takes.
func init() {
	register("lifecycle", lifecyclecmd.Summary, runLifecycle).
		WithExample("sat lifecycle list --store lifecycle.db --state commissioned --kind rack")
	program.NoBudget["lifecycle"] = true
}

// runLifecycle is lifecyclecmd's Main; its -h is sat's: the summary,
// the store's subcommands, and the example.
func runLifecycle(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		c := program.Lookup("lifecycle")
		fmt.Fprintf(stdout, "sat lifecycle: %s\n", c.Summary)
		code := lifecyclecmd.Main(args, stdout, stderr)
		fmt.Fprintf(stdout, "example: %s\n", c.Example)
		return code
	}
	return lifecyclecmd.Main(args, stdout, stderr)
}
