package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/version"
)

// Command is one subcommand: a summary line and a function from
// arguments to an exit code.
type Command struct {
	Summary string
	Run     func(args []string, stdout, stderr io.Writer) int
}

// Program is a command with subcommands, such as contractc or sat. Each
// subcommand's file registers itself from init.
type Program struct {
	Name  string // contractc
	About string // one line: what the program does
	Exits string // the exit codes, for the usage text
	// Every subcommand runs under the CUE budget (Guard), unless it is in
	// NoBudget (it evaluates no CUE, or guards its own evaluations) or,
	// for the time only, in NoTimeBudget (it runs for long: a simulator).
	NoBudget, NoTimeBudget map[string]bool
	// LookupEnv reads the budget's environment (default os.LookupEnv).
	LookupEnv func(string) (string, bool)
	commands  map[string]Command
}

// Register adds a subcommand.
func (p *Program) Register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) {
	if p.commands == nil {
		p.commands = map[string]Command{}
	}
	p.commands[name] = Command{summary, run}
}

// Usage is the program's help text.
func (p *Program) Usage() string {
	names := make([]string, 0, len(p.commands))
	for n := range p.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nUsage:\n  %s <command> [flags] [arguments]\n\nCommands:\n", p.About, p.Name)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-8s %s\n", n, p.commands[n].Summary)
	}
	fmt.Fprintf(&b, "  %-8s %s\n", "version", "print the version")
	fmt.Fprintf(&b, "\nExit codes: %s\nRun '%s <command> -h' for a command's flags.\n", p.Exits, p.Name)
	return b.String()
}

// Main runs the program with args (without the program name).
func (p *Program) Main(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, p.Usage())
		if len(args) == 0 {
			return ExitTool
		}
		return ExitOK
	}
	if args[0] == "version" || args[0] == "--version" {
		fmt.Fprintln(stdout, p.Name, version.Version)
		return ExitOK
	}
	cmd, ok := p.commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown command %q\n\n%s", p.Name, args[0], p.Usage())
		return ExitTool
	}
	if !p.NoBudget[args[0]] {
		lookup := p.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		b, err := BudgetFromEnv(lookup)
		if err != nil {
			fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, args[0], err)
			return ExitTool
		}
		if p.NoTimeBudget[args[0]] {
			b.Time = 0
		}
		what := "its CUE inputs"
		if d := firstDir(args[1:]); d != "" {
			what = "the CUE in " + d
		}
		defer Guard(stderr, p.Name+" "+args[0], what, b)()
	}
	return cmd.Run(args[1:], stdout, stderr)
}

// firstDir is the first argument naming a directory: what a subcommand
// evaluates, for the budget's message.
func firstDir(args []string) string {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		if st, err := os.Stat(a); err == nil && st.IsDir() {
			return a
		}
	}
	return ""
}

// Fail prints a subcommand's error, with its flags after a usage error,
// and returns the matching exit code; -h prints the flags and exits 0.
func (p *Program) Fail(stderr io.Writer, name string, fs *flag.FlagSet, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		p.PrintFlags(stderr, name, fs)
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s %s: %v\n", p.Name, name, err)
	var ue *UsageError
	if errors.As(err, &ue) {
		p.PrintFlags(stderr, name, fs)
	}
	return ExitTool
}

// PrintFlags writes a subcommand's usage line and flags; the flag set's
// name holds the arguments it takes ("DIR").
func (p *Program) PrintFlags(w io.Writer, name string, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s %s %s\n", p.Name, name, fs.Name())
	fs.SetOutput(w)
	fs.PrintDefaults()
}
