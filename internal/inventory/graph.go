package inventory

import (
	"fmt"
	"iter"
	"math/bits"
	"slices"
	"strings"
	"sync"

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
	// KindSpare is a spare tray on the shelf, declared by the handover:
	// in no slot, powered, cooled or cabled by nothing, no node of a
	// scheduler, drawing no design power; its key names its tray kind
	// (ma/r01/spare-compute-01).
	KindSpare
	kinds
)

var kindNames = [kinds]string{"site", "module", "rack", Compute, ScaleUpSwitch, PowerShelf, TorSwitch, ManagementSwitch,
	PSU, "busbar", "manifold", GPU, CPU, NIC, DPU, BMC, ASIC, Drive, Memory,
	"block", "feed", "ups", "pdu", "loop", "cdu", "pump", "network", "shared", "scale-up-domain", "loadbank", "spare"}

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
	// Liquid and Reserved sit beside Kind, in one word with it, not a
	// word each: a site has millions of elements.
	Liquid bool
	// Reserved: a rack position the handover declares reserved and
	// empty: the rack holds nothing (no trays, no busbar, no nodes).
	Reserved bool
	// Slot is a tray's first U, a part's position in its tray, a PSU's
	// bay (from 1); 0 when it has none.
	Slot     int
	HeightU  int
	Identity *Identity // nil: not known (no as-built record)
	// PowerW is a tray's design draw, a PSU's or shelf's rating, a
	// rack's or busbar's design power, in W.
	PowerW int64
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
	byKey  map[string]ID // every element but parts, unless partsIndexed (see add)
	// while building: the parent whose parts are being added and where
	// they start, which elements have had parts added, and whether
	// parts are in byKey too
	partsOf      ID
	partsStart   int
	hadParts     []bool
	partsIndexed bool
	// while building, each element's kind: indexKinds reads them here,
	// not from elements a hundred times their size
	kindOf    []Kind
	rel       [relations]adjacency
	byKind    []ID    // the elements by kind, once sealed
	kindStart []int32 // kind k is byKind[kindStart[k]:kindStart[k+1]]
	// while building, the edges of every relation but Contains, whose
	// edges are parent's
	edges [relations]edgeList
	// Site is the contract's site the graph was built from.
	Site *Site
	// the site's records by element (index), built on first use
	indexOnce sync.Once
	ix        *siteIndex
}

// adjacency is one relation in compressed rows, both ways. outStart
// is out's row starts (non-nil once the graph is sealed).
type adjacency struct {
	out, in  rows
	outStart []int32
}

// rows are one direction of a relation: the elements of each row, and
// which elements have a row at all. Most elements have none in most
// relations (a GPU powers and cools nothing), so only the elements
// that have one take a row start; an element's row is found by the
// rank of its bit (a popcount), not by an array as long as the graph.
type rows struct {
	has   []uint64 // bit id: id has a row
	rank  []int32  // how many bits are set in has before word w
	start []int32  // row k is ids[start[k]:start[k+1]]
	ids   []ID
}

// of is id's row.
func (r *rows) of(id ID) []ID {
	w, bit := int(id>>6), uint64(1)<<(uint(id)&63)
	if id < 0 || w >= len(r.has) || r.has[w]&bit == 0 {
		return nil
	}
	k := r.rank[w] + int32(bits.OnesCount64(r.has[w]&(bit-1)))
	return r.ids[r.start[k]:r.start[k+1]]
}

// newGraph makes a graph for about capacity elements, keyed of them
// not parts (in the key index).
func newGraph(site *Site, capacity, keyed int) *Graph {
	return &Graph{Site: site, els: make([]Element, 0, capacity), parent: make([]ID, 0, capacity), byKey: make(map[string]ID, keyed),
		partsOf: None, hadParts: make([]bool, 0, capacity), kindOf: make([]Kind, 0, capacity)}
}

// edgeList is a relation's edges while the graph is built, in chunks
// that stay where they are: a slice grown by append copies itself on
// the way and allocates several times its final size, and a site has
// millions of edges.
type edgeList struct {
	chunks [][][2]ID
}

// edgeChunk is how many edges a chunk of an edgeList holds (128 KiB).
const edgeChunk = 1 << 14

func (l *edgeList) add(from, to ID) {
	if n := len(l.chunks); n == 0 || len(l.chunks[n-1]) == edgeChunk {
		l.chunks = append(l.chunks, make([][2]ID, 0, edgeChunk))
	}
	last := &l.chunks[len(l.chunks)-1]
	*last = append(*last, [2]ID{from, to})
}

// all yields the edges in the order they were added.
func (l *edgeList) all(yield func(from, to ID) bool) {
	for _, c := range l.chunks {
		for _, e := range c {
			if !yield(e[0], e[1]) {
				return
			}
		}
	}
}

// containsEdges yields the Contains edges, parent → child, in the
// order the children were added.
func (g *Graph) containsEdges(yield func(from, to ID) bool) {
	for id, p := range g.parent {
		if p != None && !yield(p, ID(id)) {
			return
		}
	}
}

// add adds an element under parent; a key taken already returns the
// element that has it and false. Parts (nine in ten elements of a site)
// stay out of the key index, which saves a fifth of the graph's memory
// and of its build: Lookup finds them through their tray, and a part's
// key is checked against the parts added before it in the same run
// under its parent, which are all its parent has while each parent's
// parts come in one run (as the builder adds them). Parts that come in
// two runs under one parent put every part in the index from then on.
func (g *Graph) add(parent ID, e Element) (ID, bool) {
	part := !g.partsIndexed && isPart(e.Kind) && parent != None
	if part && parent != g.partsOf {
		if g.hadParts[parent] {
			g.indexParts()
			part = false
		} else {
			g.hadParts[parent] = true
			g.partsOf, g.partsStart = parent, len(g.els)
		}
	}
	if part {
		for i := g.partsStart; i < len(g.els); i++ {
			if sameKey(g.els[i].Key, e.Key) {
				return ID(i), false
			}
		}
	} else if id, ok := g.byKey[e.Key]; ok {
		return id, false
	}
	id := ID(len(g.els))
	g.els = append(g.els, e)
	g.parent = append(g.parent, parent)
	g.hadParts = append(g.hadParts, false)
	g.kindOf = append(g.kindOf, e.Kind)
	if !part {
		g.byKey[e.Key] = id
		g.partsOf = None
	}
	return id, true
}

// indexParts puts every part in the key index.
func (g *Graph) indexParts() {
	g.partsIndexed, g.partsOf = true, None
	for i := range g.els {
		if e := &g.els[i]; isPart(e.Kind) && g.parent[i] != None {
			if _, ok := g.byKey[e.Key]; !ok {
				g.byKey[e.Key] = ID(i)
			}
		}
	}
}

// sameKey compares two keys from their ends: parts of one tray differ
// only there.
func sameKey(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := len(a) - 1; i >= 0; i-- {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// link adds an edge of r from → to.
func (g *Graph) link(r Relation, from, to ID) {
	if from != None && to != None {
		g.edges[r].add(from, to)
	}
}

// seal builds the adjacency of every relation; the graph is read-only
// afterwards. Rows are sorted by element and free of duplicates; they
// are built by counting (no sort of all the edges), so that sealing a
// graph of millions of elements takes a fraction of a second.
func (g *Graph) seal() {
	n := len(g.els)
	cursor := make([]int32, n)
	// Contains has no in rows: an element's one container is its
	// parent (In)
	contains := outRows(g.containsEdges, n, cursor)
	g.rel[Contains] = adjacency{out: contains, outStart: contains.start}
	for r := Contains + 1; r < relations; r++ {
		g.rel[r] = adjacent(g.edges[r].all, n, cursor)
		g.edges[r] = edgeList{}
	}
	g.indexKinds()
	g.hadParts, g.kindOf = nil, nil
}

// indexKinds lists the elements by kind, each kind in id order.
func (g *Graph) indexKinds() {
	g.kindStart = make([]int32, kinds+1)
	for _, k := range g.kindOf {
		if k < kinds {
			g.kindStart[k+1]++
		}
	}
	for k := range kinds {
		g.kindStart[k+1] += g.kindStart[k]
	}
	g.byKind = make([]ID, g.kindStart[kinds])
	at := slices.Clone(g.kindStart)
	for i, k := range g.kindOf {
		if k < kinds {
			g.byKind[at[k]] = ID(i)
			at[k]++
		}
	}
}

// adjacent builds one relation's rows from its edges: out rows by
// counting, each sorted and de-duplicated, then the in rows from them
// (sorted by construction). cursor is scratch of n entries.
func adjacent(edges iter.Seq2[ID, ID], n int, cursor []int32) adjacency {
	out := outRows(edges, n, cursor)
	return adjacency{out: out, in: inRows(out, n, cursor), outStart: out.start}
}

// outRows are the out rows of edges, each sorted and de-duplicated.
func outRows(edges iter.Seq2[ID, ID], n int, cursor []int32) rows {
	clear(cursor)
	total := 0
	for from := range edges {
		cursor[from]++
		total++
	}
	out := newRows(n, cursor, total)
	for from, to := range edges {
		out.ids[cursor[from]] = to
		cursor[from]++
	}
	// sort and de-duplicate each row, compacting them in place
	w := int32(0)
	for k := range len(out.start) - 1 {
		row := out.ids[out.start[k]:out.start[k+1]]
		if !slices.IsSorted(row) {
			slices.Sort(row)
		}
		out.start[k] = w
		for j, to := range row {
			if j == 0 || to != row[j-1] {
				out.ids[w] = to
				w++
			}
		}
	}
	out.start[len(out.start)-1] = w
	out.ids = out.ids[:w:w]
	return out
}

// inRows are the in rows of out's edges, sorted by construction.
func inRows(out rows, n int, cursor []int32) rows {
	clear(cursor)
	for _, to := range out.ids {
		cursor[to]++
	}
	in := newRows(n, cursor, len(out.ids))
	for word, bitsOf := range out.has {
		for bitsOf != 0 {
			from := ID(word<<6 + bits.TrailingZeros64(bitsOf))
			bitsOf &= bitsOf - 1
			for _, to := range out.of(from) {
				in.ids[cursor[to]] = from
				cursor[to]++
			}
		}
	}
	return in
}

// newRows lays out rows for the elements whose count (of n) is not
// zero, for total entries; it leaves in count each element's first
// slot, to fill.
func newRows(n int, count []int32, total int) rows {
	r := rows{has: make([]uint64, (n+63)/64), rank: make([]int32, (n+63)/64), ids: make([]ID, total)}
	k := int32(0)
	for id, c := range count[:n] {
		if id&63 == 0 {
			r.rank[id>>6] = k
		}
		if c > 0 {
			r.has[id>>6] |= 1 << (uint(id) & 63)
			k++
		}
	}
	r.start = make([]int32, k+1)
	at := int32(0)
	k = 0
	for id, c := range count[:n] {
		if c > 0 {
			r.start[k] = at
			count[id] = at
			at += c
			k++
		}
	}
	r.start[k] = at
	return r
}

// Len is how many elements the graph has.
func (g *Graph) Len() int { return len(g.els) }

// El is element id.
func (g *Graph) El(id ID) *Element { return &g.els[id] }

// Lookup finds an element by its key.
func (g *Graph) Lookup(key string) (ID, bool) {
	if id, ok := g.byKey[key]; ok {
		return id, true
	}
	// a part: among its tray's children
	i := strings.LastIndexByte(key, '/')
	if i < 0 || g.partsIndexed {
		return None, false
	}
	parent, ok := g.byKey[key[:i]]
	if !ok {
		return None, false
	}
	if g.rel[Contains].outStart == nil { // not sealed: the children so far
		for id := parent + 1; int(id) < len(g.els); id++ {
			if g.parent[id] == parent && g.els[id].Key == key {
				return id, true
			}
		}
		return None, false
	}
	for _, c := range g.Children(parent) {
		if g.els[c].Key == key {
			return c, true
		}
	}
	return None, false
}

// Parent is the element that contains id, or None.
func (g *Graph) Parent(id ID) ID { return g.parent[id] }

// Children are the elements id contains, in the order they were added.
func (g *Graph) Children(id ID) []ID { return g.Out(Contains, id) }

// Out are the elements r leads to from id.
func (g *Graph) Out(r Relation, id ID) []ID { return g.rel[r].out.of(id) }

// In are the elements r leads from to id.
func (g *Graph) In(r Relation, id ID) []ID {
	if r == Contains {
		// its parent, which seal does not copy into rows
		if !g.sealed() || id < 0 || int(id) >= len(g.parent) || g.parent[id] == None {
			return nil
		}
		return g.parent[id : id+1 : id+1]
	}
	return g.rel[r].in.of(id)
}

// Edges counts the edges of r.
func (g *Graph) Edges(r Relation) int { return len(g.rel[r].out.ids) }

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
	if g.kindStart != nil && kind < kinds {
		return slices.Clone(g.byKind[g.kindStart[kind]:g.kindStart[kind+1]])
	}
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
// Slurm, Kubernetes or BMC name, or a serial. A name that two elements
// answer to (two trays sharing a BMC name or a serial, which vet
// reports) finds neither: FindAll and Ambiguous say which.
func (g *Graph) Find(name string) (ID, bool) {
	ids := g.FindAll(name)
	if len(ids) != 1 {
		return None, false
	}
	return ids[0], true
}

// FindAll is every element that answers to name: its key (which is
// unique), else each element with that Slurm, Kubernetes or BMC name or
// serial.
func (g *Graph) FindAll(name string) []ID {
	if id, ok := g.Lookup(name); ok {
		return []ID{id}
	}
	name = strings.TrimSpace(name)
	var out []ID
	for i := range g.els {
		e := &g.els[i]
		if n := e.Names; n != nil && (n.Slurm == name || n.Kubernetes == name || n.BMC == name) ||
			e.Identity != nil && e.Identity.Serial == name {
			out = append(out, ID(i))
		}
	}
	return out
}

// Ambiguous is the error for a name that several elements answer to
// (FindAll): it names them by key and says how to pick one.
func (g *Graph) Ambiguous(name string, ids []ID) error {
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = g.els[id].Key
	}
	return fmt.Errorf("%q names %d elements of site %s (%s): name one by its key; contractc vet reports the shared name (INV024 for a BMC name)",
		name, len(ids), g.Site.Name, strings.Join(keys, ", "))
}
