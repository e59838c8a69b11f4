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
	register("lifecycle", lifecyclecmd.Summary, nested("lifecycle", lifecyclecmd.Main)).
		WithExample("sat lifecycle list --store lifecycle.db --state commissioned --kind rack")
	program.NoBudget["lifecycle"] = true
}

// nested runs a program of subcommands as sat's command name; its -h
// is sat's: the summary, the subcommands, and the example.
func nested(name string, main func(args []string, stdout, stderr io.Writer) int) func(args []string, stdout, stderr io.Writer) int {
	return func(args []string, stdout, stderr io.Writer) int {
		if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			c := program.Lookup(name)
			fmt.Fprintf(stdout, "sat %s: %s\n", name, c.Summary)
			code := main(args, stdout, stderr)
			fmt.Fprintf(stdout, "example: %s\n", c.Example)
			return code
		}
		return main(args, stdout, stderr)
	}
}
