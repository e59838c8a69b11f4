package inventory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
}

// NodeRecord is one record of the design brief's form.
type NodeRecord struct {
	Node         string   `json:"node"`
	Module       string   `json:"module"`
	PowerBlock   string   `json:"power_block"`
	CoolingLoop  string   `json:"cooling_loop"`
	Rack         string   `json:"rack"`
	NVLinkDomain string   `json:"nvlink_domain"`
	Pos          diag.Pos `json:"-"`
}

// RackRecord is one rack of the per-rack form.
type RackRecord struct {
	Name       string        `json:"name"`
	Module     string        `json:"module"`
	Position   string        `json:"position,omitempty"`
	PartNumber string        `json:"part_number,omitempty"`
	Serial     string        `json:"serial,omitempty"`
	AssetTag   string        `json:"asset_tag,omitempty"`
	Trays      []*TrayRecord `json:"trays"`
	Pos        diag.Pos      `json:"-"`
	raw        []byte        // the record's bytes, for positions inside it
	at         int           // where they start in the file
}

// TrayRecord is one tray of a rack as built.
type TrayRecord struct {
	Slot          int                 `json:"slot"`
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
// positions.
func ParseHandover(file string, b []byte) (*Handover, diag.List, error) {
	h := &Handover{File: file, src: b}
	var diags diag.List
	first := bytes.TrimLeft(b, " \t\r\n")
	switch {
	case len(first) == 0:
		diags.Errorf(RuleHandoverSyntax, diag.Pos{File: file, Line: 1, Col: 1}, "", "%s: empty: a handover inventory is a JSON array of node records or a %s object", file, HandoverFormat)
	case first[0] == '[':
		h.readNodes(&diags)
	case first[0] == '{':
		h.readRacks(&diags)
	default:
		diags.Errorf(RuleHandoverSyntax, h.pos(len(b)-len(first)), "", "%s: not JSON: a handover inventory is a JSON array of node records or a %s object", file, HandoverFormat)
	}
	return h, diags, nil
}

// pos is the line and column of a byte offset of the file.
func (h *Handover) pos(off int) diag.Pos {
	off = min(max(off, 0), len(h.src))
	line := 1 + bytes.Count(h.src[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(h.src[:off], '\n')
	return diag.Pos{File: h.file(), Line: line, Col: col}
}

// file is the file's name relative to the working directory when it is
// below it, as positions are everywhere.
func (h *Handover) file() string {
	if wd, err := os.Getwd(); err == nil && filepath.IsAbs(h.File) {
		if rel, err := filepath.Rel(wd, h.File); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return h.File
}

// lazy is a position found only when a diagnostic needs it.
type lazy func() diag.Pos

func (l lazy) Locate() diag.Pos { return l() }

// skip returns the offset of the next value after off (past white space
// and a comma).
func skip(b []byte, off int) int {
	for off < len(b) && (b[off] == ' ' || b[off] == '\t' || b[off] == '\r' || b[off] == '\n' || b[off] == ',') {
		off++
	}
	return off
}

func (h *Handover) readNodes(diags *diag.List) {
	dec := json.NewDecoder(bytes.NewReader(h.src))
	dec.DisallowUnknownFields()
	if _, err := dec.Token(); err != nil {
		h.syntax(diags, err, dec)
		return
	}
	for n := 1; dec.More(); n++ {
		at := skip(h.src, int(dec.InputOffset()))
		var rec NodeRecord
		if err := dec.Decode(&rec); err != nil {
			if h.recordError(diags, err, dec, at, fmt.Sprintf("record %d", n)) {
				return
			}
			continue
		}
		rec.Pos = h.pos(at)
		for _, f := range []struct{ name, v string }{{"node", rec.Node}, {"module", rec.Module}, {"rack", rec.Rack}} {
			if f.v == "" {
				diags.Errorf(RuleHandoverMissing, rec.Pos, "", "%s: record %d has no %q", h.File, n, f.name).Hint =
					`each record is {"node", "module", "power_block", "cooling_loop", "rack", "nvlink_domain"}`
			}
		}
		h.Nodes = append(h.Nodes, &rec)
	}
	if _, err := dec.Token(); err != nil {
		h.syntax(diags, err, dec)
	}
}

func (h *Handover) readRacks(diags *diag.List) {
	dec := json.NewDecoder(bytes.NewReader(h.src))
	dec.DisallowUnknownFields()
	if _, err := dec.Token(); err != nil {
		h.syntax(diags, err, dec)
		return
	}
	format := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			h.syntax(diags, err, dec)
			return
		}
		key, _ := tok.(string)
		at := skip(h.src, int(dec.InputOffset()))
		switch key {
		case "format", "site":
			var s string
			if err := dec.Decode(&s); err != nil {
				if h.recordError(diags, err, dec, at, key) {
					return
				}
				continue
			}
			if key == "format" {
				format = s
			} else {
				h.Site = s
			}
		case "racks":
			if !h.readRackList(diags, dec) {
				return
			}
		default:
			diags.Errorf(RuleHandoverField, h.pos(at), "", "%s: unknown field %q", h.File, key).Hint = `a handover inventory has "format", "site" and "racks"`
			var skipped json.RawMessage
			if err := dec.Decode(&skipped); err != nil {
				h.syntax(diags, err, dec)
				return
			}
		}
	}
	if format != HandoverFormat {
		diags.Errorf(RuleHandoverFormat, h.pos(0), "", "%s: format %q: want %q", h.File, format, HandoverFormat).Hint =
			`start the file with {"format": "` + HandoverFormat + `", …}, or give the design brief's node records as a JSON array`
	}
}

func (h *Handover) readRackList(diags *diag.List, dec *json.Decoder) bool {
	if _, err := dec.Token(); err != nil {
		h.syntax(diags, err, dec)
		return false
	}
	for n := 1; dec.More(); n++ {
		at := skip(h.src, int(dec.InputOffset()))
		var rec RackRecord
		if err := dec.Decode(&rec); err != nil {
			if h.recordError(diags, err, dec, at, fmt.Sprintf("rack %d", n)) {
				return false
			}
			continue
		}
		end := int(dec.InputOffset())
		rec.raw, rec.at, rec.Pos = h.src[at:end], at, h.pos(at)
		for i, t := range rec.Trays {
			if t == nil {
				diags.Errorf(RuleHandoverMissing, rec.Pos, "", "%s: rack %s: tray %d is null", h.File, rec.Name, i+1)
				rec.Trays[i] = &TrayRecord{}
				continue
			}
			t.Pos = diag.Lazy(lazy(func() diag.Pos { return h.pos(rec.at + elementOffset(rec.raw, "trays", i)) }))
		}
		if rec.Name == "" || rec.Module == "" {
			diags.Errorf(RuleHandoverMissing, rec.Pos, "", "%s: rack %d needs a \"name\" and a \"module\"", h.File, n).Hint =
				`{"name": "a-r01", "module": "ma", "position": "r01", "trays": [...]}`
		}
		h.Racks = append(h.Racks, &rec)
	}
	if _, err := dec.Token(); err != nil {
		h.syntax(diags, err, dec)
		return false
	}
	return true
}

// elementOffset is the offset, in an object's bytes, of element i of its
// array field key (0 when it cannot be found).
func elementOffset(raw []byte, key string, i int) int {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return 0
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return 0
		}
		if tok != key {
			var skipped json.RawMessage
			if dec.Decode(&skipped) != nil {
				return 0
			}
			continue
		}
		if _, err := dec.Token(); err != nil {
			return 0
		}
		for k := 0; dec.More(); k++ {
			at := skip(raw, int(dec.InputOffset()))
			if k == i {
				return at
			}
			var skipped json.RawMessage
			if dec.Decode(&skipped) != nil {
				return 0
			}
		}
	}
	return 0
}

// syntax reports a file that is not JSON where dec stopped.
func (h *Handover) syntax(diags *diag.List, err error, dec *json.Decoder) {
	off := int(dec.InputOffset())
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = int(se.Offset)
	}
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "the file ends in the middle of a value"
	}
	diags.Errorf(RuleHandoverSyntax, h.pos(off), "", "%s: not JSON: %s", h.File, msg).Hint = "fix the JSON; the first problem is where it stops"
}

// recordError reports why a record (at offset at) could not be decoded:
// an unknown field at the field, a wrong type at the value, bad JSON
// where it stops. It reports whether reading must stop (the JSON is
// broken); after a field of the wrong name or type the decoder has
// read the whole record, and the next can be read.
func (h *Handover) recordError(diags *diag.List, err error, dec *json.Decoder, at int, what string) bool {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		h.syntax(diags, err, dec)
		return true
	case errors.As(err, &te):
		diags.Errorf(RuleHandoverField, h.pos(int(te.Offset)), "", "%s: %s: %s is a JSON %s, want a %s", h.File, what, te.Field, te.Value, te.Type).Hint = "see docs/inventory.md for the handover format"
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.TrimPrefix(err.Error(), "json: unknown field ")
		off := at
		if i := bytes.Index(h.src[at:], []byte(field)); i >= 0 {
			off = at + i
		}
		diags.Errorf(RuleHandoverField, h.pos(off), "", "%s: %s: unknown field %s", h.File, what, field).Hint = "see docs/inventory.md for the handover format"
	default:
		diags.Errorf(RuleHandoverSyntax, h.pos(at), "", "%s: %s: %v", h.File, what, err)
		return true
	}
	return false
}
