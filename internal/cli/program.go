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

// Command is one subcommand: a summary line, an example, and a
// function from arguments to an exit code. A command with subcommands of
// its own (sat cap apply|clear|check) lists them in Subs, for its help.
type Command struct {
	Name    string
	Summary string
	// Example is one command line that works as written, shown by -h.
	Example string
	Run     func(args []string, stdout, stderr io.Writer) int
	Subs    []*Command
}

// WithExample sets the command's example and returns it.
func (c *Command) WithExample(example string) *Command {
	c.Example = example
	return c
}

// Sub adds a subcommand of c (its run is c's: the help lists it, the
// parent dispatches it) and returns c.
func (c *Command) Sub(name, summary, example string) *Command {
	c.Subs = append(c.Subs, &Command{Name: name, Summary: summary, Example: example})
	return c
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
	commands  map[string]*Command
	examples  map[string]string // Example's, for commands registered elsewhere
}

// Register adds a subcommand and returns it, for its example and its
// own subcommands.
func (p *Program) Register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) *Command {
	if p.commands == nil {
		p.commands = map[string]*Command{}
	}
	c := &Command{Name: name, Summary: summary, Run: run}
	p.commands[name] = c
	return c
}

// Example sets the example of a command another file registers (in any
// order of the package's init functions).
func (p *Program) Example(name, example string) {
	if p.examples == nil {
		p.examples = map[string]string{}
	}
	p.examples[name] = example
}

// Commands are the program's subcommands, sorted by name.
func (p *Program) Commands() []*Command {
	names := make([]string, 0, len(p.commands))
	for n := range p.commands {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]*Command, 0, len(names))
	for _, n := range names {
		c := p.commands[n]
		if c.Example == "" {
			c.Example = p.examples[n]
		}
		out = append(out, c)
	}
	return out
}

// Lookup finds a command by its words after the program's name ("cap
// apply"): a subcommand's entry, or nil.
func (p *Program) Lookup(name string) *Command {
	words := strings.Fields(name)
	if len(words) == 0 {
		return nil
	}
	c := p.commands[words[0]]
	if c != nil && c.Example == "" {
		c.Example = p.examples[words[0]]
	}
	for _, w := range words[1:] {
		if c == nil {
			return nil
		}
		var next *Command
		for _, s := range c.Subs {
			if s.Name == w {
				next = s
			}
		}
		c = next
	}
	return c
}

// writeList writes name and summary pairs as an aligned list.
func writeList(w io.Writer, rows [][2]string) {
	width := 0
	for _, r := range rows {
		width = max(width, len(r[0]))
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-*s  %s\n", width, r[0], r[1])
	}
}

// Usage is the program's help text.
func (p *Program) Usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n\nusage: %s <command> [flags] [arguments]\n\nCommands:\n", p.About, p.Name)
	var rows [][2]string
	for _, c := range p.Commands() {
		rows = append(rows, [2]string{c.Name, c.Summary})
	}
	rows = append(rows, [2]string{"version", "print the version"})
	writeList(&b, rows)
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

// PrintFlags writes a subcommand's help: its summary, its usage line
// (the flag set's name holds the arguments it takes: "DIR"), its flags
// as --name, and its example.
func (p *Program) PrintFlags(w io.Writer, name string, fs *flag.FlagSet) {
	c := p.Lookup(name)
	if c != nil && c.Summary != "" {
		fmt.Fprintf(w, "%s %s: %s\n", p.Name, name, c.Summary)
	}
	args := ""
	if fs != nil {
		args = fs.Name()
	}
	fmt.Fprintln(w, UsageLine(p.Name+" "+name, args))
	if fs != nil {
		writeFlags(w, fs)
	}
	if c != nil && len(c.Subs) > 0 {
		// a command that is also the parent of others (contractc
		// topology, topology apply) lists them after its own flags
		var rows [][2]string
		for _, s := range c.Subs {
			rows = append(rows, [2]string{s.Name, s.Summary})
		}
		fmt.Fprintln(w, "commands:")
		writeList(w, rows)
		fmt.Fprintf(w, "Run '%s %s <command> -h' for a command's flags.\n", p.Name, name)
	}
	if c != nil && c.Example != "" {
		fmt.Fprintf(w, "example: %s\n", c.Example)
	}
}

// PrintSubs writes the help of a command with subcommands: its summary,
// its usage line, its subcommands aligned with their summaries, what
// more to read (more: "" for nothing), and its example.
func (p *Program) PrintSubs(w io.Writer, name, more string) {
	c := p.Lookup(name)
	if c == nil {
		fmt.Fprintf(w, "usage: %s %s <command>\n", p.Name, name)
		return
	}
	fmt.Fprintf(w, "%s %s: %s\n", p.Name, name, c.Summary)
	subs := make([]string, 0, len(c.Subs))
	var rows [][2]string
	for _, s := range c.Subs {
		subs = append(subs, s.Name)
		rows = append(rows, [2]string{s.Name, s.Summary})
	}
	fmt.Fprintf(w, "usage: %s %s %s [flags] [arguments]\n\nCommands:\n", p.Name, name, strings.Join(subs, "|"))
	writeList(w, rows)
	if more != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(more, "\n"))
	}
	fmt.Fprintf(w, "\nRun '%s %s <command> -h' for a command's flags.\n", p.Name, name)
	if c.Example != "" {
		fmt.Fprintf(w, "example: %s\n", c.Example)
	}
}

// UsageLine is "usage: CMD ARGS", a word CMD ends with not repeated at
// the start of ARGS ("sat burnin run" and "run --out DIR").
func UsageLine(cmd, args string) string {
	words := strings.Fields(cmd)
	if last := words[len(words)-1]; args == last || strings.HasPrefix(args, last+" ") {
		args = strings.TrimSpace(strings.TrimPrefix(args, last))
	}
	if args == "" {
		return "usage: " + cmd
	}
	return "usage: " + cmd + " " + args
}

// writeFlags writes fs's flags as PrintDefaults does, each named in the
// --name form the docs use (the flag package takes -name and --name); a
// one-letter flag stays -o.
func writeFlags(w io.Writer, fs *flag.FlagSet) {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintln(w, "flags:")
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		// a one-letter flag stays -o, as the docs write it
		if rest, ok := strings.CutPrefix(line, "  -"); ok {
			if name := strings.Fields(rest); len(name) > 0 && len(name[0]) > 1 {
				line = "  --" + rest
			}
		}
		fmt.Fprint(w, line)
	}
}
