// Package maintenance turns a site's planned maintenance windows into
// what the scheduler and the operators need: for each window, what its
// target stops (the inventory's blast radius), a Slurm maintenance
// reservation of those nodes (flags=maint, so backfill still starts jobs
// that end before the window, and holds those that would not), and a
// drain-ahead plan: reserve now, deal with the jobs already running
// into the window, land new work in the failure domains that keep
// running, hand the nodes back when it ends. Build is pure; Apply
// creates the reservations in a live Slurm and reads them back.
package maintenance

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Window is a planned maintenance window.
type Window struct {
	ID          string
	Target      string // a module or an element key: "l2", "l2/loop/cdu-1"
	Description string
	Start       time.Time
	Duration    time.Duration
	// DrainAhead is how long before Start the nodes take no work that
	// runs into the window: the reservation starts that much earlier.
	DrainAhead time.Duration
	Where      string // file:line, for messages
}

// Plan is what a site's windows need, window by window.
type Plan struct {
	Site    string       `json:"site"`
	Windows []WindowPlan `json:"windows"`
}

// WindowPlan is one window: what stops, the reservation, the steps.
type WindowPlan struct {
	ID          string    `json:"id"`
	Target      string    `json:"target"`
	TargetKind  string    `json:"target_kind"`
	Description string    `json:"description,omitempty"`
	Where       string    `json:"where,omitempty"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`
	// Stops is what the target's loss stops; nothing when it only
	// degrades (a feed of a 2N block, one CDU of an N+1 loop).
	Stops    Stops            `json:"stops"`
	Degraded []inventory.Item `json:"degraded"`
	// Reservation holds the stopped nodes; nil when nothing stops.
	Reservation *Reservation `json:"reservation"`
	// Running is the compute of each failure domain while the window
	// (and any window overlapping it) is on: where new work lands.
	Running  []Capacity `json:"running"`
	Overlaps []string   `json:"overlaps"` // windows at the same time
	Steps    []string   `json:"steps"`
}

// Stops is what a window stops.
type Stops struct {
	Nodes   []string `json:"nodes"` // Slurm names, sorted
	GPUs    int      `json:"gpus"`
	Racks   []string `json:"racks"`
	Modules []string `json:"modules"`
	// Domains are the failure domains with stopped nodes.
	Domains []string         `json:"failure_domains"`
	Causes  []inventory.Item `json:"causes"`
}

// Capacity is a failure domain's compute that keeps running.
type Capacity struct {
	Domain string `json:"failure_domain"`
	Nodes  int    `json:"nodes"`
	GPUs   int    `json:"gpus"`
	// Of is the domain's nodes in all; Nodes < Of when a window takes
	// part of it.
	Of int `json:"of"`
}

// Reservation is a Slurm maintenance reservation.
type Reservation struct {
	Name  string    `json:"name"`
	Start time.Time `json:"start"`
	// Duration is whole minutes, as Slurm keeps it.
	Duration time.Duration `json:"-"`
	Minutes  int           `json:"duration_min"`
	Nodes    []string      `json:"nodes"` // sorted
	Hostlist string        `json:"hostlist"`
	Flags    []string      `json:"flags"`
	Users    string        `json:"users"`
}

// End is when the reservation ends.
func (r *Reservation) End() time.Time { return r.Start.Add(r.Duration) }

// Prefix starts every reservation seam makes: seam-<window id>.
const Prefix = "seam-"

// Flags are a maintenance reservation's: MAINT (Slurm reports the nodes
// as in maintenance, and backfill plans around the window) and
// IGNORE_JOBS (it may be made while jobs run on the nodes; Apply lists
// those that run into it).
var Flags = []string{"MAINT", "IGNORE_JOBS"}

// Build plans each window on the graph, in window order by start (then
// id). A target the graph does not have is an error naming the window.
func Build(g *inventory.Graph, windows []Window) (Plan, error) {
	p := Plan{Site: g.Site.Name, Windows: []WindowPlan{}}
	var errs []error
	for _, w := range windows {
		wp, err := window(g, w)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p.Windows = append(p.Windows, wp)
	}
	if err := errors.Join(errs...); err != nil {
		return Plan{}, err
	}
	slices.SortStableFunc(p.Windows, func(a, b WindowPlan) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	domains := domainNodes(g)
	for i := range p.Windows {
		p.Windows[i].overlap(p.Windows, i)
		p.Windows[i].running(p.Windows, i, domains)
		p.Windows[i].steps()
	}
	return p, nil
}

func window(g *inventory.Graph, w Window) (WindowPlan, error) {
	switch {
	case w.ID == "":
		return WindowPlan{}, fmt.Errorf("%sa window without an id", where(w.Where))
	case w.Start.IsZero():
		return WindowPlan{}, fmt.Errorf("%swindow %s has no start: give an RFC 3339 time", where(w.Where), w.ID)
	case w.Duration <= 0:
		return WindowPlan{}, fmt.Errorf("%swindow %s lasts %s: give the time the work takes", where(w.Where), w.ID, w.Duration)
	case w.DrainAhead < 0:
		return WindowPlan{}, fmt.Errorf("%swindow %s drains %s ahead: give 0 or more", where(w.Where), w.ID, w.DrainAhead)
	}
	if ids := g.FindAll(w.Target); len(ids) > 1 {
		return WindowPlan{}, fmt.Errorf("%swindow %s: %w", where(w.Where), w.ID, g.Ambiguous(w.Target, ids))
	}
	id, ok := g.Find(w.Target)
	if !ok {
		return WindowPlan{}, fmt.Errorf("%swindow %s: no module or element %q in site %s: name a module (\"l2\") or an element by its key (\"l2/loop/cdu-1\")",
			where(w.Where), w.ID, w.Target, g.Site.Name)
	}
	imp := inventory.Blast(g, id)
	wp := WindowPlan{ID: w.ID, Target: g.El(id).Key, TargetKind: g.El(id).Kind.String(), Description: w.Description, Where: w.Where,
		Start: w.Start, End: w.Start.Add(w.Duration), Degraded: orEmpty(imp.Degraded), Overlaps: []string{}}
	wp.Stops = Stops{Nodes: []string{}, GPUs: imp.GPUs, Racks: orEmpty(imp.Racks), Modules: orEmpty(imp.Modules), Domains: []string{}, Causes: orEmpty(imp.Causes)}
	fds := map[string]bool{}
	for _, n := range imp.Nodes {
		wp.Stops.Nodes = append(wp.Stops.Nodes, cmp.Or(n.Slurm, strings.ReplaceAll(n.Key, "/", "-")))
		if nid, ok := g.Lookup(n.Key); ok {
			fds[failureDomain(g, nid)] = true
		}
	}
	slices.Sort(wp.Stops.Nodes)
	for fd := range fds {
		wp.Stops.Domains = append(wp.Stops.Domains, fd)
	}
	slices.Sort(wp.Stops.Domains)
	if len(wp.Stops.Nodes) > 0 {
		start := w.Start.Add(-w.DrainAhead)
		minutes := int((w.DrainAhead + w.Duration + time.Minute - 1) / time.Minute)
		wp.Reservation = &Reservation{Name: Prefix + w.ID, Start: start, Duration: time.Duration(minutes) * time.Minute, Minutes: minutes,
			Nodes: wp.Stops.Nodes, Hostlist: hostlist.Compress(wp.Stops.Nodes), Flags: Flags, Users: "root"}
	}
	return wp, nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func where(w string) string {
	if w == "" {
		return ""
	}
	return w + ": "
}

// failureDomain is the failure domain of a node's module (the module's
// key when it has none).
func failureDomain(g *inventory.Graph, n inventory.ID) string {
	mid := g.Ancestor(n, inventory.KindModule)
	if mid == inventory.None {
		return "none"
	}
	key := g.El(mid).Key
	if m := g.Site.Module(key); m != nil && m.FailureDomain != "" {
		return m.FailureDomain
	}
	return key
}

// domainNode is a node's name, GPUs and failure domain.
type domainNode struct {
	name string
	gpus int
}

// domainNodes are the nodes of each failure domain, domains sorted.
func domainNodes(g *inventory.Graph) map[string][]domainNode {
	out := map[string][]domainNode{}
	for _, n := range g.OfKind(inventory.KindCompute) {
		e := g.El(n)
		name := strings.ReplaceAll(e.Key, "/", "-")
		if e.Names != nil && e.Names.Slurm != "" {
			name = e.Names.Slurm
		}
		fd := failureDomain(g, n)
		out[fd] = append(out[fd], domainNode{name, inventory.NodeGPUs(g, n)})
	}
	return out
}

// span is when a window takes its nodes: from its reservation's start
// (drain ahead included) to its end.
func (w *WindowPlan) span() (time.Time, time.Time) {
	if w.Reservation != nil {
		return w.Reservation.Start, w.Reservation.End()
	}
	return w.Start, w.End
}

func (w *WindowPlan) overlap(all []WindowPlan, i int) {
	s, e := w.span()
	for j := range all {
		if j == i {
			continue
		}
		s2, e2 := all[j].span()
		if s.Before(e2) && s2.Before(e) {
			w.Overlaps = append(w.Overlaps, all[j].ID)
		}
	}
}

// running is each failure domain's compute that runs while the window
// and the windows overlapping it are on.
func (w *WindowPlan) running(all []WindowPlan, i int, domains map[string][]domainNode) {
	out := map[string]bool{}
	for _, n := range w.Stops.Nodes {
		out[n] = true
	}
	for j := range all {
		if slices.Contains(w.Overlaps, all[j].ID) {
			for _, n := range all[j].Stops.Nodes {
				out[n] = true
			}
		}
	}
	w.Running = []Capacity{}
	fds := make([]string, 0, len(domains))
	for fd := range domains {
		fds = append(fds, fd)
	}
	slices.Sort(fds)
	for _, fd := range fds {
		c := Capacity{Domain: fd, Of: len(domains[fd])}
		for _, n := range domains[fd] {
			if !out[n.name] {
				c.Nodes++
				c.GPUs += n.gpus
			}
		}
		w.Running = append(w.Running, c)
	}
}

// layout is how the plan writes times: UTC, to the minute.
const layout = "2006-01-02 15:04 MST"

// steps is the drain-ahead plan in words.
func (w *WindowPlan) steps() {
	r := w.Reservation
	if r == nil {
		w.Steps = []string{fmt.Sprintf("nothing stops: no reservation; %s runs degraded from %s to %s", w.Target,
			w.Start.UTC().Format(layout), w.End.UTC().Format(layout))}
		if len(w.Degraded) > 0 {
			w.Steps[0] += fmt.Sprintf(" (%d degraded: a second failure meanwhile stops more)", len(w.Degraded))
		}
		return
	}
	cut := r.Start.UTC().Format(layout)
	var lands, partial []string
	total := 0
	for _, c := range w.Running {
		switch {
		case c.Nodes == c.Of:
			lands = append(lands, c.Domain)
			total += c.GPUs
		case c.Nodes > 0:
			partial = append(partial, fmt.Sprintf("%s (%d of %d nodes)", c.Domain, c.Nodes, c.Of))
			total += c.GPUs
		}
	}
	w.Steps = []string{
		fmt.Sprintf("now: reserve %s (%d nodes, %d GPUs of %s) from %s to %s, flags %s: Slurm starts on them only jobs whose time limit ends by %s",
			grid(r.Nodes), len(r.Nodes), w.Stops.GPUs, strings.Join(w.Stops.Domains, ", "), cut, r.End().UTC().Format(layout), strings.Join(r.Flags, ","), cut),
		fmt.Sprintf("by %s: jobs running on them past it (contractc maintenance apply lists them) checkpoint and requeue, or end", cut),
	}
	during := fmt.Sprintf("%s to %s: new work lands in ", cut, r.End().UTC().Format(layout))
	switch {
	case len(lands)+len(partial) == 0:
		during += "no failure domain: nothing runs"
	default:
		during += strings.Join(append(lands, partial...), ", ") + fmt.Sprintf(": %d GPUs", total)
	}
	if len(w.Overlaps) > 0 {
		during += " (with " + strings.Join(w.Overlaps, ", ") + " on at the same time)"
	}
	w.Steps = append(w.Steps, during, fmt.Sprintf("%s: the reservation ends; the nodes take work again", r.End().UTC().Format(layout)))
}
