package lifecycle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// Forms of a handover export.
const (
	FormRacks = "racks" // the per-rack form, seam.handover/v1
	FormNodes = "nodes" // the design brief's per-node records
)

// Export writes the as-built inventory back in a handover form. The
// per-rack form is laid out as the handover file it was imported from
// is (one rack per line, one tray per line, racks and trays in their
// order there): a file in that layout comes back byte for byte.
func (s *Store) Export(ctx context.Context, form string) ([]byte, error) {
	si, err := s.storeInfo(ctx)
	if err != nil {
		return nil, err
	}
	racks, err := s.query(ctx, "SELECT "+elementCols+" FROM elements WHERE kind = 'rack' AND record <> '' ORDER BY ord, key")
	if err != nil {
		return nil, err
	}
	switch form {
	case FormRacks, "":
		return s.exportRacks(ctx, si.Site, racks)
	case FormNodes:
		return s.exportNodes(ctx, racks)
	}
	return nil, fmt.Errorf("export form %q: want %s or %s", form, FormRacks, FormNodes)
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]*Element, error) {
	return s.queryOn(ctx, s.db, q, args...)
}

func jsonString(v string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

func (s *Store) exportRacks(ctx context.Context, site string, racks []*Element) ([]byte, error) {
	var w bytes.Buffer
	fmt.Fprintf(&w, "{\"format\": %s, \"site\": %s, \"racks\": [\n", jsonString(inventory.HandoverFormat), jsonString(site))
	for i, r := range racks {
		var h rackHead
		if err := json.Unmarshal(r.Record, &h); err != nil {
			return nil, fmt.Errorf("%s: its as-built record: %w", r.Key, err)
		}
		if i > 0 {
			w.WriteString(",\n")
		}
		fmt.Fprintf(&w, "  {\"name\": %s, \"module\": %s", jsonString(h.Name), jsonString(h.Module))
		for _, f := range []struct{ k, v string }{{"position", h.Position}, {"part_number", h.PartNumber}, {"serial", h.Serial}, {"asset_tag", h.AssetTag}} {
			if f.v != "" {
				fmt.Fprintf(&w, ", %q: %s", f.k, jsonString(f.v))
			}
		}
		w.WriteString(", \"trays\": [\n")
		trays, err := s.query(ctx, "SELECT "+elementCols+" FROM elements WHERE parent = ? AND record <> '' ORDER BY ord, slot", r.Key)
		if err != nil {
			return nil, err
		}
		lines := make([]string, 0, len(trays))
		for _, t := range trays {
			var rec inventory.TrayRecord
			if err := json.Unmarshal(t.Record, &rec); err != nil {
				return nil, fmt.Errorf("%s: its as-built record: %w", t.Key, err)
			}
			b, err := json.Marshal(rec)
			if err != nil {
				return nil, err
			}
			lines = append(lines, "    "+string(b))
		}
		w.WriteString(strings.Join(lines, ",\n"))
		w.WriteString("\n  ]}")
	}
	w.WriteString("\n]}\n")
	return w.Bytes(), nil
}

func (s *Store) exportNodes(ctx context.Context, racks []*Element) ([]byte, error) {
	var recs []string
	for _, r := range racks {
		var h rackHead
		if err := json.Unmarshal(r.Record, &h); err != nil {
			return nil, fmt.Errorf("%s: its as-built record: %w", r.Key, err)
		}
		nodes, err := s.query(ctx, "SELECT "+elementCols+" FROM elements WHERE parent = ? AND kind = 'compute' ORDER BY slot", r.Key)
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			var t inventory.TrayRecord
			if n.Record == nil || json.Unmarshal(n.Record, &t) != nil || t.Node == nil || t.Node.Slurm == "" {
				continue
			}
			var at struct {
				PowerBlock  string `json:"power_block"`
				CoolingLoop string `json:"cooling_loop"`
			}
			_ = json.Unmarshal([]byte(n.attrs), &at)
			domain := t.ScaleUpDomain
			if domain == "" {
				domain = h.Name
			}
			b, _ := json.Marshal(inventory.NodeRecord{Node: t.Node.Slurm, Module: n.Module, PowerBlock: at.PowerBlock, CoolingLoop: at.CoolingLoop, Rack: h.Name, NVLinkDomain: domain})
			recs = append(recs, "  "+string(b))
		}
	}
	if len(recs) == 0 {
		return []byte("[]\n"), nil
	}
	return []byte("[\n" + strings.Join(recs, ",\n") + "\n]\n"), nil
}
