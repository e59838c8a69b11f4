package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// The integrator's handover inventory is the as-built site: what is in
// each slot, its serials, firmware and the names each node has in other
// systems. It is not part of the signed contract: an RMA changes it
// without a vendor re-signing anything. Two forms are read:
//
//   - the design brief's per-node records, a JSON array of
//     {"node", "module", "power_block", "cooling_loop", "rack",
//     "nvlink_domain"};
//   - the per-rack form, {"format": "seam.handover/v1", "site", "racks":
//     [{name, module, position, serial, …, trays: [{slot, kind, …}]}]}.
//
// A handover rack joins the contract's rack by its module and position:
// "position" when given, else its name if that is a rack id of the
// module, else the rack id its name ends with after a dash (a-r01 in
// module ma is ma/r01). Rack ids repeat across modules; names need not.

// HandoverFormat is the format of the per-rack form.
const HandoverFormat = "seam.handover/v1"

// Handover is one handover file, read.
type Handover struct {
	File  string
	Site  string
	Racks []*RackRecord // the per-rack form
	Nodes []*NodeRecord // the design brief's form
	src   []byte
	name  string // File as positions name it
	lines []int  // where each line of src starts
	// sitePos is where the file names its site.
	sitePos diag.Pos
	// partial: a record could not be read, so counts over the file's
	// records are not the rack's.
	partial bool
}

// NodeRecord is one record of the design brief's form.
type NodeRecord struct {
	Node         string    `json:"node"`
	Module       string    `json:"module"`
	PowerBlock   string    `json:"power_block"`
	CoolingLoop  string    `json:"cooling_loop"`
	Rack         string    `json:"rack"`
	NVLinkDomain string    `json:"nvlink_domain"`
	Pos          diag.Pos  `json:"-"`
	h            *Handover // the file it is from (nil: built in Go)
}

// RackRecord is one rack of the per-rack form.
type RackRecord struct {
	Name       string `json:"name"`
	Module     string `json:"module"`
	Position   string `json:"position,omitempty"`
	PartNumber string `json:"part_number,omitempty"`
	Serial     string `json:"serial,omitempty"`
	AssetTag   string `json:"asset_tag,omitempty"`
	// Reserved: the position is reserved and empty (no name, no trays
	// needed): the contract's rack there holds nothing as built.
	Reserved bool          `json:"reserved,omitempty"`
	Trays    []*TrayRecord `json:"trays"`
	Pos      diag.Pos      `json:"-"`
	h        *Handover     // the file it is from (nil: built in Go)
	raw      []byte        // the record's bytes, for positions inside it
	at       int           // where they start in the file
	trayAt   []int         // where each tray starts in raw
}

// TrayRecord is one tray of a rack as built.
type TrayRecord struct {
	Slot          int                 `json:"slot"`
	Spare         bool                `json:"spare,omitempty"` // a spare on the shelf: no slot
	Kind          string              `json:"kind"`
	PartNumber    string              `json:"part_number,omitempty"`
	Serial        string              `json:"serial,omitempty"`
	AssetTag      string              `json:"asset_tag,omitempty"`
	Firmware      map[string]string   `json:"firmware,omitempty"`
	Node          *NodeNames          `json:"node,omitempty"`
	BMC           *BMCRecord          `json:"bmc,omitempty"`
	Data          *Port               `json:"data,omitempty"`
	ScaleUpDomain string              `json:"scale_up_domain,omitempty"`
	Parts         map[string][]string `json:"parts,omitempty"` // part kind → serials, by position
	PDU           string              `json:"pdu,omitempty"`   // power shelves: the rack PDU feeding it
	PSUs          []string            `json:"psus,omitempty"`  // power shelves: PSU serials by bay; "" an empty bay
	Pos           diag.Pos            `json:"-"`
}

// NodeNames are a node's names in the systems that join on it.
type NodeNames struct {
	Slurm      string `json:"slurm,omitempty"`
	Kubernetes string `json:"kubernetes,omitempty"`
	BMC        string `json:"bmc,omitempty"` // its BMC's host name or address
}

// BMCRecord is a tray's BMC as built: where it answers and which switch
// port it is cabled to.
type BMCRecord struct {
	Address  string `json:"address,omitempty"`
	MAC      string `json:"mac,omitempty"`
	Firmware string `json:"firmware,omitempty"`
	Port
}

// Port is a cable to a switch of the same rack: the switch's slot and
// its port.
type Port struct {
	Switch int `json:"switch,omitempty"`
	Port   int `json:"port,omitempty"`
}

// Handover rule ids: problems reading a handover file.
const (
	RuleHandoverSyntax  = "HANDOVER001"
	RuleHandoverField   = "HANDOVER002"
	RuleHandoverFormat  = "HANDOVER003"
	RuleHandoverMissing = "HANDOVER004"
)

// formatHint is where a reader of a diagnostic finds the formats.
const formatHint = "docs/inventory.md describes both handover forms"

// ReadHandover reads a handover file. Problems come back as
// diagnostics at the file's line and column; an error is a file that
// cannot be read at all.
func ReadHandover(path string) (*Handover, diag.List, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	return ParseHandover(path, b)
}

// ParseHandover reads a handover file's bytes; file names it in
// positions. It never fails on bad input: every problem is a
// diagnostic, and a file that is not JSON yields no records.
func ParseHandover(file string, b []byte) (*Handover, diag.List, error) {
	h := &Handover{File: file, src: b}
	// positions are read-only from here on: safe to resolve from any
	// goroutine
	h.name = h.file()
	h.lines = lineStarts(b)
	r := &reader{h: h}
	first := skipSpace(b, 0)
	switch {
	case first == len(b):
		r.errorf(RuleHandoverSyntax, 0, "the file is empty: a handover inventory is a JSON array of node records or a %q object", HandoverFormat).Hint = formatHint
	case bytes.HasPrefix(b[first:], []byte("\xef\xbb\xbf")):
		r.errorf(RuleHandoverSyntax, first, "not JSON: the file starts with a byte-order mark").Hint = "save it as UTF-8 without a byte-order mark"
	case (b[first] == '[' || b[first] == '{') && !json.Valid(b):
		r.invalid()
	case b[first] == '[':
		r.nodes()
	case b[first] == '{':
		r.racks()
	case json.Valid(b):
		r.errorf(RuleHandoverFormat, first, "the file is %s: a handover inventory is a JSON array of node records or a %q object", jsonKind(b), HandoverFormat).Hint = formatHint
	default:
		r.errorf(RuleHandoverSyntax, first, "not JSON: it starts with %s; a handover inventory is a JSON array of node records or a %q object",
			quoteStart(b[first:]), HandoverFormat).Hint = formatHint
	}
	return h, r.diags, nil
}

// quoteStart quotes the start of a text, for a message.
func quoteStart(b []byte) string {
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		b = b[:i]
	}
	if len(b) > 20 {
		return fmt.Sprintf("%q…", b[:20])
	}
	return fmt.Sprintf("%q", b)
}

// pos is the line and column of a byte offset of the file.
func (h *Handover) pos(off int) diag.Pos {
	if h.src == nil {
		return diag.Pos{File: h.file()}
	}
	if h.lines == nil {
		h.lines = lineStarts(h.src)
	}
	off = min(max(off, 0), len(h.src))
	line := sort.Search(len(h.lines), func(i int) bool { return h.lines[i] > off })
	return diag.Pos{File: h.file(), Line: line, Col: off - h.lines[line-1] + 1}
}

// lineStarts lists where each line of b starts.
func lineStarts(b []byte) []int {
	lines := append(make([]int, 0, 1+bytes.Count(b, []byte{'\n'})), 0)
	for i, c := range b {
		if c == '\n' {
			lines = append(lines, i+1)
		}
	}
	return lines
}

// file is the file's name relative to the working directory when it is
// below it, as positions are everywhere.
func (h *Handover) file() string { return h.File }

// lazy is a position found only when a diagnostic needs it.
type lazy func() diag.Pos

func (l lazy) Locate() diag.Pos { return l() }

// reader reads one handover file.
type reader struct {
	h     *Handover
	diags diag.List
}

func (r *reader) errorf(rule string, off int, format string, args ...any) *diag.Diagnostic {
	return r.diags.Errorf(rule, r.h.pos(off), "", format, args...)
}

func skipSpace(b []byte, off int) int {
	for off < len(b) && (b[off] == ' ' || b[off] == '\t' || b[off] == '\r' || b[off] == '\n') {
		off++
	}
	return off
}

// skip returns the offset of the next value after off (past white
// space, a comma or a colon).
func skip(b []byte, off int) int {
	for off < len(b) && (b[off] == ' ' || b[off] == '\t' || b[off] == '\r' || b[off] == '\n' || b[off] == ',' || b[off] == ':') {
		off++
	}
	return off
}

// nodes reads the design brief's form: an array of node records, each
// decoded straight from the file (one pass: files of 100,000 records are
// common).
func (r *reader) nodes() {
	h := r.h
	dec := json.NewDecoder(bytes.NewReader(h.src))
	dec.DisallowUnknownFields()
	if _, err := dec.Token(); err != nil {
		return // the file is JSON: it cannot fail
	}
	for n := 1; dec.More(); n++ {
		at := skip(h.src, int(dec.InputOffset()))
		what := fmt.Sprintf("record %d", n)
		if at >= len(h.src) || h.src[at] != '{' {
			var raw json.RawMessage
			if dec.Decode(&raw) != nil {
				return
			}
			r.errorf(RuleHandoverField, at, "%s is %s, want an object %s", what, jsonKind(raw), nodeFields).Hint = formatHint
			h.partial = true
			continue
		}
		rec := &NodeRecord{h: h}
		err := dec.Decode(rec)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return // the file is JSON: it cannot happen
		}
		if rec = r.node(rec, err, h.src[at:dec.InputOffset()], at, what); rec != nil {
			h.Nodes = append(h.Nodes, rec)
		} else {
			h.partial = true
		}
	}
}

var nodeFields = `{"node", "module", "power_block", "cooling_loop", "rack", "nvlink_domain"}`

// node checks one record of the brief's form, decoded from raw (at
// offset at of the file) with err; nil when it cannot join.
func (r *reader) node(rec *NodeRecord, err error, raw []byte, at int, what string) *NodeRecord {
	rec.Pos = r.h.pos(at)
	if rec.Node != "" {
		what += " (node " + rec.Node + ")"
	}
	if err != nil {
		r.fieldError(err, raw, at, func(int) string { return what }, nodeRecordFields)
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"node", rec.Node}, {"module", rec.Module}, {"rack", rec.Rack}} {
		if f.v == "" {
			missing = append(missing, fmt.Sprintf("%q", f.name))
		}
	}
	if len(missing) > 0 {
		if err != nil {
			return nil // reported: a misspelt or mistyped field is likely what it lacks
		}
		r.diags.Errorf(RuleHandoverMissing, rec.Pos, "", "%s has no %s: it cannot be joined to a rack of the contract", what, strings.Join(missing, " and no ")).Hint =
			`each record is {"node": "gpu-a-r01-n01", "module": "ma", "power_block": "p1", "cooling_loop": "l1", "rack": "a-r01", "nvlink_domain": "a-r01"}`
		return nil
	}
	return rec
}

// racks reads the per-rack form: {"format", "site", "racks"}.
func (r *reader) racks() {
	h := r.h
	dec := json.NewDecoder(bytes.NewReader(h.src))
	if _, err := dec.Token(); err != nil {
		return // the file is JSON: it cannot fail
	}
	start := skipSpace(h.src, 0)
	format, formatAt := "", -1
	var lists []struct {
		raw []byte
		at  int
	}
	for dec.More() {
		keyAt := skip(h.src, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return
		}
		key, _ := tok.(string)
		at := skip(h.src, int(dec.InputOffset()))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			return
		}
		switch key {
		case "format", "site":
			var s string
			if json.Unmarshal(raw, &s) != nil {
				r.errorf(RuleHandoverField, at, "%q is %s, want a string", key, jsonKind(raw)).Hint = `{"format": "` + HandoverFormat + `", "site": "threemodule", "racks": [...]}`
				continue
			}
			if key == "format" {
				format, formatAt = s, at
			} else {
				h.Site, h.sitePos = s, h.pos(at)
			}
		case "racks":
			lists = append(lists, struct {
				raw []byte
				at  int
			}{raw, at})
		default:
			r.errorf(RuleHandoverField, keyAt, "unknown field %q: a %s file has \"format\", \"site\" and \"racks\"", key, HandoverFormat).Hint =
				didYouMean(key, []string{"format", "site", "racks"})
		}
	}
	switch {
	case formatAt < 0:
		r.errorf(RuleHandoverFormat, start, "the file has no \"format\": a per-rack handover inventory starts {\"format\": %q, …}", HandoverFormat).Hint =
			`add "format": "` + HandoverFormat + `", or give the design brief's node records as a JSON array`
	case format != HandoverFormat:
		r.errorf(RuleHandoverFormat, formatAt, "format %q: this version of seam reads %q", format, HandoverFormat).Hint =
			`write the file in the ` + HandoverFormat + ` form, or give the design brief's node records as a JSON array`
	}
	for _, l := range lists {
		r.rackList(l.raw, l.at)
	}
}

// rackList reads the value of "racks", which starts at offset at.
func (r *reader) rackList(raw []byte, at int) {
	if kind := jsonKind(raw); kind != "an array" {
		r.errorf(RuleHandoverField, at, "\"racks\" is %s, want an array of racks", kind).Hint = `"racks": [{"name": "a-r01", "module": "ma", "position": "r01", "trays": [...]}]`
		r.h.partial = true
		return
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = dec.Token() // the value is JSON already: its tokens cannot fail
	for n := 1; dec.More(); n++ {
		off := skip(raw, int(dec.InputOffset()))
		var elem json.RawMessage
		if dec.Decode(&elem) != nil {
			return
		}
		if rec := r.rack(elem, at+off, n); rec != nil {
			r.h.Racks = append(r.h.Racks, rec)
		} else {
			r.h.partial = true
		}
	}
}

const rackExample = `{"name": "a-r01", "module": "ma", "position": "r01", "trays": [...]}`

// rack reads one rack record; nil when it cannot join.
func (r *reader) rack(raw []byte, at, n int) *RackRecord {
	h := r.h
	what := fmt.Sprintf("rack %d", n)
	if kind := jsonKind(raw); kind != "an object" {
		r.errorf(RuleHandoverField, at, "%s is %s, want an object %s", what, kind, rackExample).Hint = formatHint
		return nil
	}
	rec := &RackRecord{h: h, raw: raw, at: at, Pos: h.pos(at)}
	err := strict(raw, rec)
	if len(rec.Trays) > 0 {
		// found now, so that resolving a position later reads only
		rec.trayAt = elementOffsets(raw, "trays")
	}
	if rec.Name != "" {
		what = "rack " + rec.Name
	}
	errTray := -2 // the tray a field error is in; -1 the rack itself
	if err != nil {
		off := r.fieldError(err, raw, at, r.inRack(rec, what), rackRecordFields)
		errTray = rec.trayIndex(off)
	}
	trays := rec.Trays[:0]
	for i, t := range rec.Trays {
		tpos := r.trayPos(rec, i)
		switch {
		case t != nil && i == errTray && (t.Slot <= 0 || t.Kind == ""):
			continue // reported: its slot or kind is of the wrong type
		case t == nil:
			r.diags.Errorf(RuleHandoverField, tpos, "", "%s: tray %d is null, want an object {\"slot\", \"kind\", …}", what, i+1).Hint =
				"remove the null, or describe the tray"
			continue
		case t.Spare && t.Slot > 0:
			r.diags.Errorf(RuleHandoverField, tpos, "", "%s: tray %d is a spare in slot U%d: a spare is on the shelf, in no slot", what, i+1, t.Slot).Hint =
				`drop its "slot" (a spare: {"spare": true, "kind": "compute", "serial": …}), or its "spare" if it is installed`
			continue
		case t.Spare && t.Kind == "" || !t.Spare && (t.Slot <= 0 || t.Kind == ""):
			var missing []string
			if t.Slot <= 0 && !t.Spare {
				missing = append(missing, `a "slot" (its lowest U, from 1)`)
			}
			if t.Kind == "" {
				missing = append(missing, `a "kind"`)
			}
			r.diags.Errorf(RuleHandoverMissing, tpos, "", "%s: tray %d has no %s: it cannot be matched to the rack design", what, i+1, strings.Join(missing, " and no ")).Hint =
				`{"slot": 5, "kind": "compute", …}`
			continue
		case !slices.Contains(TrayKinds, t.Kind):
			r.diags.Errorf(RuleHandoverField, tpos, "", "%s: tray at U%d: kind %q is not a tray kind (%s)", what, t.Slot, t.Kind, strings.Join(TrayKinds, ", ")).Hint =
				didYouMean(t.Kind, TrayKinds)
			continue
		}
		for _, kind := range sortedKeys(t.Parts) {
			if !slices.Contains(PartKinds, kind) {
				r.diags.Errorf(RuleHandoverField, tpos, "", "%s: tray at U%d: parts %q is not a part kind (%s): its serials are not read", what, t.Slot, kind, strings.Join(PartKinds, ", ")).Hint =
					didYouMean(kind, PartKinds)
				delete(t.Parts, kind)
			}
		}
		t.Pos = tpos
		trays = append(trays, t)
	}
	clear(rec.Trays[len(trays):])
	rec.Trays = trays
	if rec.Reserved {
		if n := len(slices.DeleteFunc(slices.Clone(trays), func(t *TrayRecord) bool { return t.Spare })); n > 0 {
			r.diags.Errorf(RuleHandoverField, rec.Pos, "", "%s is reserved, but lists %d installed trays: a reserved position holds nothing", what, n).Hint =
				`drop "reserved", or the trays (spares may stay: {"spare": true, …})`
		}
		if rec.Name == "" && rec.Position != "" {
			rec.Name = rec.Position // for messages and the join
		}
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"name", rec.Name}, {"module", rec.Module}} {
		if f.v == "" {
			missing = append(missing, fmt.Sprintf("%q", f.name))
		}
	}
	if len(missing) > 0 {
		if errTray != -1 {
			r.diags.Errorf(RuleHandoverMissing, rec.Pos, "", "%s has no %s: it cannot be joined to a rack of the contract", what, strings.Join(missing, " and no ")).Hint = rackExample
		}
		return nil
	}
	return rec
}

// trayPos is the position of tray i of a rack record, found when a
// diagnostic needs it.
func (r *reader) trayPos(rec *RackRecord, i int) diag.Pos {
	h := r.h
	return diag.Lazy(lazy(func() diag.Pos {
		offs := rec.trayOffsets()
		if i < len(offs) {
			return h.pos(rec.at + offs[i])
		}
		return rec.Pos.Resolved()
	}))
}

// trayOffsets are where the record's trays start in its bytes.
func (rec *RackRecord) trayOffsets() []int { return rec.trayAt }

// trayIndex is the index of the tray of a rack record that holds offset
// off of its bytes, or -1 (the rack's own fields).
func (rec *RackRecord) trayIndex(off int) int {
	offs := rec.trayOffsets()
	if len(offs) == 0 || off < offs[0] {
		return -1
	}
	return sort.SearchInts(offs, off+1) - 1
}

// inRack names the tray of a rack record that holds offset off of it,
// for a message: "rack a-r01, tray 3 (U3)".
func (r *reader) inRack(rec *RackRecord, what string) func(off int) string {
	return func(off int) string {
		i := rec.trayIndex(off)
		if i < 0 {
			return what
		}
		if i < len(rec.Trays) && rec.Trays[i] != nil && rec.Trays[i].Slot > 0 {
			return fmt.Sprintf("%s, tray %d (U%d)", what, i+1, rec.Trays[i].Slot)
		}
		return fmt.Sprintf("%s, tray %d", what, i+1)
	}
}
