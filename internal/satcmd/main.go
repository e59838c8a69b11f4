// Package satcmd is the sat command: one file per subcommand,
// each a function from arguments to an exit code.
package satcmd

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/version"
)

type command struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

// commands holds the subcommands; each file registers its own in init.
var commands = map[string]command{}

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	commands[name] = command{summary, run}
}

const usage = `sat runs seam test plans against a site or the simulated site.

Usage:
  sat <command> [flags] [arguments]

Commands:
%s
Exit codes: 0 all passed, 1 the tool failed, 2 a test failed, 3 aborted.
Run 'sat <command> -h' for a command's flags.
`

func usageText() string {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(&b, "  %-8s %s\n", "version", "print the version")
	return fmt.Sprintf(usage, b.String())
}

// Main runs contractc with args (without the program name).
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usageText())
		if len(args) == 0 {
			return cli.ExitTool
		}
		return cli.ExitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, "sat", version.Version)
		return cli.ExitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sat: unknown command %q\n\n%s", args[0], usageText())
		return cli.ExitTool
	}
	return cmd.run(args[1:], stdout, stderr)
}

// fail prints an error and returns the matching exit code.
func fail(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		printFlags(stderr, name, fs)
		return cli.ExitOK
	}
	fmt.Fprintf(stderr, "sat %s: %v\n", name, err)
	var ue *cli.UsageError
	if errors.As(err, &ue) {
		printFlags(stderr, name, fs)
	}
	return cli.ExitTool
}

func printFlags(w io.Writer, name string, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: sat %s %s\n", name, fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
}
