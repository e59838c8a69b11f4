package firmware

import (
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
)

// Site is the inventory as a rollout sees it: the trays whose firmware
// sat discover reads through their BMCs (compute trays, scale-up switch
// trays, power shelves), by rack, with their model, tray group and
// scale-up domain.
type Site struct {
	G     *inventory.Graph
	Name  string
	Racks []*Rack // sorted by key
	Trays []*Tray // sorted by key
	byKey map[string]*Tray
	// byName finds a node's tray by its Slurm or Kubernetes name
	byName map[string]*Tray
	// domainRacks are the racks of each scale-up domain, sorted
	domainRacks map[inventory.ID][]*Rack
}

// Rack is a rack with trays a rollout may update.
type Rack struct {
	ID            inventory.ID
	Key           string // ma/r01
	Module        string
	FailureDomain string
	Design        string // its rack design's name ("" none)
	Trays         []*Tray
	Nodes         int
}

// Tray is one tray a rollout may update.
type Tray struct {
	ID    inventory.ID
	Key   string // ma/r01/compute-03
	Kind  inventory.Kind
	Rack  *Rack
	Model string // the rack design's model of its tray group
	// Group is DESIGN/TRAY: the rack design and its tray group
	// (gb300-nvl72/compute)
	Group string
	// Domain is its scale-up domain (None: none)
	Domain inventory.ID
	// Node is a compute tray's Slurm name
	Node string
	// Declared is the firmware the handover inventory gives it
	Declared map[string]string
	// BMC is its BMC part (None: none in the design)
	BMC inventory.ID
}

// discovered are the tray kinds sat discover reads.
var discovered = []inventory.Kind{inventory.KindCompute, inventory.KindScaleUpSwitch, inventory.KindPowerShelf}

// NewSite indexes a graph's racks and trays.
func NewSite(g *inventory.Graph) *Site {
	s := &Site{G: g, byKey: map[string]*Tray{}, byName: map[string]*Tray{}, domainRacks: map[inventory.ID][]*Rack{}}
	if g.Site != nil {
		s.Name = g.Site.Name
	}
	designs, fds := s.rackDesigns()
	for _, rid := range g.OfKind(inventory.KindRack) {
		e := g.El(rid)
		r := &Rack{ID: rid, Key: e.Key, Design: designs[e.Key]}
		if m := g.Ancestor(rid, inventory.KindModule); m != inventory.None {
			r.Module = g.El(m).Key
			r.FailureDomain = fds[r.Module]
		}
		for _, c := range g.Children(rid) {
			if slices.Contains(discovered, g.El(c).Kind) {
				r.Trays = append(r.Trays, s.tray(r, c))
			}
		}
		if len(r.Trays) > 0 {
			s.Racks = append(s.Racks, r)
		}
	}
	slices.SortFunc(s.Racks, func(a, b *Rack) int { return strings.Compare(a.Key, b.Key) })
	for _, r := range s.Racks {
		slices.SortFunc(r.Trays, func(a, b *Tray) int { return strings.Compare(a.Key, b.Key) })
		s.Trays = append(s.Trays, r.Trays...)
		for _, d := range r.domains() {
			s.domainRacks[d] = append(s.domainRacks[d], r)
		}
	}
	return s
}

// rackDesigns maps each rack's key to its design's name, and each
// module to its failure domain.
func (s *Site) rackDesigns() (designs, fds map[string]string) {
	designs, fds = map[string]string{}, map[string]string{}
	if s.G.Site == nil {
		return designs, fds
	}
	for _, m := range s.G.Site.Modules {
		fds[m.ID] = m.FailureDomain
		for _, r := range m.Racks {
			if r.DesignOf != nil {
				designs[r.ID] = r.DesignOf.Name
			}
		}
	}
	return designs, fds
}

func (s *Site) tray(r *Rack, id inventory.ID) *Tray {
	g := s.G
	e := g.El(id)
	t := &Tray{ID: id, Key: e.Key, Kind: e.Kind, Rack: r, Domain: inventory.None, BMC: inventory.None, Group: r.Design + "/" + group(r.Key, e.Key)}
	if e.Identity != nil {
		t.Model, t.Declared = e.Identity.Model, e.Identity.Firmware
	}
	if e.Kind == inventory.KindCompute {
		r.Nodes++
		if e.Names != nil {
			t.Node = e.Names.Slurm
			for _, n := range []string{e.Names.Slurm, e.Names.Kubernetes} {
				if n != "" {
					s.byName[n] = t
				}
			}
		}
	}
	for _, d := range g.Out(inventory.Connects, id) {
		if g.El(d).Kind == inventory.KindScaleUpDomain {
			t.Domain = d
		}
	}
	for _, c := range g.Children(id) {
		if g.El(c).Kind == inventory.KindBMC {
			t.BMC = c
		}
	}
	s.byKey[t.Key] = t
	return t
}

// group is a tray's group in its rack design: its key's last part
// without the tray's number ("compute-03" → "compute").
func group(rack, key string) string {
	name := strings.TrimPrefix(key, rack+"/")
	if i := strings.LastIndexByte(name, '-'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
		return name[:i]
	}
	return name
}

// domains are the scale-up domains of the rack's trays.
func (r *Rack) domains() []inventory.ID {
	var out []inventory.ID
	for _, t := range r.Trays {
		if t.Domain != inventory.None && !slices.Contains(out, t.Domain) {
			out = append(out, t.Domain)
		}
	}
	return out
}

// Tray returns the tray with key, or nil.
func (s *Site) Tray(key string) *Tray { return s.byKey[key] }

// Node finds a node's tray by its key or its Slurm or Kubernetes name.
func (s *Site) Node(name string) *Tray {
	if t := s.byKey[name]; t != nil && t.Kind == inventory.KindCompute {
		return t
	}
	return s.byName[name]
}

// For is the baseline a tray follows: its tray group's, else its
// model's (nil: none).
func (set *Set) For(t *Tray) *Baseline {
	if b := set.Baselines[t.Group]; b != nil {
		return b
	}
	if t.Model == "" {
		return nil
	}
	return set.Baselines[t.Model]
}
