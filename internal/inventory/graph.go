package inventory

import (
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/diag"
)

// Kind is what an element of the graph is.
type Kind uint8

// Element kinds. Trays take the tray kinds' names, parts the part
// kinds'.
const (
	KindSite Kind = iota
	KindModule
	KindRack
	KindCompute // a compute tray: a node
	KindScaleUpSwitch
	KindPowerShelf
	KindTorSwitch
	KindManagementSwitch
	KindPSU
	KindBusbar
	KindManifold
	KindGPU
	KindCPU
	KindNIC
	KindDPU
	KindBMC
	KindASIC
	KindDrive
	KindMemory
	KindBlock
	KindFeed
	KindUPS
	KindPDU
	KindLoop
	KindCDU
	KindPump
	KindNetwork
	KindShared
	KindScaleUpDomain
	KindLoadBank
	kinds
)

var kindNames = [kinds]string{"site", "module", "rack", Compute, ScaleUpSwitch, PowerShelf, TorSwitch, ManagementSwitch,
	PSU, "busbar", "manifold", GPU, CPU, NIC, DPU, BMC, ASIC, Drive, Memory,
	"block", "feed", "ups", "pdu", "loop", "cdu", "pump", "network", "shared", "scale-up-domain", "loadbank"}

func (k Kind) String() string {
	if k < kinds {
		return kindNames[k]
	}
	return "unknown"
}

// KindOf returns the kind called name.
func KindOf(name string) (Kind, bool) {
	for k, n := range kindNames {
		if n == name {
			return Kind(k), true
		}
	}
	return 0, false
}

// IsTray reports whether k occupies rack slots.
func (k Kind) IsTray() bool { return k >= KindCompute && k <= KindManagementSwitch }

// Relation is a kind of edge between elements.
type Relation uint8

// Relations. Contains is the element tree (Parent and Children); the
// others point from the element that gives to the one that takes:
// feed → PDU, PSU → busbar, busbar → tray (powers); CDU → manifold,
// manifold → tray (cools); tray → switch, tray → scale-up domain
// (connects); tray → its BMC (managed_by).
const (
	Contains Relation = iota
	Powers
	Cools
	Connects
	ManagedBy
	relations
)

var relationNames = [relations]string{"contains", "powers", "cools", "connects", "managed_by"}

func (r Relation) String() string { return relationNames[r] }

// ID is an element's index in its graph.
type ID int32

// None is no element.
const None ID = -1

// Identity is what a part is, wherever it sits: it keeps its identity
// when it moves.
type Identity struct {
	PartNumber string
	Serial     string
	AssetTag   string
	Model      string
	Firmware   map[string]string
}

// Element is one thing of the site.
type Element struct {
	// Key is the element's location path: "ma/r01/compute-03/gpu-2",
	// "p1/block/a", "l1/loop/cdu-2".
	Key  string
	Kind Kind
	// Slot is a tray's first U, a part's position in its tray, a PSU's
	// bay (from 1); 0 when it has none.
	Slot     int
	HeightU  int
	Identity *Identity // nil: not known (no as-built record)
	// PowerW is a tray's design draw, a PSU's or shelf's rating, a
	// rack's or busbar's design power, in W.
	PowerW int64
	Liquid bool
	// Names are a compute tray's names in Slurm, Kubernetes and its BMC.
	Names *NodeNames
	// BMCAddress is where a BMC answers.
	BMCAddress string
	// Domain is the scale-up domain a tray's as-built record names.
	Domain string
	Pos    diag.Pos
}

// Graph is the site as elements and their relations.
type Graph struct {
	els    []Element
	parent []ID
	byKey  map[string]ID
	rel    [relations]adjacency
	edges  [relations][][2]ID // while building
	// Site is the contract's site the graph was built from.
	Site *Site
}

// adjacency is one relation in compressed rows, both ways.
type adjacency struct {
	outStart, inStart []int32
	out, in           []ID
}

func newGraph(site *Site, capacity int) *Graph {
	return &Graph{Site: site, els: make([]Element, 0, capacity), parent: make([]ID, 0, capacity), byKey: make(map[string]ID, capacity)}
}

// add adds an element under parent; a key taken already returns the
// element that has it and false.
func (g *Graph) add(parent ID, e Element) (ID, bool) {
	if id, ok := g.byKey[e.Key]; ok {
		return id, false
	}
	id := ID(len(g.els))
	g.els = append(g.els, e)
	g.parent = append(g.parent, parent)
	g.byKey[e.Key] = id
	if parent != None {
		g.edges[Contains] = append(g.edges[Contains], [2]ID{parent, id})
	}
	return id, true
}

// link adds an edge of r from → to.
func (g *Graph) link(r Relation, from, to ID) {
	if from != None && to != None {
		g.edges[r] = append(g.edges[r], [2]ID{from, to})
	}
}

// seal builds the adjacency of every relation; the graph is read-only
// afterwards.
func (g *Graph) seal() {
	n := len(g.els)
	for r := range relations {
		edges := g.edges[r]
		slices.SortFunc(edges, func(a, b [2]ID) int {
			if a[0] != b[0] {
				return int(a[0] - b[0])
			}
			return int(a[1] - b[1])
		})
		edges = slices.Compact(edges)
		a := adjacency{outStart: make([]int32, n+1), inStart: make([]int32, n+1), out: make([]ID, len(edges)), in: make([]ID, len(edges))}
		for _, e := range edges {
			a.outStart[e[0]+1]++
			a.inStart[e[1]+1]++
		}
		for i := 0; i < n; i++ {
			a.outStart[i+1] += a.outStart[i]
			a.inStart[i+1] += a.inStart[i]
		}
		outAt, inAt := slices.Clone(a.outStart[:n]), slices.Clone(a.inStart[:n])
		for _, e := range edges {
			a.out[outAt[e[0]]] = e[1]
			outAt[e[0]]++
			a.in[inAt[e[1]]] = e[0]
			inAt[e[1]]++
		}
		g.rel[r] = a
		g.edges[r] = nil
	}
}

// Len is how many elements the graph has.
func (g *Graph) Len() int { return len(g.els) }

// El is element id.
func (g *Graph) El(id ID) *Element { return &g.els[id] }

// Lookup finds an element by its key.
func (g *Graph) Lookup(key string) (ID, bool) {
	id, ok := g.byKey[key]
	return id, ok
}

// Parent is the element that contains id, or None.
func (g *Graph) Parent(id ID) ID { return g.parent[id] }

// Children are the elements id contains, in the order they were added.
func (g *Graph) Children(id ID) []ID { return g.Out(Contains, id) }

// Out are the elements r leads to from id.
func (g *Graph) Out(r Relation, id ID) []ID {
	a := &g.rel[r]
	return a.out[a.outStart[id]:a.outStart[id+1]]
}

// In are the elements r leads from to id.
func (g *Graph) In(r Relation, id ID) []ID {
	a := &g.rel[r]
	return a.in[a.inStart[id]:a.inStart[id+1]]
}

// Edges counts the edges of r.
func (g *Graph) Edges(r Relation) int { return len(g.rel[r].out) }

// Ancestor is the nearest element of kind that contains id (id itself
// when it is of kind), or None.
func (g *Graph) Ancestor(id ID, kind Kind) ID {
	for ; id != None; id = g.parent[id] {
		if g.els[id].Kind == kind {
			return id
		}
	}
	return None
}

// OfKind lists the elements of kind, in the order they were added.
func (g *Graph) OfKind(kind Kind) []ID {
	var out []ID
	for i := range g.els {
		if g.els[i].Kind == kind {
			out = append(out, ID(i))
		}
	}
	return out
}

// Descendants lists id and everything it contains, depth first.
func (g *Graph) Descendants(id ID) []ID {
	out := []ID{id}
	for i := 0; i < len(out); i++ {
		out = append(out, g.Children(out[i])...)
	}
	return out
}

// Find resolves what a person may call an element: its key, a node's
// Slurm, Kubernetes or BMC name, or a serial.
func (g *Graph) Find(name string) (ID, bool) {
	if id, ok := g.byKey[name]; ok {
		return id, true
	}
	name = strings.TrimSpace(name)
	for i := range g.els {
		e := &g.els[i]
		if n := e.Names; n != nil && (n.Slurm == name || n.Kubernetes == name || n.BMC == name) {
			return ID(i), true
		}
		if e.Identity != nil && e.Identity.Serial == name {
			return ID(i), true
		}
	}
	return None, false
}
