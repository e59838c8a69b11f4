package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// Switch is a switch of Slurm's tree: a leaf lists its nodes, a parent
// its child switches.
type Switch struct {
	Name     string
	Nodes    []string
	Switches []string
	Line     int // in a file read back; 0 for a generated switch
}

// Tree lists the switches in topology.conf's order, the design brief's:
// each module's leaves then the module, loose leaves, then the root.
func (t *Topology) Tree() []Switch {
	var out []Switch
	var top []string
	for _, m := range t.Modules {
		var children []string
		for _, l := range m.Leaves {
			out = append(out, leafSwitch(l))
			children = append(children, l.Name)
		}
		out = append(out, Switch{Name: m.Name, Switches: children})
		top = append(top, m.Name)
	}
	for _, l := range t.Loose {
		out = append(out, leafSwitch(l))
		top = append(top, l.Name)
	}
	return append(out, Switch{Name: t.Root, Switches: top})
}

func leafSwitch(l *Leaf) Switch {
	names := make([]string, len(l.Nodes))
	for i, n := range l.Nodes {
		names[i] = n.Slurm
	}
	return Switch{Name: l.Name, Nodes: names}
}

// LiveTree is the tree a running Slurm reports: a switch with child
// switches keeps only those (Slurm lists every node below a parent, so
// its Nodes are not edges of its own).
func LiveTree(st *scheduler.State) []Switch {
	out := make([]Switch, 0, len(st.Switches))
	for _, s := range st.Switches {
		sw := Switch{Name: s.Name, Switches: s.Switches, Line: s.Line}
		if len(s.Switches) == 0 {
			sw.Nodes = s.Nodes
		}
		out = append(out, sw)
	}
	return out
}

// Edge is a parent → child edge of a tree: switch → switch, leaf → node.
type Edge struct{ Parent, Child string }

// Edges lists a tree's parent → child edges, sorted.
func Edges(sw []Switch) []Edge {
	var out []Edge
	for _, s := range sw {
		for _, c := range s.Switches {
			out = append(out, Edge{s.Name, c})
		}
		for _, n := range s.Nodes {
			out = append(out, Edge{s.Name, n})
		}
	}
	slices.SortFunc(out, func(a, b Edge) int {
		if c := strings.Compare(a.Parent, b.Parent); c != 0 {
			return c
		}
		return strings.Compare(a.Child, b.Child)
	})
	return slices.Compact(out)
}

// EdgeDiff is what edges one tree has and another lacks.
type EdgeDiff struct{ Added, Removed []Edge }

// Empty reports whether the trees have the same edges.
func (d EdgeDiff) Empty() bool { return len(d.Added) == 0 && len(d.Removed) == 0 }

// DiffEdges compares the edges of from and to: Added are to's alone.
func DiffEdges(from, to []Switch) EdgeDiff {
	a, b := Edges(from), Edges(to)
	var d EdgeDiff
	i, j := 0, 0
	less := func(x, y Edge) bool { return x.Parent < y.Parent || x.Parent == y.Parent && x.Child < y.Child }
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || i < len(a) && less(a[i], b[j]):
			d.Removed = append(d.Removed, a[i])
			i++
		case i == len(a) || less(b[j], a[i]):
			d.Added = append(d.Added, b[j])
			j++
		default:
			i++
			j++
		}
	}
	return d
}

// Conf is a topology.conf read back: the tree plugin's switches, or the
// block plugin's blocks and sizes.
type Conf struct {
	Source   string
	Switches []Switch
	Blocks   []Switch // a block as a leaf: its name and nodes
	Sizes    []int
}

// ParseConf reads topology.conf as topology.conf(5) describes it:
// SwitchName= with Switches=, Nodes= and LinkSpeed=, or BlockName= with
// Nodes= and one BlockSizes=; parameter names in any case, '#' comments.
func ParseConf(source string, b []byte) (*Conf, error) {
	c := &Conf{Source: source}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 256*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := c.parseLine(line, n); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(c.Switches) > 0 && (len(c.Blocks) > 0 || c.Sizes != nil) {
		return nil, fmt.Errorf("%s: both SwitchName and BlockName lines: topology.conf takes one plugin's lines", source)
	}
	return c, nil
}

func (c *Conf) parseLine(line string, n int) error {
	var kind, name string
	sw := Switch{Line: n}
	kv, err := scheduler.ParseKV(line)
	if err == nil && kv.Stray != "" {
		err = fmt.Errorf("%q is not key=value", kv.Stray)
	}
	if err != nil {
		return err
	}
	for i, k := range kv.Keys {
		v := kv.Get(k)
		key := strings.ToLower(k)
		if i == 0 {
			kind, name = key, v
			continue
		}
		var err error
		switch {
		case key == "nodes":
			sw.Nodes, err = hostlist.Expand(v)
		case key == "switches" && kind == "switchname":
			sw.Switches, err = hostlist.Expand(v)
		case key == "linkspeed" && kind == "switchname":
			_, err = strconv.Atoi(v)
		default:
			return fmt.Errorf("%s= is not a parameter of a %s line", k, kind)
		}
		if err != nil {
			return fmt.Errorf("%s=: %w", k, err)
		}
	}
	sw.Name = name
	switch kind {
	case "switchname":
		c.Switches = append(c.Switches, sw)
	case "blockname":
		c.Blocks = append(c.Blocks, sw)
	case "blocksizes":
		if c.Sizes != nil {
			return fmt.Errorf("a second BlockSizes= line")
		}
		c.Sizes = []int{}
		for _, s := range strings.Split(name, ",") {
			v, err := strconv.Atoi(s)
			if err != nil || v <= 0 {
				return fmt.Errorf("BlockSizes=%s: %q is not a positive number", name, s)
			}
			c.Sizes = append(c.Sizes, v)
		}
	default:
		return fmt.Errorf("%s= starts no line of topology.conf (SwitchName=, BlockName=, BlockSizes=)", strings.SplitN(strings.TrimSpace(line), "=", 2)[0])
	}
	if kind != "blocksizes" && name == "" {
		return fmt.Errorf("a %s line without a name", kind)
	}
	return nil
}

// CheckTree checks a tree the way Slurm would need it, before it is
// handed to slurmctld (which exits on some of these, and silently runs
// others): every switch named once, within 64 characters, with nodes or
// child switches; every child switch defined, under one parent; one
// root above every switch; no node on two leaves; and, when known is
// not nil, every node known to Slurm and every known node on a leaf.
func CheckTree(sw []Switch, known []string) error {
	var p problems
	byName := map[string]*Switch{}
	for i := range sw {
		s := &sw[i]
		at := s.Name
		if s.Line > 0 {
			at = fmt.Sprintf("line %d: switch %s", s.Line, s.Name)
		}
		if err := hostlist.CheckName(s.Name, MaxSwitchName); err != nil {
			p.add("%s: %v", at, err)
		}
		if _, dup := byName[s.Name]; dup {
			p.add("%s is defined twice", at)
		}
		byName[s.Name] = s
		if len(s.Nodes) == 0 && len(s.Switches) == 0 {
			p.add("%s has neither nodes nor switches", at)
		}
	}
	parent := map[string]string{}
	leafOf := map[string]string{}
	for _, s := range sw {
		for _, c := range s.Switches {
			if _, ok := byName[c]; !ok {
				p.add("switch %s has child %s, which is not a switch (slurmctld exits on this: \"invalid child\")", s.Name, c)
			}
			if prev, ok := parent[c]; ok {
				p.add("switch %s is under both %s and %s", c, prev, s.Name)
			}
			parent[c] = s.Name
		}
		for _, n := range s.Nodes {
			if prev, ok := leafOf[n]; ok {
				p.add("node %s is on two leaves, %s and %s", n, prev, s.Name)
			}
			leafOf[n] = s.Name
		}
	}
	var roots []string
	for _, s := range sw {
		if _, ok := parent[s.Name]; !ok {
			roots = append(roots, s.Name)
		}
	}
	if len(roots) != 1 && len(sw) > 0 {
		p.add("%d switches have no parent (%s): one root must reach every node, or jobs cannot span the parts", len(roots), strings.Join(firstN(roots, 6), ", "))
	}
	if known != nil {
		isKnown := map[string]bool{}
		for _, n := range known {
			isKnown[n] = true
			if _, ok := leafOf[n]; !ok {
				p.add("node %s is in Slurm but on no leaf: every node must hang off a switch", n)
			}
		}
		for _, s := range sw {
			for _, n := range s.Nodes {
				if !isKnown[n] {
					p.add("leaf %s lists node %s, which Slurm does not have (add it to slurm.conf first)", s.Name, n)
				}
			}
		}
	}
	return p.err()
}

func firstN(s []string, n int) []string {
	slices.Sort(s)
	if len(s) > n {
		return append(s[:n:n], fmt.Sprintf("… %d more", len(s)-n))
	}
	return s
}
