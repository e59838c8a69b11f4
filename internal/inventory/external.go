package inventory

// Graphs read from outside seam (a Redfish tree, an export read back)
// are built through these: NewGraph, then Add every element (a parent
// before its children) and Link the other relations, then Seal. Add and
// Link do nothing once the graph is sealed; Contains edges come from
// Add's parent only.

// NewGraph starts an empty graph of site (which may be a bare
// &Site{Name: …}), sized for about capacity elements.
func NewGraph(site *Site, capacity int) *Graph {
	capacity = max(capacity, 0)
	return newGraph(site, capacity, capacity/4)
}

// Add adds an element under parent (None: a root). A key the graph has
// already returns the element that has it and false.
func (g *Graph) Add(parent ID, e Element) (ID, bool) {
	if g.sealed() || (parent != None && (parent < 0 || int(parent) >= len(g.els))) {
		return None, false
	}
	return g.add(parent, e)
}

// Link adds an edge of r from → to; it reports false for Contains, for
// an element the graph does not have, and once the graph is sealed.
func (g *Graph) Link(r Relation, from, to ID) bool {
	n := ID(len(g.els))
	if g.sealed() || r == Contains || r >= relations || from < 0 || to < 0 || from >= n || to >= n {
		return false
	}
	g.link(r, from, to)
	return true
}

// Seal builds the graph's adjacency; it is read-only afterwards.
func (g *Graph) Seal() {
	if !g.sealed() {
		g.seal()
	}
}

// sealed reports whether seal has run: it leaves every relation's rows
// allocated.
func (g *Graph) sealed() bool { return g.rel[Contains].outStart != nil }
