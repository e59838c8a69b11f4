// Package lifecycle is the site's lifecycle store: every element of the
// inventory (module, rack, node, part) has a state, a history of
// append-only events, and evidence for each move; the as-built (serials,
// firmware, slots, node names) lives here after handover, apart from
// the signed contract; holds keep nodes out of the pool, with their
// owners. One schema runs on two engines: an embedded SQLite file by
// default, PostgreSQL for a team that shares one store.
//
// A change is made by an authenticated identity only: a statement of
// the change signed with an SSH key of the store's allowed signers
// (SSHSIG, namespace seam-lifecycle), or, on PostgreSQL, the database
// role of the session. Who may make which change is the store's access
// policy (Policy), itself kept in the store.
package lifecycle

import (
	"fmt"
	"slices"
	"strings"
)

// State is where an element is in its life.
type State string

// The states, in the order a rack lives them.
const (
	Design         State = "design"         // in the signed contract only
	Built          State = "built"          // built by the vendor (ODM)
	Integrated     State = "integrated"     // integrated into its module
	Shipped        State = "shipped"        // on its way to site
	Installed      State = "installed"      // in place on site
	Commissioned   State = "commissioned"   // the site acceptance test passed
	Provisioned    State = "provisioned"    // burned in, baselined
	Operating      State = "operating"      // in service
	Maintenance    State = "maintenance"    // out of service for work
	RMA            State = "rma"            // a part went back to its vendor; a replacement is fitted
	Decommissioned State = "decommissioned" // out of the site for good
)

// States lists every state.
var States = []State{Design, Built, Integrated, Shipped, Installed, Commissioned, Provisioned, Operating, Maintenance, RMA, Decommissioned}

// Need is evidence a transition needs.
type Need string

// What transitions need.
const (
	// NeedSAT: the commissioning gates of the element's module pass in
	// the issues log, whose bundles sat verify accepts with the store's
	// trusted evidence keys.
	NeedSAT Need = "sat"
	// NeedBaseline: the burn-in baseline of each node that moves (and of
	// the node of each part that moves), of the serial the node has now,
	// taken after its last swap.
	NeedBaseline Need = "baseline"
	// NeedReplacement: the serial of the part fitted in place of the one
	// sent back.
	NeedReplacement Need = "replacement"
)

// Describe says what a need asks for, as docs/lifecycle.md and errors
// say it.
func (n Need) Describe() string {
	switch n {
	case NeedSAT:
		return "the commissioning gates of its module (L3 and L4 unless the site says otherwise; `sat gate LEVEL --module M`) passing in the issues log: every case of those levels passed or its issue waived, no open issue beyond the gate's limits; `--evidence DIR` records a SAT bundle (verified as `sat verify --trust` with the store's evidence keys) in the log first"
	case NeedBaseline:
		return "the burn-in baseline of each node that moves (`--baseline FILE`, once per node): passed, of the serial the node has now, taken after its last swap and not in the future"
	case NeedReplacement:
		return "the serial of the part fitted in its place (`--replacement SERIAL`), fitted nowhere else"
	}
	return string(n)
}

// Transition is an allowed move and what it needs.
type Transition struct {
	From, To State
	Needs    []Need
	// About says what the move means, for help and errors.
	About string
}

// transitions are the allowed moves, written once: everything else is
// refused.
var transitions = func() []Transition {
	ts := []Transition{
		{From: Design, To: Built, About: "the vendor built it"},
		{From: Built, To: Integrated, About: "integrated into its module"},
		{From: Integrated, To: Shipped, About: "shipped to site"},
		{From: Shipped, To: Installed, About: "installed on site"},
		{From: Installed, To: Commissioned, Needs: []Need{NeedSAT}, About: "the site acceptance test of its module passed"},
		{From: Commissioned, To: Provisioned, Needs: []Need{NeedBaseline}, About: "burned in and baselined"},
		{From: Provisioned, To: Operating, About: "in service"},
		{From: Operating, To: Maintenance, About: "out of service for work"},
		{From: Maintenance, To: Operating, About: "back in service"},
		{From: Operating, To: RMA, Needs: []Need{NeedReplacement}, About: "sent back to its vendor, a replacement fitted"},
		{From: Maintenance, To: RMA, Needs: []Need{NeedReplacement}, About: "sent back to its vendor, a replacement fitted"},
		{From: Provisioned, To: RMA, Needs: []Need{NeedReplacement}, About: "sent back to its vendor, a replacement fitted"},
		{From: Commissioned, To: RMA, Needs: []Need{NeedReplacement}, About: "sent back to its vendor, a replacement fitted"},
		{From: RMA, To: Commissioned, About: "the replacement is in place: it needs burn-in before it is provisioned again"},
	}
	for _, s := range States {
		if s != Decommissioned {
			ts = append(ts, Transition{From: s, To: Decommissioned, About: "out of the site for good"})
		}
	}
	return ts
}()

// Transitions lists the allowed moves.
func Transitions() []Transition { return slices.Clone(transitions) }

// ParseState reads a state's name.
func ParseState(s string) (State, error) {
	st := State(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(States, st) {
		return st, nil
	}
	return "", fmt.Errorf("%q is not a state: the states are %s", s, stateList(States))
}

// Allowed returns the transition from → to, or an error that says where
// from can go.
func Allowed(from, to State) (Transition, error) {
	for _, t := range transitions {
		if t.From == from && t.To == to {
			return t, nil
		}
	}
	var next []State
	for _, t := range transitions {
		if t.From == from {
			next = append(next, t.To)
		}
	}
	if len(next) == 0 {
		return Transition{}, &NotAllowedError{From: from, To: to, Detail: fmt.Sprintf("nothing leaves %s", from)}
	}
	return Transition{}, &NotAllowedError{From: from, To: to, Detail: fmt.Sprintf("from %s an element may go to %s", from, stateList(next))}
}

// Requires reports whether the transition needs n.
func (t Transition) Requires(n Need) bool { return slices.Contains(t.Needs, n) }

// Name is "from>to", as access policies write it.
func (t Transition) Name() string { return string(t.From) + ">" + string(t.To) }

func stateList(ss []State) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return strings.Join(out, ", ")
}
