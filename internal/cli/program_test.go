package cli

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
)

func testProgram() *Program {
	p := &Program{Name: "tool", About: "tool does things.", Exits: "0 ok."}
	run := func([]string, io.Writer, io.Writer) int { return ExitOK }
	p.Register("a", "the short one", run).WithExample("tool a DIR")
	p.Register("maintenance", "the long one", run).WithExample("tool maintenance DIR").
		Sub("apply", "apply it", "tool maintenance apply DIR")
	return p
}

// The command list is aligned however long a name is.
func TestUsageAligned(t *testing.T) {
	u := testProgram().Usage()
	for _, want := range []string{"\n  a            the short one\n", "\n  maintenance  the long one\n", "\n  version      print the version\n"} {
		if !strings.Contains(u, want) {
			t.Errorf("usage lacks %q:\n%s", want, u)
		}
	}
}

// A subcommand's help: summary, usage line (the name's last word not
// repeated), flags as --name (one letter: -o), one example.
func TestPrintFlags(t *testing.T) {
	p := testProgram()
	fs := flag.NewFlagSet("apply DIR [--dry-run]", flag.ContinueOnError)
	fs.Bool("dry-run", false, "print, write nothing")
	fs.String("o", "", "output file")
	var b bytes.Buffer
	p.PrintFlags(&b, "maintenance apply", fs)
	want := "tool maintenance apply: apply it\n" +
		"usage: tool maintenance apply DIR [--dry-run]\n" +
		"flags:\n" +
		"  --dry-run\n    \tprint, write nothing\n" +
		"  -o string\n    \toutput file\n" +
		"example: tool maintenance apply DIR\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestUsageLine(t *testing.T) {
	for _, tc := range []struct{ cmd, args, want string }{
		{"sat burnin run", "run --out DIR", "usage: sat burnin run --out DIR"},
		{"sat burnin run", "--out DIR", "usage: sat burnin run --out DIR"},
		{"sat burnin compare", "compare", "usage: sat burnin compare"},
		{"sat run", "running PLAN", "usage: sat run running PLAN"},
		{"sat verify", "", "usage: sat verify"},
	} {
		if got := UsageLine(tc.cmd, tc.args); got != tc.want {
			t.Errorf("UsageLine(%q, %q) = %q, want %q", tc.cmd, tc.args, got, tc.want)
		}
	}
}

// A command with subcommands lists them, aligned, with their summaries.
func TestPrintSubs(t *testing.T) {
	p := testProgram()
	p.Lookup("maintenance").Sub("check-everything", "check it", "tool maintenance check-everything DIR")
	var b bytes.Buffer
	p.PrintSubs(&b, "maintenance", "More words.")
	want := "tool maintenance: the long one\n" +
		"usage: tool maintenance apply|check-everything [flags] [arguments]\n\nCommands:\n" +
		"  apply             apply it\n" +
		"  check-everything  check it\n\n" +
		"More words.\n\n" +
		"Run 'tool maintenance <command> -h' for a command's flags.\n" +
		"example: tool maintenance DIR\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// A command with subcommands of its own lists them in its help, aligned.
func TestPrintFlagsListsSubs(t *testing.T) {
	p := testProgram()
	var b bytes.Buffer
	p.PrintFlags(&b, "maintenance", flag.NewFlagSet("DIR", flag.ContinueOnError))
	want := "tool maintenance: the long one\n" +
		"usage: tool maintenance DIR\n" +
		"commands:\n" +
		"  apply  apply it\n" +
		"Run 'tool maintenance <command> -h' for a command's flags.\n" +
		"example: tool maintenance DIR\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
