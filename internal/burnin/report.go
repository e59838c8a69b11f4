package burnin

import (
	"encoding/csv"
	"encoding/xml"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// WriteCSV writes one line per node: where it sits, its serial, its
// verdict, its measures and its first reason.
func WriteCSV(w io.Writer, res *Result) error {
	cw := csv.NewWriter(w)
	head := []string{"node", "module", "rack", "serial", "sku", "passed", MeasureBusBW, MeasureTemp, MeasurePower, MeasureClock, "reasons"}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, n := range res.Nodes {
		row := []string{n.Name, n.Module, n.Rack, n.Serial, n.SKU, strconv.FormatBool(n.Passed)}
		for _, m := range head[6:10] {
			v, ok := n.Measures[m]
			if !ok {
				row = append(row, "")
				continue
			}
			row = append(row, strconv.FormatFloat(v, 'f', -1, 64))
		}
		row = append(row, strings.Join(n.Reasons(), " | "))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes a test suite per rack, a test case per node.
func WriteJUnit(w io.Writer, res *Result) error {
	var doc junitSuites
	idx := map[string]int{}
	for _, n := range res.Nodes {
		i, ok := idx[n.Rack]
		if !ok {
			i = len(doc.Suites)
			idx[n.Rack] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: "burnin " + n.Module + "/" + n.Rack})
		}
		s := &doc.Suites[i]
		c := junitCase{Name: n.Name, Classname: "burnin." + n.Rack, SystemOut: measuresText(n)}
		if !n.Passed {
			rs := n.Reasons()
			c.Failure = &junitFailure{Message: rs[0], Text: strings.Join(rs, "\n")}
			s.Failures++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func measuresText(n *NodeResult) string {
	keys := make([]string, 0, len(n.Measures))
	for k := range n.Measures {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%g\n", k, n.Measures[k])
	}
	return b.String()
}

// rackView is one rack's section of the HTML report.
type rackView struct {
	Module, Rack string
	Median       float64
	Nodes        []nodeView
	Groups       []*Group
}

type nodeView struct {
	*NodeResult
	BusBW, Temp, Power float64
	BarPct             float64 // busbw as a share of the rack's best, for the bar
	Outlier            bool
}

var htmlTmpl = template.Must(template.New("burnin").Funcs(template.FuncMap{
	"f1": func(v float64) string {
		if math.IsNaN(v) || v == 0 {
			return "–"
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	},
}).Parse(`<section class="burnin">
<h2>Burn-in: {{len .Res.Nodes}} nodes, {{.Held}} held back{{if .Retest}}, {{.Retest}} to re-test{{end}}</h2>
<p>All-reduce bus bandwidth at {{.Size}} bytes, {{.Res.GPUs}} GPUs per node; outliers marked.</p>
{{range .Racks}}<h3>{{.Module}} / {{.Rack}} (median busbw {{f1 .Median}} GB/s)</h3>
<table><tr><th>node</th><th>serial</th><th>busbw GB/s</th><th></th><th>max GPU °C</th><th>GPU power W</th><th>verdict</th></tr>
{{range .Nodes}}<tr{{if .Outlier}} class="outlier"{{end}}><td>{{.Name}}</td><td>{{.Serial}}</td><td>{{f1 .BusBW}}</td>
<td><svg width="120" height="10"><rect width="{{.BarPct}}" height="10" fill="{{if .Outlier}}#c0392b{{else}}#2e86c1{{end}}"/></svg></td>
<td>{{f1 .Temp}}</td><td>{{f1 .Power}}</td><td>{{if .Passed}}pass{{else if eq .Verdict "retest"}}re-test: {{index .Reasons 0}}{{else}}held: {{index .Reasons 0}}{{end}}</td></tr>
{{end}}</table>
{{range .Groups}}<p>{{.Scope}} {{.Name}}: {{f1 .BusBW}} GB/s over {{.Ranks}} ranks{{if .Low}} — low (threshold {{f1 .Threshold}}){{end}}{{if .Problem}} — {{.Problem}}{{end}}</p>
{{end}}{{end}}</section>
`))

// WriteHTML writes the burn-in's report section: per rack, each node's
// busbw as a bar (outliers marked), its hottest GPU and power, its
// verdict; the rack's and module's collectives.
func WriteHTML(w io.Writer, res *Result) error {
	var racks []*rackView
	by := map[string]*rackView{}
	for _, n := range res.Nodes {
		rv := by[n.Rack]
		if rv == nil {
			rv = &rackView{Module: n.Module, Rack: n.Rack}
			by[n.Rack] = rv
			racks = append(racks, rv)
		}
		nv := nodeView{NodeResult: n, BusBW: n.Measures[MeasureBusBW], Temp: n.Measures[MeasureTemp], Power: n.Measures[MeasurePower]}
		for _, f := range n.Flags {
			if f.Measure == MeasureBusBW {
				nv.Outlier = true
			}
		}
		rv.Nodes = append(rv.Nodes, nv)
	}
	for _, rv := range racks {
		var vals []float64
		best := 0.0
		for _, n := range rv.Nodes {
			if n.BusBW > 0 {
				vals = append(vals, n.BusBW)
				best = math.Max(best, n.BusBW)
			}
		}
		rv.Median = median(vals)
		for i := range rv.Nodes {
			if best > 0 {
				rv.Nodes[i].BarPct = 120 * rv.Nodes[i].BusBW / best
			}
		}
		for _, g := range res.Groups {
			if (g.Scope == ScopeRack && g.Name == rv.Rack) || (g.Scope == ScopeModule && g.Name == rv.Module && rv == firstOf(racks, rv.Module)) {
				rv.Groups = append(rv.Groups, g)
			}
		}
	}
	return htmlTmpl.Execute(w, map[string]any{"Res": res, "Racks": racks, "Held": len(res.Held()), "Retest": len(res.Retests()), "Size": res.Size})
}

func firstOf(racks []*rackView, module string) *rackView {
	for _, r := range racks {
		if r.Module == module {
			return r
		}
	}
	return nil
}
