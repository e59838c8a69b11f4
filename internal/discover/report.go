package discover

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is a discovery: what was walked, what differs, what failed.
type Report struct {
	Site     string    `json:"site"`
	BMCs     int       `json:"bmcs"`     // walked
	Answered int       `json:"answered"` // walked without an error
	Declared int       `json:"declared_trays"`
	Found    int       `json:"found_trays"`
	CDUs     int       `json:"cdus"`
	Requests int       `json:"requests"`
	Waits    int       `json:"retry_after_waits"`
	Seconds  float64   `json:"seconds"`
	Findings []Finding `json:"findings"`
	Errors   []*Error  `json:"errors"`
	Trays    []*Tray   `json:"-"`
}

// Run walks targets and compares what they report with d.
func Run(ctx context.Context, site string, d *Declared, targets []Target, opt Options) *Report {
	start := time.Now()
	found := Walk(ctx, targets, opt)
	r := &Report{Site: site, BMCs: len(targets), Declared: d.Trays(), Findings: []Finding{}, Errors: []*Error{}}
	expect := map[string]string{}
	for _, t := range targets {
		expect[t.Name] = t.Expect
	}
	for _, f := range found {
		if len(f.Errors) == 0 {
			r.Answered++
		}
		r.Found += len(f.Trays)
		r.CDUs += len(f.CDUs)
		r.Requests += f.Requests
		r.Waits += f.Waits
		r.Errors = append(r.Errors, f.Errors...)
		r.Trays = append(r.Trays, f.Trays...)
	}
	sort.SliceStable(r.Errors, func(i, j int) bool { return r.Errors[i].BMC < r.Errors[j].BMC })
	r.Findings = append(r.Findings, d.Compare(found, expect)...)
	r.Seconds = time.Since(start).Seconds()
	return r
}

// Clean reports whether the BMCs answered and match the inventory.
func (r *Report) Clean() bool { return len(r.Findings) == 0 && len(r.Errors) == 0 }

// Counts are the findings by kind.
func (r *Report) Counts() map[string]int {
	out := map[string]int{}
	for _, f := range r.Findings {
		out[f.Kind]++
	}
	return out
}

// WriteText writes the report for people: a summary, the findings, the
// errors.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "discovered %s: %d BMCs walked (%d answered, %d requests, %d Retry-After waits) in %.1f s; %d trays found, %d declared, %d CDUs\n",
		r.Site, r.BMCs, r.Answered, r.Requests, r.Waits, r.Seconds, r.Found, r.Declared, r.CDUs)
	if r.Clean() {
		fmt.Fprintln(w, "the BMCs match the inventory")
		return
	}
	if len(r.Findings) > 0 {
		fmt.Fprintf(w, "\n%d difference(s) from the inventory:\n", len(r.Findings))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range r.Findings {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Kind, f.Element, f.Message)
		}
		tw.Flush()
	}
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "\n%d BMC error(s):\n", len(r.Errors))
		for _, e := range r.Errors {
			fmt.Fprintf(w, "  %s\n", e.Error())
		}
	}
	var kinds []string
	for k, n := range r.Counts() {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	if len(kinds) > 0 {
		fmt.Fprintf(w, "\n%s\n", strings.Join(kinds, ", "))
	}
}

// WriteJSON writes the report as JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
