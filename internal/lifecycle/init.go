package lifecycle

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/inventory"
)

// Init makes a new store for the site of g: every element of the
// inventory graph, in state design, and the access policy, as the
// identity a (which the policy must let change the policy). The store
// must be empty.
func Init(ctx context.Context, cfg Config, a Auth, g *inventory.Graph, policy *Policy) (*Store, error) {
	if policy.signers == nil {
		if err := policy.Validate(); err != nil {
			return nil, err
		}
	}
	if cfg.DryRun.Active() {
		// no store is made: say what it would hold
		if g.Site == nil || g.Site.Name == "" {
			return nil, errors.New("init: the inventory has no site")
		}
		cfg.DryRun.Would(dryrun.Store, "create the lifecycle store %s for site %s: %d elements in state design, an access policy of %d member(s)",
			cfg.Store, g.Site.Name, len(elementsOf(g)), len(policy.Members))
		return nil, nil
	}
	cfg.Create = true
	s, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.init(ctx, a, g, policy); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) init(ctx context.Context, a Auth, g *inventory.Graph, policy *Policy) error {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM store_info").Scan(&n); err != nil {
		return s.wrap(err)
	}
	if n > 0 {
		si, _ := s.storeInfo(ctx)
		site := ""
		if si != nil {
			site = " of site " + si.Site
		}
		return &StoreError{Store: s.name, Kind: StoreSchema, Err: fmt.Errorf("the store is initialised already%s: init makes a new store only", site)}
	}
	if g.Site == nil || g.Site.Name == "" {
		return errors.New("init: the inventory has no site")
	}
	site := g.Site.Name
	doc := policy.Marshal()
	pv := &policyVersion{Version: 1, P: policy}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	// the store's identity is known before it is written: the statement
	// names it
	s.info = &storeInfo{ID: hex.EncodeToString(id), Site: site}
	sum := sha256.Sum256(doc)
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActInit, Element: site, Reason: "the store is made, every element in state design", Digest: "sha256:" + hex.EncodeToString(sum[:])}, MayAccess, "")
	if err != nil {
		s.info = nil
		return err
	}
	s.info.Created = p.at
	err = s.writeInit(ctx, p, g, doc)
	if err != nil {
		s.info = nil
	}
	return err
}

// writeInit writes the store's identity, its first policy, and every
// element with its created event, in one transaction.
func (s *Store) writeInit(ctx context.Context, p *prepared, g *inventory.Graph, doc []byte) error {
	tx, err := s.beginWrite(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO store_info (id, store_id, site, created_at) VALUES (1, ?, ?, ?)"), s.info.ID, s.info.Site, micros(p.at)); err != nil {
		return s.wrap(err)
	}
	els := elementsOf(g)
	root := els[0]
	seq, err := s.insertEvent(ctx, tx, eventRow{at: p.at, element: root.Key, kind: EvCreated, state: Design, since: p.at, actor: p.actor,
		reason: p.st.Reason, policy: 1, statement: p.statement, signature: p.signature, data: fmt.Sprintf(`{"elements":%d}`, len(els))})
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q("INSERT INTO policies (version, at, actor, event, doc) VALUES (1, ?, ?, ?, ?)"), micros(p.at), p.actor, seq, string(doc)); err != nil {
		return s.wrap(err)
	}
	if err := s.insertElements(ctx, tx, els, p); err != nil {
		return err
	}
	rows := make([]eventRow, 0, len(els)-1)
	for _, e := range els[1:] {
		rows = append(rows, eventRow{at: p.at, element: e.Key, kind: EvCreated, state: Design, since: p.at, actor: p.actor, reason: p.st.Reason, cause: seq, policy: 1})
	}
	if err := s.insertEvents(ctx, tx, rows); err != nil {
		return err
	}
	if err := s.seal(ctx, tx, p.auth); err != nil {
		return err
	}
	if s.hook != nil {
		s.hook("init")
	}
	if err := tx.Commit(); err != nil {
		return s.wrap(err)
	}
	s.stampSoon()
	return nil
}

// elementsOf lists the graph's elements, the site first, each with its
// parent, module and design facts.
func elementsOf(g *inventory.Graph) []*Element {
	nodeAttrs := designAttrs(g)
	out := make([]*Element, 0, g.Len())
	var root *Element
	for i := range g.Len() {
		id := inventory.ID(i)
		e := g.El(id)
		el := &Element{Key: e.Key, Kind: e.Kind.String(), Slot: e.Slot, State: Design, Version: 1, attrs: nodeAttrs[id]}
		if p := g.Parent(id); p != inventory.None {
			el.Parent = g.El(p).Key
		}
		if m := g.Ancestor(id, inventory.KindModule); m != inventory.None {
			el.Module = g.El(m).Key
		}
		if e.Kind == inventory.KindSite && root == nil {
			root = el
			continue
		}
		out = append(out, el)
	}
	if root == nil {
		root = &Element{Key: g.Site.Name, Kind: "site", State: Design, Version: 1}
	}
	return append([]*Element{root}, out...)
}

// designAttrs are a node's design facts the brief's per-node records
// carry: the power block and cooling loop modules it hangs off, its
// scale-up domain.
func designAttrs(g *inventory.Graph) map[inventory.ID]string {
	type attrs struct {
		PowerBlock  string `json:"power_block,omitempty"`
		CoolingLoop string `json:"cooling_loop,omitempty"`
		Domain      string `json:"scale_up_domain,omitempty"`
	}
	by := map[inventory.ID]*attrs{}
	get := func(n inventory.ID) *attrs {
		if by[n] == nil {
			by[n] = &attrs{}
		}
		return by[n]
	}
	for _, grouping := range []string{inventory.ByBlock, inventory.ByLoop, inventory.ByScaleUp} {
		groups, err := inventory.NodesBy(g, grouping)
		if err != nil {
			continue
		}
		for _, gr := range groups {
			if gr.Key == inventory.NoGroup {
				continue
			}
			module, _, _ := strings.Cut(gr.Key, "/")
			for _, n := range gr.Nodes {
				a := get(n)
				switch grouping {
				case inventory.ByBlock:
					if a.PowerBlock == "" {
						a.PowerBlock = module
					}
				case inventory.ByLoop:
					if a.CoolingLoop == "" {
						a.CoolingLoop = module
					}
				default:
					a.Domain = gr.Key
				}
			}
		}
	}
	out := make(map[inventory.ID]string, len(by))
	for n, a := range by {
		b, _ := json.Marshal(a)
		out[n] = string(b)
	}
	return out
}

// insertElements writes elements in multi-row statements.
func (s *Store) insertElements(ctx context.Context, tx *sql.Tx, els []*Element, p *prepared) error {
	const cols = 13
	for chunk := range chunks(els, 400) {
		var b strings.Builder
		b.WriteString("INSERT INTO elements (" + elementCols + ") VALUES ")
		args := make([]any, 0, len(chunk)*cols)
		for i, e := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(" + placeholders(cols) + ")")
			args = append(args, e.Key, e.Kind, e.Parent, e.Module, e.Slot, string(e.State), micros(p.at), micros(p.at), e.Version, e.Serial, string(e.Record), e.ord, e.attrs)
		}
		if _, err := tx.ExecContext(ctx, s.q(b.String()), args...); err != nil {
			return s.wrap(err)
		}
	}
	return nil
}
