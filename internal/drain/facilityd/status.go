package facilityd

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

func init() {
	register("status", "show a running facilityd's holds, nodes, alarms and refusals", runStatus).
		WithExample("facilityd status --addr http://127.0.0.1:9469")
}

func runStatus(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("[--addr URL] [--ca FILE] [--token-file FILE] [--json]", flag.ContinueOnError)
	var cf clientFlags
	var asJSON bool
	cf.register(fs)
	fs.BoolVar(&asJSON, "json", false, "print /v1/status as it is")
	if _, err := cli.Parse(fs, args); err != nil {
		return program.Fail(stderr, "status", fs, err)
	}
	doc, raw, err := fetchStatus(cf)
	if err != nil {
		return program.Fail(stderr, "status", fs, err)
	}
	if asJSON {
		_, _ = stdout.Write(raw)
		return cli.ExitOK
	}
	printStatus(stdout, doc)
	return cli.ExitOK
}

func fetchStatus(cf clientFlags) (*StatusDoc, []byte, error) {
	url := strings.TrimRight(cf.addr, "/") + "/v1/status"
	resp, err := cf.get("/v1/status", 10*time.Second)
	if err != nil {
		return nil, nil, fmt.Errorf("facilityd at %s: %w", cf.addr, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, nil, fmt.Errorf("%s: %s: give the reader token's file (--token-file)", url, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(raw)))
	}
	var doc StatusDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, errors.Join(fmt.Errorf("%s answered what is not facilityd's status", url), err)
	}
	return &doc, raw, nil
}

func printStatus(w io.Writer, s *StatusDoc) {
	fmt.Fprintf(w, "site %s at %s; alarm path %s", s.Site, s.At.UTC().Format(time.RFC3339), s.AlarmPath)
	if !s.Watchdog.IsZero() {
		fmt.Fprintf(w, " (Watchdog %s ago)", s.At.Sub(s.Watchdog).Round(time.Second))
	}
	if s.DryRun {
		fmt.Fprint(w, "; DRY RUN")
	}
	fmt.Fprintln(w)
	if s.SchedulerUnreachable {
		fmt.Fprintf(w, "SCHEDULER UNREACHABLE: %s; the holds wait in the ledger, their drains are sent when it answers\n", s.SchedulerError)
	}
	fmt.Fprintf(w, "\nholds (%d):\n", len(s.Holds))
	for _, h := range s.Holds {
		fmt.Fprintf(w, "  %s: %d nodes %s (by %s, %s)\n", h.Owner, len(h.Nodes), compressNodes(h.Nodes), h.By, h.Placed.UTC().Format(time.RFC3339))
	}
	var ours, external, overridden []string
	for n, r := range s.Nodes {
		switch {
		case len(r.Overridden) > 0:
			overridden = append(overridden, n)
		case r.External != "":
			external = append(external, n)
		case r.Ours:
			ours = append(ours, n)
		}
	}
	for _, l := range [][]string{ours, external, overridden} {
		slices.Sort(l)
	}
	fmt.Fprintf(w, "\nnodes: %d drained by facilityd %s\n", len(ours), compressNodes(ours))
	if len(external) > 0 {
		fmt.Fprintf(w, "  %d held, drained by someone else (left alone): %s\n", len(external), compressNodes(external))
	}
	if len(overridden) > 0 {
		fmt.Fprintf(w, "  %d held, overridden by an operator (left alone):\n", len(overridden))
		for _, n := range overridden {
			fmt.Fprintf(w, "    %s: %s\n", n, s.Nodes[n].Override)
		}
	}
	for _, r := range s.Refused {
		fmt.Fprintf(w, "\nREFUSED %s (%d nodes %s): %s\n  to drain them: %s\n", r.Owner, len(r.Nodes), compressNodes(r.Nodes), r.Why, drain.ApproveDrainCommand(r.Owner))
	}
	for _, sp := range s.Suppressions {
		fmt.Fprintf(w, "\nsuppressed %s until %s by %s: %s\n", sp.Domain, sp.Until.UTC().Format(time.RFC3339), sp.By, sp.Why)
	}
	fmt.Fprintf(w, "\nalarms:\n")
	for _, a := range s.Alarms {
		if a.Active {
			fmt.Fprintf(w, "  ACTIVE  %-24s %-26s %s\n", a.Type, a.Domain, a.Detail)
			continue
		}
		// a cleared alarm keeps the detail it was raised with: say it was
		fmt.Fprintf(w, "  cleared %-24s %-26s at %s", a.Type, a.Domain, a.Cleared.UTC().Format(time.RFC3339))
		if a.Detail != "" {
			fmt.Fprintf(w, " (was: %s)", a.Detail)
		}
		fmt.Fprintln(w)
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "\nproblem: %s\n", p)
	}
}

// compressNodes writes names as a host list for people: Slurm's
// (hostlist.Compress), with the racks whose nodes are the same folded
// into one bracket ("gpu-b-r[01-16]-n[01-18]" for sixteen racks of
// eighteen nodes, where Slurm's form names each rack). hostlist.Expand
// reads it back.
func compressNodes(names []string) string {
	terms := splitTerms(hostlist.Compress(names))
	type group struct {
		prefix, rest string
		nums         []string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, t := range terms {
		prefix, num, rest, ok := outerNumber(t)
		if !ok {
			groups = append(groups, &group{prefix: t})
			continue
		}
		key := prefix + "\x00" + rest + "\x00" + fmt.Sprint(len(num))
		g := byKey[key]
		if g == nil {
			g = &group{prefix: prefix, rest: rest}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.nums = append(g.nums, num)
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		switch len(g.nums) {
		case 0:
			out = append(out, g.prefix)
		case 1:
			out = append(out, g.prefix+g.nums[0]+g.rest)
		default:
			out = append(out, g.prefix+"["+numRanges(g.nums)+"]"+g.rest)
		}
	}
	return strings.Join(out, ",")
}

// splitTerms splits a host list at the commas outside brackets.
func splitTerms(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// outerNumber splits a term such as "gpu-b-r01-n[01-18]" or
// "gpu-b-r01-n05" at the number before its last: "gpu-b-r", "01",
// "-n[01-18]". ok is false where it has no such number.
func outerNumber(t string) (prefix, num, rest string, ok bool) {
	head, tail := t, ""
	if i := strings.IndexByte(t, '['); i >= 0 {
		head, tail = t[:i], t[i:]
	}
	j := len(head)
	if tail == "" { // the node's own number ends the name
		for j > 0 && isDigit(head[j-1]) {
			j--
		}
	}
	k := j
	for k > 0 && !isDigit(head[k-1]) {
		k--
	}
	e := k
	for k > 0 && isDigit(head[k-1]) {
		k--
	}
	if k == e || e == j {
		return "", "", "", false
	}
	return head[:k], head[k:e], head[e:] + tail, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numRanges writes sorted, equally wide numbers as ranges: "01-16",
// "01-03,05".
func numRanges(nums []string) string {
	var b strings.Builder
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && atoi(nums[j+1]) == atoi(nums[j])+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(nums[i])
		if j > i {
			b.WriteString("-" + nums[j])
		}
		i = j + 1
	}
	return b.String()
}

func atoi(s string) int {
	n := 0
	for _, c := range []byte(s) {
		n = n*10 + int(c-'0')
	}
	return n
}
