package redfish

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Problem is something wrong with a tree, or (as a note) something odd
// that the import worked around: where, and what.
type Problem struct {
	// URI is the resource's; File where it was read (path[:line:col], or
	// a URL), when that says more than the URI.
	URI  string `json:"uri"`
	File string `json:"file,omitempty"`
	At   string `json:"at,omitempty"` // the JSON pointer of the property
	Msg  string `json:"message"`
}

func (p Problem) String() string {
	where := p.URI
	if p.File != "" && p.File != p.URI {
		where = p.File + " (" + p.URI + ")"
	}
	if p.At != "" {
		where += " " + p.At
	}
	return where + ": " + p.Msg
}

// Report is what an import read: resources by Redfish type, the
// elements and relations it made of them, what it did not map, and the
// problems.
type Report struct {
	Source    string         `json:"source"`
	Resources int            `json:"resources"`
	Types     map[string]int `json:"types"`     // resources read, by Redfish type (embedded ones included)
	Kinds     map[string]int `json:"kinds"`     // elements made, by kind
	Relations map[string]int `json:"relations"` // edges made, by relation
	Ignored   map[string]int `json:"ignored"`   // resources of types that are no element, by type
	Problems  []Problem      `json:"problems"`  // the tree is wrong here
	Notes     []Problem      `json:"notes"`     // odd, and worked around
}

func newReport() *Report {
	return &Report{Types: map[string]int{}, Kinds: map[string]int{}, Relations: map[string]int{}, Ignored: map[string]int{},
		Problems: []Problem{}, Notes: []Problem{}}
}

// OK reports whether the import found no problems.
func (r *Report) OK() bool { return len(r.Problems) == 0 }

// Formats are the renderings of a report.
var Formats = []string{"text", "json"}

// Write renders the report as text or JSON.
func (r *Report) Write(w io.Writer, format string) error {
	switch format {
	case "json":
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case "text", "":
		r.text(w)
		return nil
	}
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, " or "))
}

func (r *Report) text(w io.Writer) {
	fmt.Fprintf(w, "%s: %d resources\n", r.Source, r.Resources)
	read, structure := map[string]int{}, 0
	for t, n := range r.Types {
		if structural(t) {
			structure += n
		} else if n -= r.Ignored[t]; n > 0 {
			read[t] = n
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	table := func(title string, m map[string]int) {
		if len(m) == 0 {
			return
		}
		fmt.Fprintf(tw, "\n%s\n", title)
		for _, k := range sortedKeys(m) {
			fmt.Fprintf(tw, "  %s\t%d\n", k, m[k])
		}
	}
	table(fmt.Sprintf("read (Redfish type; besides %d collections and other structure):", structure), read)
	table("elements (kind):", r.Kinds)
	table("relations:", r.Relations)
	tw.Flush()
	if len(r.Ignored) > 0 {
		var parts []string
		total := 0
		for _, k := range sortedKeys(r.Ignored) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Ignored[k]))
			total += r.Ignored[k]
		}
		fmt.Fprintf(w, "\nnot mapped (%d resources of types seam has no kind for): %s\n", total, strings.Join(parts, ", "))
	}
	list := func(title string, ps []Problem) {
		if len(ps) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s (%d):\n", title, len(ps))
		for _, p := range ps {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	list("notes", r.Notes)
	list("problems", r.Problems)
	fmt.Fprintf(w, "\n%d problem(s), %d note(s)\n", len(r.Problems), len(r.Notes))
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
