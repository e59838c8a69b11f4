package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Offer is the transition a piece of evidence allows: what sat run
// prints after a run, and does with --lifecycle-commission; what sat
// burnin does for a baseline.
type Offer struct {
	Element  string `json:"element"`
	From     State  `json:"from"`
	To       State  `json:"to"`
	Ready    bool   `json:"ready"`         // the transition would be made now
	Why      string `json:"why,omitempty"` // why not, when not ready
	Command  string `json:"command"`       // the sat lifecycle command that makes it
	Evidence string `json:"evidence"`
	// Only: the element moves alone (a part of a node in service).
	Only bool `json:"only,omitempty"`
	// nothing: the node is past provisioned and nothing of it awaits a
	// baseline.
	nothing bool
}

// OfferSAT says which transition the SAT bundle in dir allows: its
// module from installed to commissioned (the whole site for a plan of
// every module).
func (s *Store) OfferSAT(ctx context.Context, dir string) (Offer, error) {
	module, err := bundleModule(dir)
	if err != nil {
		return Offer{}, err
	}
	si, err := s.storeInfo(ctx)
	if err != nil {
		return Offer{}, err
	}
	target := module
	if target == "" {
		target = si.Site
	}
	o := Offer{Element: target, From: Installed, To: Commissioned, Evidence: dir,
		Command: fmt.Sprintf("sat lifecycle move %s commissioned --evidence %s --reason %q", target, dir, "SAT passed")}
	el, err := s.element(ctx, s.db, target)
	if err != nil {
		return o, err
	}
	if el == nil {
		o.Why = fmt.Sprintf("the store has no element %s", target)
		return o, nil
	}
	if el.State != Installed {
		o.Why = fmt.Sprintf("%s is %s, not installed", target, el.State)
		return o, nil
	}
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return o, err
	}
	if _, err := VerifySAT(dir, pv.P.EvidenceKeyList(), si.Site, el.Module); err != nil {
		o.Why = err.Error()
		return o, nil
	}
	o.Ready = true
	return o, nil
}

// Commission moves the module of the SAT bundle in dir (and everything
// it contains that is installed) to commissioned.
func (s *Store) Commission(ctx context.Context, a Auth, dir, reason string) (*Moved, error) {
	o, err := s.OfferSAT(ctx, dir)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(reason) == "" {
		reason = "SAT passed: " + dir
	}
	return s.Transition(ctx, a, Move{Element: o.Element, To: Commissioned, SAT: dir, Reason: reason})
}

// OfferBaseline says which transition a node's baseline allows: the
// node from commissioned to provisioned; or, for a node in service one
// of whose parts came back from RMA (a replacement fitted, the part
// commissioned, the node held burnin:swap), that part, alone.
func (s *Store) OfferBaseline(ctx context.Context, file string) (Offer, error) {
	b, _, err := ReadBaseline(file)
	if err != nil {
		return Offer{}, err
	}
	key, err := s.Resolve(ctx, b.Node)
	if err != nil {
		return Offer{}, err
	}
	node, err := s.element(ctx, s.db, key)
	if err != nil {
		return Offer{}, err
	}
	target := node
	if node.State != Commissioned {
		parts, err := s.queryOn(ctx, s.db, "SELECT "+elementCols+" FROM elements WHERE parent = ? AND state = ? ORDER BY key", key, string(Commissioned))
		if err != nil {
			return Offer{}, err
		}
		if len(parts) > 0 {
			target = parts[0]
		}
	}
	o := Offer{Element: target.Key, From: Commissioned, To: Provisioned, Evidence: file, Only: target != node,
		Command: fmt.Sprintf("sat lifecycle move %s provisioned --baseline %s --reason %q", target.Key, file, "burn-in baseline")}
	if o.Only {
		o.Command = fmt.Sprintf("sat lifecycle move %s provisioned --only --baseline %s --reason %q", target.Key, file, "burn-in baseline after the swap")
	}
	switch {
	case target.State != Commissioned:
		o.Why = fmt.Sprintf("%s is %s, not commissioned, and no part of it is", key, node.State)
		o.nothing = node.State == Provisioned || node.State == Operating
	case !b.Passed:
		o.Why = "the burn-in did not pass"
	case b.Serial != node.Serial:
		o.Why = fmt.Sprintf("the baseline is of serial %s, %s holds %s", b.Serial, key, node.Serial)
	default:
		o.Ready = true
	}
	return o, nil
}

// ErrNothingToProvision is a baseline of a node in service none of
// whose parts awaits one: a burn-in of a healthy node, whose baseline
// is evidence and moves nothing.
var ErrNothingToProvision = errors.New("nothing of the node awaits a baseline: it stays as it is")

// Provision moves the node of a baseline (and its parts) to
// provisioned; for a node in service, each of its parts that came back
// from RMA, which releases the node's burnin:swap hold once none is
// left. It returns the last move; ErrNothingToProvision when nothing of
// a node in service awaits a baseline.
func (s *Store) Provision(ctx context.Context, a Auth, file, reason string) (*Moved, error) {
	var last *Moved
	for {
		o, err := s.OfferBaseline(ctx, file)
		if err != nil {
			return last, err
		}
		if !o.Ready {
			switch {
			case last != nil:
				return last, nil
			case o.nothing:
				return nil, fmt.Errorf("%s: %w", o.Element, ErrNothingToProvision)
			}
			return nil, &EvidenceError{Element: o.Element, Need: NeedBaseline, Detail: o.Why}
		}
		if strings.TrimSpace(reason) == "" {
			reason = "burn-in baseline " + file
		}
		m, err := s.Transition(ctx, a, Move{Element: o.Element, To: Provisioned, Baselines: []string{file}, Reason: reason, Only: o.Only})
		if err != nil {
			return last, err
		}
		if last != nil {
			m.Nodes = append(last.Nodes, m.Nodes...)
		}
		last = m
		if !o.Only || s.dry.Active() {
			return last, nil
		}
	}
}
