// Package clitest checks a cli.Program's help from its tests: every
// subcommand (and each of its own) answers -h with its description, its
// usage line, its flags in the --name form and one example.
package clitest

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/seamdc/seam/internal/cli"
)

// shortFlag is a flag of more than one letter written -name in a
// help's flag list.
var shortFlag = regexp.MustCompile(`(?m)^  -[a-zA-Z][a-zA-Z0-9-]`)

// WalkHelp runs "-h" for every command and subcommand of p (main runs
// the program with its arguments) and reports what a new user would
// miss in its help.
func WalkHelp(t *testing.T, p *cli.Program, main func(args []string, stdout, stderr *bytes.Buffer) int) {
	t.Helper()
	for _, c := range p.Commands() {
		t.Run(c.Name, func(t *testing.T) {
			CheckHelp(t, p, c, []string{c.Name}, main)
			for _, s := range c.Subs {
				t.Run(s.Name, func(t *testing.T) { CheckHelp(t, p, s, []string{c.Name, s.Name}, main) })
			}
		})
	}
}

// CheckHelp runs "PROGRAM WORDS... -h" and checks its output for c.
func CheckHelp(t *testing.T, p *cli.Program, c *cli.Command, words []string, main func(args []string, stdout, stderr *bytes.Buffer) int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := main(append(append([]string{}, words...), "-h"), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	name := p.Name + " " + strings.Join(words, " ")
	if code != cli.ExitOK {
		t.Errorf("%s -h: exit %d, want 0:\n%s", name, code, out)
	}
	if c.Summary == "" {
		t.Errorf("%s has no summary", name)
	} else if !strings.Contains(out, name+": "+c.Summary+"\n") {
		t.Errorf("%s -h does not begin with its description %q:\n%s", name, name+": "+c.Summary, out)
	}
	if n := strings.Count("\n"+out, "\nexample: "); n != 1 {
		t.Errorf("%s -h: %d example: lines, want 1:\n%s", name, n, out)
	}
	if c.Example != "" && !strings.HasPrefix(c.Example, name) {
		t.Errorf("%s: example %q does not run %s", name, c.Example, name)
	}
	usage := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "usage: ") {
			usage = l
			break
		}
	}
	if usage == "" {
		t.Errorf("%s -h has no usage: line:\n%s", name, out)
	}
	f := strings.Fields(usage)
	for i := 1; i < len(f); i++ {
		if f[i] == f[i-1] {
			t.Errorf("%s -h: %q says %q twice", name, usage, f[i])
		}
	}
	if m := shortFlag.FindString(out); m != "" {
		t.Errorf("%s -h lists a flag as %q, not --name:\n%s", name, m, out)
	}
}
