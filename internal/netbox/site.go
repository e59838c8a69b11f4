package netbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// Site is what moves between seam and NetBox: the site's name, its
// racks as built (the handover's per-rack records) and its power panels
// (seam's power blocks) and feeds.
type Site struct {
	Name   string
	Racks  []*inventory.RackRecord
	Panels []string // power block keys
	Feeds  []Feed
}

// Feed is a power feed of a panel.
type Feed struct {
	Name  string // the feed's key, p1/block/a
	Panel string // its block's key
}

// FromInventory is the site of a graph (its power blocks and feeds) and
// its handover files (the racks as built).
func FromInventory(g *inventory.Graph, handovers []*inventory.Handover) (*Site, error) {
	s := &Site{}
	if sites := g.OfKind(inventory.KindSite); len(sites) > 0 {
		s.Name = g.El(sites[0]).Key
	}
	for _, h := range handovers {
		if len(h.Nodes) > 0 {
			return nil, fmt.Errorf("%s: the per-node handover form carries no racks as built: NetBox export needs the per-rack form (%s)", h.File, inventory.HandoverFormat)
		}
		s.Racks = append(s.Racks, h.Racks...)
	}
	for _, b := range g.OfKind(inventory.KindBlock) {
		s.Panels = append(s.Panels, g.El(b).Key)
	}
	for _, f := range g.OfKind(inventory.KindFeed) {
		s.Feeds = append(s.Feeds, Feed{Name: g.El(f).Key, Panel: g.El(g.Parent(f)).Key})
	}
	return s, nil
}

// Handover writes the site's racks in the per-rack handover form, one
// tray a line (the layout sat lifecycle export writes).
func (s *Site) Handover() []byte {
	var w bytes.Buffer
	fmt.Fprintf(&w, "{\"format\": %s, \"site\": %s, \"racks\": [\n", jstr(inventory.HandoverFormat), jstr(s.Name))
	for i, r := range s.Racks {
		if i > 0 {
			w.WriteString(",\n")
		}
		fmt.Fprintf(&w, "  {\"name\": %s, \"module\": %s", jstr(r.Name), jstr(r.Module))
		for _, f := range []struct{ k, v string }{{"position", r.Position}, {"part_number", r.PartNumber}, {"serial", r.Serial}, {"asset_tag", r.AssetTag}} {
			if f.v != "" {
				fmt.Fprintf(&w, ", %q: %s", f.k, jstr(f.v))
			}
		}
		w.WriteString(", \"trays\": [\n")
		lines := make([]string, 0, len(r.Trays))
		for _, t := range r.Trays {
			b, _ := json.Marshal(t) // as sat lifecycle export writes it
			lines = append(lines, "    "+string(b))
		}
		w.WriteString(strings.Join(lines, ",\n"))
		w.WriteString("\n  ]}")
	}
	w.WriteString("\n]}\n")
	return w.Bytes()
}

func jstr(v string) string { return jraw(v) }

func jraw(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
