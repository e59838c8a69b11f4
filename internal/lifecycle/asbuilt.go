package lifecycle

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
)

// The as-built inventory lives in the store after handover: each
// rack's and tray's record (the handover's per-rack form), the serial
// in every slot, the names of each node. It is imported from a handover
// file and exported back to one; the signed contract never holds it, so
// an RMA never makes a vendor sign anything again.

// rackHead is a rack's own record, without its trays.
type rackHead struct {
	Name       string `json:"name"`
	Module     string `json:"module"`
	Position   string `json:"position,omitempty"`
	PartNumber string `json:"part_number,omitempty"`
	Serial     string `json:"serial,omitempty"`
	AssetTag   string `json:"asset_tag,omitempty"`
}

// Imported is what an import did.
type Imported struct {
	Racks, Nodes int // records read
	Changed      int // elements whose as-built changed
	Seq          int64
}

// change is one element's new as-built.
type change struct {
	el     *Element
	serial string
	record string
	ord    int64
	names  map[string]string // system → name; nil: unchanged
}

// Import reads a handover file (either form) into the store as the
// as-built of the racks it describes, recording each change as an
// event; it is all or nothing. A rack it describes is replaced whole:
// a tray it does not list has no as-built afterwards.
func (s *Store) Import(ctx context.Context, a Auth, file string, raw []byte, reason string) (*Imported, error) {
	h, diags, err := inventory.ParseHandover(file, raw)
	if err != nil {
		return nil, err
	}
	if diags.Count(diag.Error) > 0 {
		return nil, fmt.Errorf("%s: %s", file, firstErrors(diags))
	}
	si, err := s.storeInfo(ctx)
	if err != nil {
		return nil, err
	}
	if h.Site != "" && h.Site != si.Site {
		return nil, fmt.Errorf("%s is the as-built of site %q, not of this store's site %q", file, h.Site, si.Site)
	}
	changes, modules, err := s.planImport(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if strings.TrimSpace(reason) == "" {
		reason = "as-built from " + file
	}
	pv, err := s.currentPolicy(ctx, s.db)
	if err != nil {
		return nil, err
	}
	root, err := s.element(ctx, s.db, si.Site)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	p, err := s.sign(ctx, a, pv, &Statement{Action: ActAsBuilt, Element: si.Site, Version: root.Version, Reason: reason, Digest: "sha256:" + hex.EncodeToString(sum[:])}, MayAsBuilt, modules[0])
	if err != nil {
		return nil, err
	}
	for _, m := range modules[1:] {
		if err := pv.P.may(p.actor, MayAsBuilt, m); err != nil {
			return nil, err
		}
	}
	set := []*Element{root}
	for _, c := range changes {
		set = append(set, c.el)
	}
	if err := s.checkClock(ctx, set, p.at); err != nil {
		return nil, err
	}
	out := &Imported{Racks: len(h.Racks), Nodes: len(h.Nodes), Changed: len(changes)}
	err = s.write(ctx, p, MayAsBuilt, modules[0], func(tx *sql.Tx) error {
		if err := s.lockUnchanged(ctx, tx, root, set, ""); err != nil {
			return err
		}
		data, _ := json.Marshal(map[string]any{"file": file, "digest": p.st.Digest, "racks": len(h.Racks), "nodes": len(h.Nodes), "changed": len(changes)})
		res, err := tx.ExecContext(ctx, s.q("UPDATE elements SET last_at = ?, version = version + 1 WHERE key = ? AND version = ?"), micros(p.at), root.Key, root.Version)
		if err != nil {
			return s.wrap(err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return s.conflict(ctx, tx, root)
		}
		seq, err := s.insertEvent(ctx, tx, eventRow{at: p.at, element: root.Key, kind: EvAsBuilt, prevState: root.State, state: root.State, since: root.Since,
			actor: p.actor, reason: reason, policy: p.policy, statement: p.statement, signature: p.signature, data: string(data)})
		if err != nil {
			return err
		}
		out.Seq = seq
		return s.applyImport(ctx, tx, p, changes, seq)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func firstErrors(l diag.List) string {
	var msgs []string
	for _, d := range l {
		if d.Severity == diag.Error {
			msgs = append(msgs, fmt.Sprintf("%s: %s", d.Pos, d.Message))
		}
	}
	if len(msgs) > 3 {
		msgs = append(msgs[:3], fmt.Sprintf("and %d more", len(msgs)-3))
	}
	return strings.Join(msgs, "; ")
}

// planImport works out every element's new as-built, and the modules
// the import touches (sorted; "" first when none).
func (s *Store) planImport(ctx context.Context, h *inventory.Handover) ([]*change, []string, error) {
	var changes []*change
	mods := map[string]bool{}
	add := func(c *change) {
		if c.serial != c.el.Serial || c.record != string(c.el.Record) || c.ord != c.el.ord || c.names != nil {
			changes = append(changes, c)
		}
	}
	for i, rec := range h.Racks {
		cs, err := s.planRack(ctx, rec, int64(i))
		if err != nil {
			return nil, nil, err
		}
		mods[rec.Module] = true
		for _, c := range cs {
			add(c)
		}
	}
	if len(h.Nodes) > 0 {
		cs, err := s.planNodes(ctx, h.Nodes)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range cs {
			mods[c.el.Module] = true
			add(c)
		}
	}
	// drop name changes that change nothing
	names, err := s.allNames(ctx)
	if err != nil {
		return nil, nil, err
	}
	kept := changes[:0]
	for _, c := range changes {
		if c.names != nil {
			if sameNames(names[c.el.Key], c.names) {
				c.names = nil
				if c.serial == c.el.Serial && c.record == string(c.el.Record) && c.ord == c.el.ord {
					continue
				}
			}
		}
		kept = append(kept, c)
	}
	changes = kept
	if err := s.checkSerials(ctx, changes); err != nil {
		return nil, nil, err
	}
	modules := sortedKeys(mods)
	if len(modules) == 0 {
		modules = []string{""}
	}
	return changes, modules, nil
}

// rackKey joins a handover rack to the store's rack the way the
// inventory does (docs/inventory.md): by its position, by a name that
// is a rack id of the module, or by the rack id its name ends with
// after a dash.
func (s *Store) rackKey(ctx context.Context, module, name, position string) (string, error) {
	var cands []string
	if position != "" {
		cands = []string{module + "/" + position}
	} else {
		cands = []string{module + "/" + name}
		if i := strings.LastIndex(name, "-"); i >= 0 {
			cands = append(cands, module+"/"+name[i+1:])
		}
	}
	for _, k := range cands {
		e, err := s.element(ctx, s.db, k)
		if err != nil {
			return "", err
		}
		if e != nil && e.Kind == "rack" {
			return k, nil
		}
	}
	return "", fmt.Errorf("rack %s (module %s, position %q) is no rack of the store's site (tried %s)", name, module, position, strings.Join(cands, ", "))
}

// children lists an element's children, by slot.
func (s *Store) children(ctx context.Context, key string) ([]*Element, error) {
	return s.queryOn(ctx, s.db, "SELECT "+elementCols+" FROM elements WHERE parent = ? ORDER BY slot, key", key)
}

// planRack is the as-built of one rack record: the rack, each tray of
// the rack (listed or not), each part and PSU.
func (s *Store) planRack(ctx context.Context, rec *inventory.RackRecord, ord int64) ([]*change, error) {
	if err := unkept(rec); err != nil {
		return nil, err
	}
	key, err := s.rackKey(ctx, rec.Module, rec.Name, rec.Position)
	if err != nil {
		return nil, err
	}
	rack, err := s.element(ctx, s.db, key)
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(rackHead{Name: rec.Name, Module: rec.Module, Position: rec.Position, PartNumber: rec.PartNumber, Serial: rec.Serial, AssetTag: rec.AssetTag})
	out := []*change{{el: rack, serial: rec.Serial, record: string(head), ord: ord}}
	sub, err := s.subtree(ctx, s.db, key)
	if err != nil {
		return nil, err
	}
	under := map[string][]*Element{}
	for _, e := range sub {
		under[e.Parent] = append(under[e.Parent], e)
	}
	kids := under[key]
	bySlot := map[int]*inventory.TrayRecord{}
	trayOrd := map[int]int64{}
	for j, t := range rec.Trays {
		if _, dup := bySlot[t.Slot]; dup {
			return nil, fmt.Errorf("rack %s: two trays in slot U%d", rec.Name, t.Slot)
		}
		bySlot[t.Slot], trayOrd[t.Slot] = t, int64(j)
	}
	matched := map[int]bool{}
	for _, k := range kids {
		if !isTrayKind(k.Kind) {
			continue
		}
		t := bySlot[k.Slot]
		if t != nil && t.Kind != k.Kind {
			return nil, fmt.Errorf("rack %s: the tray at U%d is a %s, but the design has a %s there (%s)", rec.Name, k.Slot, t.Kind, k.Kind, k.Key)
		}
		c := &change{el: k}
		if t != nil {
			matched[k.Slot] = true
			b, _ := json.Marshal(t)
			c.serial, c.record, c.ord = t.Serial, string(b), trayOrd[k.Slot]
			c.names = nodeNames(t.Node)
		} else if k.Record != nil {
			c.names = map[string]string{}
		}
		out = append(out, c)
		out = append(out, planParts(under[k.Key], t)...)
	}
	for slot, t := range bySlot {
		if !matched[slot] {
			return nil, fmt.Errorf("rack %s: no %s tray at U%d in the design of %s", rec.Name, t.Kind, slot, key)
		}
	}
	return out, nil
}

// unkept refuses what a handover may declare but the store does not keep
// yet: a reserved empty position and a spare tray on the shelf (vet,
// blast and the other contractc commands read both). The import changes
// nothing.
func unkept(rec *inventory.RackRecord) error {
	const todo = "the lifecycle store does not keep %s yet: import the file without it (contractc vet, blast and nodes read it as it is)"
	if rec.Reserved {
		return fmt.Errorf("rack position %s/%s is declared reserved: "+todo, rec.Module, rec.Position, "reserved positions")
	}
	for _, t := range rec.Trays {
		if t.Spare {
			return fmt.Errorf("rack %s: the spare %s tray %s: "+todo, rec.Name, t.Kind, t.Serial, "spares")
		}
	}
	return nil
}

func isTrayKind(k string) bool { return slices.Contains(inventory.TrayKinds, k) }

func nodeNames(n *inventory.NodeNames) map[string]string {
	names := map[string]string{}
	if n == nil {
		return names
	}
	for sys, v := range map[string]string{"slurm": n.Slurm, "kubernetes": n.Kubernetes, "bmc": n.BMC} {
		if v != "" {
			names[sys] = v
		}
	}
	return names
}

// planParts gives each part and PSU of a tray the serial the tray
// record lists at its position ("" none).
func planParts(kids []*Element, t *inventory.TrayRecord) []*change {
	var out []*change
	for _, k := range kids {
		serial := ""
		if t != nil {
			list := t.Parts[k.Kind]
			if k.Kind == inventory.PSU {
				list = t.PSUs
			}
			if k.Slot >= 1 && k.Slot <= len(list) {
				serial = list[k.Slot-1]
			}
		}
		out = append(out, &change{el: k, serial: serial, record: string(k.Record), ord: k.ord})
	}
	return out
}

// planNodes places the design brief's node records: each rack's nodes,
// sorted by name, fill its compute trays in slot order.
func (s *Store) planNodes(ctx context.Context, nodes []*inventory.NodeRecord) ([]*change, error) {
	byRack := map[string][]*inventory.NodeRecord{}
	rackName := map[string]string{}
	for _, n := range nodes {
		key, err := s.rackKey(ctx, n.Module, n.Rack, "")
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.Node, err)
		}
		byRack[key] = append(byRack[key], n)
		rackName[key] = n.Rack
	}
	var out []*change
	for _, key := range sortedKeys(byRack) {
		ns := byRack[key]
		sort.Slice(ns, func(i, j int) bool { return ns[i].Node < ns[j].Node })
		kids, err := s.children(ctx, key)
		if err != nil {
			return nil, err
		}
		var computes []*Element
		for _, k := range kids {
			if k.Kind == "compute" {
				computes = append(computes, k)
			}
		}
		if len(ns) > len(computes) {
			return nil, fmt.Errorf("rack %s: %d node records, but %s has %d compute trays", rackName[key], len(ns), key, len(computes))
		}
		rack, err := s.element(ctx, s.db, key)
		if err != nil {
			return nil, err
		}
		module, _, _ := strings.Cut(key, "/")
		head, _ := json.Marshal(rackHead{Name: rackName[key], Module: module})
		if rack.Record != nil {
			head = rack.Record // a per-rack record says more: keep it
		}
		out = append(out, &change{el: rack, serial: rack.Serial, record: string(head), ord: rack.ord})
		for i, n := range ns {
			c := computes[i]
			t := inventory.TrayRecord{Slot: c.Slot, Kind: "compute", Node: &inventory.NodeNames{Slurm: n.Node, Kubernetes: n.Node}, ScaleUpDomain: n.NVLinkDomain}
			record := ""
			if c.Record != nil {
				var cur inventory.TrayRecord
				if json.Unmarshal(c.Record, &cur) == nil {
					cur.Node, cur.ScaleUpDomain = t.Node, t.ScaleUpDomain
					t = cur
				}
			}
			b, _ := json.Marshal(t)
			record = string(b)
			out = append(out, &change{el: c, serial: c.Serial, record: record, ord: int64(i), names: nodeNames(t.Node)})
		}
	}
	return out, nil
}

// allNames is every element's names, by element and system.
func (s *Store) allNames(ctx context.Context) (map[string]map[string]string, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT element, system, name FROM names")
	if err != nil {
		return nil, s.wrap(err)
	}
	defer rows.Close()
	out := map[string]map[string]string{}
	for rows.Next() {
		var el, sys, n string
		if err := rows.Scan(&el, &sys, &n); err != nil {
			return nil, s.wrap(err)
		}
		if out[el] == nil {
			out[el] = map[string]string{}
		}
		out[el][sys] = n
	}
	return out, s.wrap(rows.Err())
}

func sameNames(have, want map[string]string) bool {
	if len(have) != len(want) {
		return false
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// checkSerials refuses a serial given twice, or fitted at an element
// the import does not change.
func (s *Store) checkSerials(ctx context.Context, changes []*change) error {
	at := map[string]string{}
	moving := map[string]bool{}
	for _, c := range changes {
		moving[c.el.Key] = true
		if c.serial == "" {
			continue
		}
		if prev, dup := at[c.serial]; dup {
			return fmt.Errorf("serial %s is given twice: at %s and at %s", c.serial, prev, c.el.Key)
		}
		at[c.serial] = c.el.Key
	}
	serials := sortedKeys(at)
	for chunk := range chunks(serials, 500) {
		args := make([]any, len(chunk))
		for i, v := range chunk {
			args[i] = v
		}
		rows, err := s.db.QueryContext(ctx, s.q("SELECT serial, key FROM elements WHERE serial IN ("+placeholders(len(args))+")"), args...)
		if err != nil {
			return s.wrap(err)
		}
		for rows.Next() {
			var serial, key string
			if err := rows.Scan(&serial, &key); err != nil {
				rows.Close()
				return s.wrap(err)
			}
			if key != at[serial] && !moving[key] {
				rows.Close()
				return fmt.Errorf("serial %s is given for %s, but it is fitted at %s, which this import does not change", serial, at[serial], key)
			}
		}
		rows.Close()
	}
	return nil
}

// applyImport writes the changes: serials that change are cleared
// first, so that parts swapped between slots never meet in the unique
// index; then each element's as-built, names and event, in multi-row
// statements.
func (s *Store) applyImport(ctx context.Context, tx *sql.Tx, p *prepared, changes []*change, cause int64) error {
	var clear []any
	for _, c := range changes {
		if c.serial != c.el.Serial && c.el.Serial != "" {
			clear = append(clear, c.el.Key)
		}
	}
	for chunk := range chunks(clear, 500) {
		if _, err := tx.ExecContext(ctx, s.q("UPDATE elements SET serial = '' WHERE key IN ("+placeholders(len(chunk))+")"), chunk...); err != nil {
			return s.wrap(err)
		}
	}
	for chunk := range chunks(changes, 200) {
		var b strings.Builder
		b.WriteString("WITH v(k, serial, record, ord) AS (VALUES ")
		args := make([]any, 0, 4*len(chunk)+1)
		for i, c := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT))")
			args = append(args, c.el.Key, c.serial, c.record, c.ord)
		}
		b.WriteString(") UPDATE elements SET serial = v.serial, record = v.record, ord = v.ord, last_at = ?, version = version + 1 FROM v WHERE elements.key = v.k")
		args = append(args, micros(p.at))
		if _, err := tx.ExecContext(ctx, s.q(b.String()), args...); err != nil {
			if uniqueViolation(err) {
				return fmt.Errorf("a serial of this import is fitted elsewhere: %v", err)
			}
			return s.wrap(err)
		}
	}
	if err := s.writeNames(ctx, tx, changes); err != nil {
		return err
	}
	rows := make([]eventRow, 0, len(changes))
	for _, c := range changes {
		data := ""
		if c.record != string(c.el.Record) {
			data = c.record
		}
		rows = append(rows, eventRow{at: p.at, element: c.el.Key, kind: EvAsBuilt, prevState: c.el.State, state: c.el.State, since: c.el.Since,
			prevSerial: c.el.Serial, serial: c.serial, actor: p.actor, reason: p.st.Reason, cause: cause, policy: p.policy, data: data})
	}
	return s.insertEvents(ctx, tx, rows)
}

// writeNames replaces the names of the elements whose names change.
func (s *Store) writeNames(ctx context.Context, tx *sql.Tx, changes []*change) error {
	var del []any
	var ins [][3]string
	for _, c := range changes {
		if c.names == nil {
			continue
		}
		del = append(del, c.el.Key)
		for _, sys := range sortedKeys(c.names) {
			ins = append(ins, [3]string{c.names[sys], c.el.Key, sys})
		}
	}
	for chunk := range chunks(del, 500) {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM names WHERE element IN ("+placeholders(len(chunk))+")"), chunk...); err != nil {
			return s.wrap(err)
		}
	}
	for chunk := range chunks(ins, 300) {
		var b strings.Builder
		b.WriteString("INSERT INTO names (name, element, system) VALUES ")
		args := make([]any, 0, 3*len(chunk))
		for i, n := range chunk {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, n[0], n[1], n[2])
		}
		if _, err := tx.ExecContext(ctx, s.q(b.String()), args...); err != nil {
			if uniqueViolation(err) {
				return fmt.Errorf("a node name of this import is the name of another element already: %v", err)
			}
			return s.wrap(err)
		}
	}
	return nil
}

// recordSwap puts serial into the as-built record that lists el: its
// own (a rack or tray), or its tray's (a part's position, a PSU's bay).
func (s *Store) recordSwap(ctx context.Context, tx *sql.Tx, el *Element, serial string) error {
	if isTrayKind(el.Kind) || el.Kind == "rack" {
		if el.Record == nil {
			return nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(el.Record, &m); err != nil {
			return fmt.Errorf("%s: its as-built record: %w", el.Key, err)
		}
		if el.Kind == "rack" {
			var h rackHead
			_ = json.Unmarshal(el.Record, &h)
			h.Serial = serial
			b, _ := json.Marshal(h)
			return s.setRecord(ctx, tx, el.Key, string(b))
		}
		var t inventory.TrayRecord
		if err := json.Unmarshal(el.Record, &t); err != nil {
			return fmt.Errorf("%s: its as-built record: %w", el.Key, err)
		}
		t.Serial = serial
		b, _ := json.Marshal(t)
		return s.setRecord(ctx, tx, el.Key, string(b))
	}
	tray, err := s.element(ctx, tx, el.Parent)
	if err != nil || tray == nil || tray.Record == nil {
		return err
	}
	var t inventory.TrayRecord
	if err := json.Unmarshal(tray.Record, &t); err != nil {
		return fmt.Errorf("%s: its as-built record: %w", tray.Key, err)
	}
	list := t.Parts[el.Kind]
	if el.Kind == inventory.PSU {
		list = t.PSUs
	}
	for len(list) < el.Slot {
		list = append(list, "")
	}
	list[el.Slot-1] = serial
	if el.Kind == inventory.PSU {
		t.PSUs = list
	} else {
		if t.Parts == nil {
			t.Parts = map[string][]string{}
		}
		t.Parts[el.Kind] = list
	}
	b, _ := json.Marshal(t)
	return s.setRecord(ctx, tx, tray.Key, string(b))
}

func (s *Store) setRecord(ctx context.Context, tx *sql.Tx, key, record string) error {
	_, err := tx.ExecContext(ctx, s.q("UPDATE elements SET record = ? WHERE key = ?"), record, key)
	return s.wrap(err)
}
