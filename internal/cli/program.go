package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
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
	Name     string // contractc
	About    string // one line: what the program does
	Exits    string // the exit codes, for the usage text
	commands map[string]Command
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
	return cmd.Run(args[1:], stdout, stderr)
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
