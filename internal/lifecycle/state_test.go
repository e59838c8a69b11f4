package lifecycle

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The state machine: each allowed move, what it needs, and what is
// refused, with where the state may go instead.
func TestTransitions(t *testing.T) {
	for _, c := range []struct {
		from, to State
		needs    []Need
		err      string
	}{
		{Design, Built, nil, ""},
		{Built, Integrated, nil, ""},
		{Integrated, Shipped, nil, ""},
		{Shipped, Installed, nil, ""},
		{Installed, Commissioned, []Need{NeedSAT}, ""},
		{Commissioned, Provisioned, []Need{NeedBaseline}, ""},
		{Provisioned, Operating, nil, ""},
		{Operating, Maintenance, nil, ""},
		{Maintenance, Operating, nil, ""},
		{Operating, RMA, []Need{NeedReplacement}, ""},
		{Maintenance, RMA, []Need{NeedReplacement}, ""},
		{RMA, Commissioned, nil, ""},
		{Operating, Decommissioned, nil, ""},
		{Design, Decommissioned, nil, ""},
		{Design, Installed, nil, "cannot go from design to installed: from design an element may go to built, decommissioned"},
		{Installed, Provisioned, nil, "from installed an element may go to commissioned, decommissioned"},
		{RMA, Operating, nil, "from rma an element may go to commissioned, decommissioned"},
		{Decommissioned, Design, nil, "nothing leaves decommissioned"},
		{Operating, Operating, nil, "cannot go from operating to operating"},
	} {
		tr, err := Allowed(c.from, c.to)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "%s → %s", c.from, c.to)
			continue
		}
		require.NoError(t, err, "%s → %s", c.from, c.to)
		assert.Equal(t, c.needs, tr.Needs, "%s → %s", c.from, c.to)
		assert.Equal(t, string(c.from)+">"+string(c.to), tr.Name())
	}
	_, err := ParseState("Commissioned")
	assert.NoError(t, err)
	_, err = ParseState("burned")
	assert.ErrorContains(t, err, `"burned" is not a state: the states are design, built,`)
}

// A policy that could not work is refused, saying why.
func TestPolicyChecks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	write("signers", "alice ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOkHnJqDyFVh0oqjL0aNGo0vRKpNrHWQQJlX3Sa8ZqHA alice\n")
	base := `"format": "seam.lifecycle.access/v1", "allowed_signers_file": "signers", `
	for _, c := range []struct{ body, err string }{
		{`{` + base + `"roles": {"r": {"transitions": ["design>built"]}}, "members": {"ssh:alice": {"roles": ["r"]}}}`, ""},
		{`{"format": "x"}`, `format "x"`},
		{`{` + base + `"roles": {"r": {"transitions": ["design>installed"]}}, "members": {"ssh:alice": {"roles": ["r"]}}}`, "cannot go from design to installed"},
		{`{` + base + `"roles": {"r": {"transitions": ["design-built"]}}, "members": {"ssh:alice": {"roles": ["r"]}}}`, "write from>to"},
		{`{` + base + `"roles": {"r": {"may": ["everything"]}}, "members": {"ssh:alice": {"roles": ["r"]}}}`, `may "everything": the permissions are`},
		{`{` + base + `"roles": {"r": {}}, "members": {"alice": {"roles": ["r"]}}}`, "write ssh:PRINCIPAL"},
		{`{` + base + `"roles": {"r": {}}, "members": {"ssh:bob": {"roles": ["r"]}}}`, "allowed_signers lists no key of bob"},
		{`{` + base + `"roles": {"r": {}}, "members": {"ssh:alice": {"roles": ["s"]}}}`, `no role "s"`},
		{`{` + base + `"roles": {"r": {}}, "members": {"ssh:alice": {"roles": ["r"]}}, "mebers": {}}`, `unknown field "mebers"`},
	} {
		_, err := ReadPolicyFile(write("p.json", c.body))
		if c.err == "" {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, c.err)
		}
	}
}

// A baseline is read strictly: every field burn-in must write.
func TestBaselineFormat(t *testing.T) {
	good := `{"format": "seam.baseline/v1", "node": "n1", "serial": "S1", "taken": "2026-11-02T10:00:00Z", "tool": "t", "passed": true, "metrics": {"gpu_count": 4}}`
	b, err := ParseBaseline([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC), b.Taken)
	for _, c := range []struct{ body, err string }{
		{`{"format": "seam.baseline/v2"}`, `format "seam.baseline/v2"`},
		{`{"format": "seam.baseline/v1", "node": "n1", "taken": "2026-11-02T10:00:00Z", "metrics": {"a": 1}}`, "no serial"},
		{`{"format": "seam.baseline/v1", "node": "n1", "serial": "S", "metrics": {"a": 1}}`, "no time taken"},
		{`{"format": "seam.baseline/v1", "node": "n1", "serial": "S", "taken": "2026-11-02T10:00:00Z"}`, "no metrics"},
		{`{"format": "seam.baseline/v1", "nodes": "n1"}`, `unknown field "nodes"`},
	} {
		_, err := ParseBaseline([]byte(c.body))
		assert.ErrorContains(t, err, c.err)
	}
}

var update = flag.Bool("update", false, "rewrite the generated parts of docs/lifecycle.md")

// docs/lifecycle.md's table of transitions is the state machine's, as
// the code has it (go test -run TestTransitionsDoc -update rewrites it).
func TestTransitionsDoc(t *testing.T) {
	const doc = "../../docs/lifecycle.md"
	const begin, end = "<!-- transitions: generated by TestTransitionsDoc (go test ./internal/lifecycle -run TestTransitionsDoc -update) -->\n", "<!-- end of transitions -->\n"
	raw, err := os.ReadFile(doc)
	require.NoError(t, err)
	text := string(raw)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	require.True(t, i >= 0 && j > i, "%s has no generated table between %q and %q", doc, begin, end)
	want := text[:i+len(begin)] + transitionsTable() + text[j:]
	if *update {
		require.NoError(t, os.WriteFile(doc, []byte(want), 0o644))
		return
	}
	assert.Equal(t, want, text, "the table of transitions in %s is not the code's: go test ./internal/lifecycle -run TestTransitionsDoc -update", doc)
}

// transitionsTable renders the allowed moves: one row each, the moves to
// decommissioned in one row when every other state has one.
func transitionsTable() string {
	var b strings.Builder
	b.WriteString("\n| from | to | evidence it needs | what it means | events written |\n| --- | --- | --- | --- | --- |\n")
	var toDecom []State
	for _, tr := range Transitions() {
		if tr.To == Decommissioned {
			toDecom = append(toDecom, tr.From)
			continue
		}
		b.WriteString(row(string(tr.From), tr))
	}
	from := stateList(toDecom)
	if len(toDecom) == len(States)-1 {
		from = "any other state"
	}
	b.WriteString(row(from, Transition{To: Decommissioned, About: "out of the site for good"}))
	b.WriteString("\n")
	return b.String()
}

func row(from string, tr Transition) string {
	needs := "none beyond a reason"
	if len(tr.Needs) > 0 {
		var ns []string
		for _, n := range tr.Needs {
			ns = append(ns, n.Describe())
		}
		needs = strings.Join(ns, "; ")
	}
	events := "one per element that moves"
	if tr.Requires(NeedReplacement) {
		events += "; the slot takes the replacement's serial (prev_serial → serial)"
	}
	if tr.To == Maintenance || tr.To == RMA {
		events += fmt.Sprintf("; a hold %s (owner lifecycle) on each node it is or is in", tr.To)
	}
	if tr.From == Maintenance || tr.From == RMA {
		events += fmt.Sprintf("; the node's %s hold released once nothing of it is %s", tr.From, tr.From)
	}
	if tr.From == "" {
		events += "; from maintenance or rma, that state's hold released"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |\n", from, tr.To, needs, tr.About, events)
}
