package lifecyclecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

func init() {
	register("show", "the state of anything: a key, a node's name, a serial (--as-of a time)", runShow).
		WithExample("sat lifecycle show gpu-a-r01-n03 --as-of 2026-12-01T00:00:00Z")
	register("list", "elements by state, kind or place (--as-of a time)", runList).
		WithExample("sat lifecycle list --under ma/r01 --kind compute")
	register("move", "move an element (and what it contains) to another state, on its evidence", runMove).
		WithExample("sat lifecycle move ma installed --reason 'on site, hall 2' --key integrator")
	register("history", "an element's events, a serial's wherever it went (--serial), a slot's serials (--slot)", runHistory).
		WithExample("sat lifecycle history SN-GPU-0000010 --serial")
	register("hold", "set, release or list the holds that keep nodes out of the pool", runHold).
		WithExample("sat lifecycle hold set gpu-a-r01-n03 --kind person --reason 'GPU 2 throws XID 79' --key operator")
	register("offer", "which transition a SAT bundle (--evidence) or a baseline (--baseline) allows", runOffer).
		WithExample("sat lifecycle offer --baseline n03.baseline.json")
}

func runShow(args []string, stdout, stderr io.Writer) int {
	c := newCommon("THING [--as-of TIME] [--format text|json]").withFormat()
	var asOf string
	c.fs.StringVar(&asOf, "as-of", "", "as it was at this time (2026-11-01T00:00Z)")
	pos, err := c.parse(args, 1, "one element, node name or serial")
	if err != nil {
		return fail(stderr, "show", c, err)
	}
	at, err := parseTime(asOf)
	if err != nil {
		return fail(stderr, "show", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "show", c, err)
	}
	defer s.Close()
	el, err := s.Show(ctx, pos[0], at)
	if err != nil {
		return fail(stderr, "show", c, err)
	}
	emit(stdout, c.format, el, func(w io.Writer) { showText(w, el, at) })
	return cli.ExitOK
}

func showText(w io.Writer, el *lifecycle.Element, at time.Time) {
	head := el.Key + " (" + el.Kind
	if el.Module != "" && el.Module != el.Key {
		head += ", module " + el.Module
	}
	if el.Slot > 0 {
		head += fmt.Sprintf(", slot %d", el.Slot)
	}
	head += ")"
	if !at.IsZero() {
		head += " as of " + stamp(at)
	}
	fmt.Fprintln(w, head)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := fmt.Sprintf("%s since %s", el.State, stamp(el.Since))
	if el.By != "" {
		line += ", by " + el.By
	}
	if el.Reason != "" {
		line += ": " + oneLine(el.Reason)
	}
	fmt.Fprintf(tw, "  state\t%s\n", line)
	fmt.Fprintf(tw, "  serial\t%s\n", orDash(el.Serial))
	if len(el.Names) > 0 {
		var ns []string
		for _, sys := range []string{"slurm", "kubernetes", "bmc"} {
			if n, ok := el.Names[sys]; ok {
				ns = append(ns, sys+" "+n)
			}
		}
		fmt.Fprintf(tw, "  names\t%s\n", strings.Join(ns, ", "))
	}
	for _, e := range el.Evidence {
		fmt.Fprintf(tw, "  evidence\t%s\n", evidenceText(e))
	}
	if el.Kind == "compute" {
		if len(el.Holds) == 0 {
			fmt.Fprintf(tw, "  holds\tnone: in the pool\n")
		}
		for _, h := range el.Holds {
			fmt.Fprintf(tw, "  hold\t%s (by %s) since %s: %s\n", h.Owner, h.By, stamp(h.Since), oneLine(h.Reason))
		}
	}
	tw.Flush()
}

func evidenceText(e lifecycle.Evidence) string {
	switch e.Kind {
	case lifecycle.NeedSAT:
		return fmt.Sprintf("SAT %s of %s: %d case(s) passed, manifest %s, signed by %s", e.Ref, orDash(e.Module), e.Cases, short(e.Digest), e.SignedBy)
	case lifecycle.NeedBaseline:
		return fmt.Sprintf("baseline %s of %s (serial %s, taken %s), %s", e.Ref, e.Node, e.Serial, e.Taken, short(e.Digest))
	case lifecycle.NeedReplacement:
		return fmt.Sprintf("replacement %s fitted in place of %s", e.Serial, orDash(e.Removed))
	}
	return string(e.Kind)
}

func short(d string) string {
	if len(d) > 19 {
		return d[:19] + "…"
	}
	return d
}

func runList(args []string, stdout, stderr io.Writer) int {
	c := newCommon("[--state S] [--kind K] [--under KEY] [--as-of TIME] [--format text|json]").withFormat()
	var state, kind, under, asOf string
	c.fs.StringVar(&state, "state", "", "only elements in this state")
	c.fs.StringVar(&kind, "kind", "", "only elements of this kind (module, rack, compute, gpu, psu, …)")
	c.fs.StringVar(&under, "under", "", "only this element and what it contains")
	c.fs.StringVar(&asOf, "as-of", "", "as it was at this time (2026-11-01T00:00Z)")
	if _, err := c.parse(args, 0, "no arguments"); err != nil {
		return fail(stderr, "list", c, err)
	}
	f := lifecycle.Filter{Kind: kind, Under: under}
	var err error
	if state != "" {
		if f.State, err = lifecycle.ParseState(state); err != nil {
			return fail(stderr, "list", c, cli.Usagef("--state: %v", err))
		}
	}
	if f.AsOf, err = parseTime(asOf); err != nil {
		return fail(stderr, "list", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "list", c, err)
	}
	defer s.Close()
	els, err := s.List(ctx, f)
	if err != nil {
		return fail(stderr, "list", c, err)
	}
	type row struct {
		Key    string          `json:"key"`
		Kind   string          `json:"kind"`
		State  lifecycle.State `json:"state"`
		Since  time.Time       `json:"since"`
		Serial string          `json:"serial,omitempty"`
	}
	rows := make([]row, len(els))
	for i, e := range els {
		rows[i] = row{e.Key, e.Kind, e.State, e.Since, e.Serial}
	}
	emit(stdout, c.format, rows, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "KEY\tKIND\tSTATE\tSINCE\tSERIAL")
		for _, r := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Key, r.Kind, r.State, stamp(r.Since), orDash(r.Serial))
		}
		tw.Flush()
		counts := map[lifecycle.State]int{}
		for _, r := range rows {
			counts[r.State]++
		}
		var parts []string
		for _, st := range lifecycle.States {
			if n := counts[st]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, st))
			}
		}
		fmt.Fprintf(w, "%d element(s): %s\n", len(rows), strings.Join(parts, ", "))
	})
	return cli.ExitOK
}

const moveHelp = `Moves THING (a key, a node's name, a serial) to STATE, and with it
everything it contains that is in the same state (--only: it alone).
Each move is signed (--key) or made as the database role (--db-role),
and recorded with its reason and evidence:

  installed → commissioned   --evidence DIR: the SAT bundle of its module,
                             signed by a trusted key, every case passed
  commissioned → provisioned --baseline FILE per node that moves
  → rma                      --replacement SERIAL: the part fitted in its place

The allowed moves: design → built → integrated → shipped → installed →
commissioned → provisioned → operating ⇄ maintenance; operating,
maintenance, provisioned or commissioned → rma → commissioned; anything
→ decommissioned.`

type baselines []string

func (b *baselines) String() string     { return strings.Join(*b, ",") }
func (b *baselines) Set(v string) error { *b = append(*b, v); return nil }

func runMove(args []string, stdout, stderr io.Writer) int {
	c := newCommon("THING STATE --reason TEXT (--key KEY | --db-role) [--evidence DIR] [--baseline FILE]... [--replacement SERIAL] [--only] [--scheduler slurm|kubernetes] [--dry-run]").withAuth().withScheduler().withFormat()
	var m lifecycle.Move
	var bs baselines
	c.fs.StringVar(&m.Reason, "reason", "", "why (recorded and signed)")
	c.fs.StringVar(&m.SAT, "evidence", "", "the SAT evidence bundle (installed → commissioned)")
	c.fs.Var(&bs, "baseline", "a node's burn-in baseline (commissioned → provisioned); once per node")
	c.fs.StringVar(&m.Replacement, "replacement", "", "the serial of the part fitted in place of the one sent back (→ rma)")
	c.fs.BoolVar(&m.Only, "only", false, "move the element alone, not what it contains")
	pos, err := c.parse(args, 2, "an element and a state")
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, moveHelp)
		}
		return fail(stderr, "move", c, err)
	}
	m.Element, m.Baselines = pos[0], bs
	if m.To, err = lifecycle.ParseState(pos[1]); err != nil {
		return fail(stderr, "move", c, cli.Usagef("%v", err))
	}
	c.dry(stdout)
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "move", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "move", c, err)
	}
	defer s.Close()
	mv, err := s.Transition(ctx, a, m)
	if err != nil {
		return fail(stderr, "move", c, err)
	}
	emit(stdout, c.format, mv, func(w io.Writer) {
		with := ""
		if mv.Count > 1 {
			with = fmt.Sprintf(" with %d element(s) it contains", mv.Count-1)
		}
		verb := ""
		if s.DryRun() {
			verb = "would move "
		}
		fmt.Fprintf(w, "%s%s: %s → %s%s, by %s at %s (event %d)\n", verb, mv.Element, mv.From, mv.To, with, mv.By, stamp(mv.At), mv.Seq)
		for _, e := range mv.Evidence {
			fmt.Fprintf(w, "  evidence: %s\n", evidenceText(e))
		}
	})
	if !s.DryRun() {
		if err := c.applyHolds(ctx, s, a, mv.Nodes, stdout); err != nil {
			return fail(stderr, "move", c, fmt.Errorf("moved, but the scheduler was not brought in line with the holds (facilityd's reconcile retries): %w", err))
		}
	}
	return cli.ExitOK
}

func runHistory(args []string, stdout, stderr io.Writer) int {
	c := newCommon("THING [--serial | --slot] [--as-of TIME] [--format text|json]").withFormat()
	var serial, slot bool
	var asOf string
	c.fs.BoolVar(&serial, "serial", false, "THING is a serial: its history wherever it went")
	c.fs.BoolVar(&slot, "slot", false, "the serials THING's slot held")
	c.fs.StringVar(&asOf, "as-of", "", "the history up to this time")
	pos, err := c.parse(args, 1, "one element, node name or serial")
	if err == nil && serial && slot {
		err = cli.Usagef("--serial or --slot, not both")
	}
	if err != nil {
		return fail(stderr, "history", c, err)
	}
	at, err := parseTime(asOf)
	if err != nil {
		return fail(stderr, "history", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "history", c, err)
	}
	defer s.Close()
	if slot {
		key, ts, err := s.SlotHistory(ctx, pos[0])
		if err != nil {
			return fail(stderr, "history", c, err)
		}
		emit(stdout, c.format, ts, func(w io.Writer) {
			fmt.Fprintf(w, "the serials %s held:\n", key)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SERIAL\tFROM\tTO\tREMOVED")
			for _, t := range ts {
				to, why := "now", "-"
				if !t.To.IsZero() {
					to, why = stamp(t.To), oneLine(t.Removed)+" ("+t.RemovedBy+")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", t.Serial, stamp(t.From), to, why)
			}
			tw.Flush()
		})
		return cli.ExitOK
	}
	var evs []*lifecycle.Event
	title := ""
	if serial {
		evs, err = s.SerialHistory(ctx, pos[0], at)
		title = "serial " + pos[0] + ", wherever it went:"
	} else {
		var key string
		key, evs, err = s.History(ctx, pos[0], at)
		title = key + ":"
	}
	if err != nil {
		return fail(stderr, "history", c, err)
	}
	emit(stdout, c.format, evs, func(w io.Writer) { historyText(w, title, evs, serial) })
	return cli.ExitOK
}

func historyText(w io.Writer, title string, evs []*lifecycle.Event, withElement bool) {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "SEQ\tAT\tEVENT\tSTATE\tSERIAL\tBY\tREASON"
	if withElement {
		head = "SEQ\tAT\tELEMENT\tEVENT\tSTATE\tSERIAL\tBY\tREASON"
	}
	fmt.Fprintln(tw, head)
	for _, e := range evs {
		state := string(e.State)
		if e.Kind == lifecycle.EvTransition {
			state = string(e.PrevState) + " → " + string(e.State)
		}
		ser := orDash(e.Serial)
		if e.PrevSerial != e.Serial {
			ser = orDash(e.PrevSerial) + " → " + orDash(e.Serial)
		}
		by := e.Actor
		if e.Signed {
			by += " (signed)"
		}
		reason := oneLine(e.Reason)
		if h, ok := e.Hold(); ok {
			reason = string(h.Owner) + ": " + reason
		}
		if len(e.Evidence) > 0 {
			kinds := map[string]bool{}
			for _, ev := range e.Evidence {
				kinds[string(ev.Kind)] = true
			}
			var ks []string
			for k := range kinds {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			reason += " [evidence: " + strings.Join(ks, ", ") + "]"
		}
		if withElement {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, stamp(e.At), e.Element, e.Kind, state, ser, by, reason)
		} else {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Seq, stamp(e.At), e.Kind, state, ser, by, reason)
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%d event(s)\n", len(evs))
}

const holdHelp = `The holds that keep nodes out of the pool are the site's one ledger
(docs/lifecycle.md#holds): each is an owner's, KIND:NAME with KIND one
of facility, burnin, maintenance, rma, firmware, person; a node is in
the pool only while nothing holds it. set and release change the
ledger and, with --scheduler, bring the nodes' scheduler state in line
in the same call (drained while held, returned only when no owner
holds it and seam drained it); without it facilityd's reconcile does.

  sat lifecycle hold set NODES --owner KIND:NAME --reason TEXT
  sat lifecycle hold release NODES --owner KIND:NAME [--reason TEXT]
  sat lifecycle hold list [NODE]

NODES is a node's key or name, or a Slurm host list (gpu-a-r01-n[01-04]).
--kind K is short for --owner K:YOUR-PRINCIPAL.`

func runHold(args []string, stdout, stderr io.Writer) int {
	c := newCommon("set NODES --owner KIND:NAME --reason TEXT | release NODES --owner KIND:NAME | list [NODE]").withAuth().withScheduler().withFormat()
	var kind, reason, owner string
	c.fs.StringVar(&owner, "owner", "", "the hold's owner, KIND:NAME (maintenance:CHG-1234, person:alice)")
	c.fs.StringVar(&kind, "kind", "", "short for --owner KIND:YOUR-PRINCIPAL; the kinds: "+strings.Join(hold.Kinds, ", "))
	c.fs.StringVar(&reason, "reason", "", "why")
	pos, err := c.parse(args, -1, "")
	if err == nil {
		switch {
		case len(pos) == 0:
			err = cli.Usagef("want set, release or list")
		case pos[0] == "list" && len(pos) <= 2:
		case (pos[0] == "set" || pos[0] == "release") && len(pos) == 2:
			if (owner == "") == (kind == "") {
				err = cli.Usagef("give the hold's owner: --owner KIND:NAME (or --kind KIND, for KIND:YOUR-PRINCIPAL)")
			}
		default:
			err = cli.Usagef("want set NODES, release NODES or list [NODE]")
		}
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, holdHelp)
		}
		return fail(stderr, "hold", c, err)
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	defer s.Close()
	if pos[0] == "list" {
		return holdList(ctx, c, s, pos, stdout, stderr)
	}
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	o, err := holdOwner(ctx, s, a, owner, kind)
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	nodes, err := hostlist.Expand(pos[1])
	if err != nil {
		return fail(stderr, "hold", c, cli.Usagef("%s: %v", pos[1], err))
	}
	l, err := c.ledger(ctx, s, a)
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	by, err := s.Actor(ctx, a)
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	var res ledger.Result
	if pos[0] == "set" {
		if strings.TrimSpace(reason) == "" {
			return fail(stderr, "hold", c, cli.Usagef("--reason: why the nodes are held"))
		}
		res, err = l.Place(ctx, hold.Hold{Owner: o, Nodes: nodes, Why: reason, By: by})
	} else {
		res, err = l.Release(ctx, o, nodes, by, reason)
	}
	if err != nil && len(res.Changed) == 0 {
		return fail(stderr, "hold", c, err)
	}
	emit(stdout, c.format, res, func(w io.Writer) {
		verb := map[string]string{"set": "held", "release": "released"}[pos[0]]
		if l.DryRun {
			verb = "would have " + verb
		}
		fmt.Fprintf(w, "%s %s on %d node(s)\n", o, verb, len(res.Changed))
		printApplied(w, res, l.DryRun)
		for _, n := range slices.Sorted(maps.Keys(res.Kept)) {
			fmt.Fprintf(w, "%s still held by %s\n", n, hold.Join(res.Kept[n]))
		}
		if l.Sched == nil {
			fmt.Fprintln(w, "no --scheduler: facilityd's reconcile brings the scheduler in line")
		}
	})
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	return cli.ExitOK
}

// holdOwner is --owner, or --kind with the principal that signs.
func holdOwner(ctx context.Context, s *lifecycle.Store, a lifecycle.Auth, owner, kind string) (hold.Owner, error) {
	if owner != "" {
		return hold.Parse(owner)
	}
	who, err := s.Actor(ctx, a)
	if err != nil {
		return "", err
	}
	_, name, _ := strings.Cut(who, ":") // ssh:alice → alice
	return hold.Parse(kind + ":" + name)
}

func holdList(ctx context.Context, c *common, s *lifecycle.Store, pos []string, stdout, stderr io.Writer) int {
	node := ""
	if len(pos) == 2 {
		node = pos[1]
	}
	hs, err := s.Holds(ctx, node)
	if err != nil {
		return fail(stderr, "hold", c, err)
	}
	emit(stdout, c.format, hs, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tOWNER\tBY\tSINCE\tREASON")
		for _, h := range hs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Node, h.Owner, h.By, stamp(h.Since), oneLine(h.Reason))
		}
		tw.Flush()
		fmt.Fprintf(w, "%d hold(s)\n", len(hs))
	})
	return cli.ExitOK
}

func runOffer(args []string, stdout, stderr io.Writer) int {
	c := newCommon("(--evidence DIR | --baseline FILE) [--format text|json]").withFormat()
	var dir, file string
	c.fs.StringVar(&dir, "evidence", "", "a SAT evidence bundle")
	c.fs.StringVar(&file, "baseline", "", "a node's burn-in baseline")
	_, err := c.parse(args, 0, "no arguments")
	if err == nil && (dir == "") == (file == "") {
		err = cli.Usagef("give --evidence DIR or --baseline FILE")
	}
	if err != nil {
		return fail(stderr, "offer", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "offer", c, err)
	}
	defer s.Close()
	var o lifecycle.Offer
	if dir != "" {
		o, err = s.OfferSAT(ctx, dir)
	} else {
		o, err = s.OfferBaseline(ctx, file)
	}
	if err != nil {
		return fail(stderr, "offer", c, err)
	}
	emit(stdout, c.format, o, func(w io.Writer) { fmt.Fprintln(w, OfferText(o)) })
	return cli.ExitOK
}

// OfferText is how sat run and sat burnin say what their evidence
// allows.
func OfferText(o lifecycle.Offer) string {
	if !o.Ready {
		return fmt.Sprintf("lifecycle: %s cannot move %s → %s on this evidence: %s", o.Element, o.From, o.To, o.Why)
	}
	return fmt.Sprintf("lifecycle: this evidence moves %s from %s to %s: %s (add your --key)", o.Element, o.From, o.To, o.Command)
}
