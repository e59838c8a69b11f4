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
		fmt.Fprintf(w, "  %s: %d nodes %s (by %s, %s)\n", h.Owner, len(h.Nodes), hostlist.Fold(h.Nodes), h.By, h.Placed.UTC().Format(time.RFC3339))
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
	fmt.Fprintf(w, "\nnodes: %d drained by facilityd %s\n", len(ours), hostlist.Fold(ours))
	if len(external) > 0 {
		fmt.Fprintf(w, "  %d held, drained by someone else (left alone): %s\n", len(external), hostlist.Fold(external))
	}
	if len(overridden) > 0 {
		fmt.Fprintf(w, "  %d held, overridden by an operator (left alone):\n", len(overridden))
		for _, n := range overridden {
			fmt.Fprintf(w, "    %s: %s\n", n, s.Nodes[n].Override)
		}
	}
	for _, r := range s.Refused {
		fmt.Fprintf(w, "\nREFUSED %s (%d nodes %s): %s\n  to drain them: %s\n", r.Owner, len(r.Nodes), hostlist.Fold(r.Nodes), r.Why, drain.ApproveDrainCommand(r.Owner))
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
