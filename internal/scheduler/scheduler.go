// Package scheduler reaches the schedulers the inventory feeds — Slurm
// and Kubernetes — behind one small interface: what topology drift and
// apply need of them now. Read returns what a scheduler runs (its
// topology, its nodes with their features or labels), from the live
// scheduler or from saved copies of its commands' output; a
// Reconfigurer is a scheduler whose topology file seam may replace.
// The Slurm backend runs scontrol and sinfo; Kubernetes is read from
// `kubectl get nodes -o json` (a later issue adds client-go and drains).
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
)

// Scheduler is a live scheduler, or saved copies of what it said.
type Scheduler interface {
	// Read returns what the scheduler runs now.
	Read(ctx context.Context) (*State, error)
}

// Reconfigurer is a scheduler whose topology file seam replaces: it
// says where the file is, and makes the scheduler read it again.
type Reconfigurer interface {
	Scheduler
	TopologyFile(ctx context.Context) (string, error)
	Reconfigure(ctx context.Context) error
	// Up reports whether the controller answers.
	Up(ctx context.Context) error
}

// State is what a scheduler runs.
type State struct {
	System  string   // "slurm" or "kubernetes"
	Version string   // the scheduler's version, when it says
	Sources []string // what was read, for reports
	// Plugin is Slurm's topology plugin as its output shows it: "tree"
	// (SwitchName lines), "block" (BlockName lines), or "".
	Plugin   string
	Switches []Switch
	Blocks   []Block
	// Nodes are the scheduler's nodes; nil when they were not read.
	Nodes []Node
}

// Switch is one switch of Slurm's topology/tree.
type Switch struct {
	Name  string
	Level int
	// Nodes are the nodes below the switch: a leaf's own; for a switch
	// above the leaves Slurm lists every node below it, expanded.
	Nodes    []string
	Switches []string // child switches
	Line     int      // in the output read
}

// Block is one block of Slurm's topology/block: a base block from
// BlockName=, or one Slurm aggregated from consecutive base blocks
// (AggregatedBlock=, its name the hostlist of theirs).
type Block struct {
	Name       string
	Index      int
	Aggregated bool
	Nodes      []string
	Size       int // the block size of its level (BlockSize=)
	Line       int
}

// Node is one node as the scheduler knows it.
type Node struct {
	Name     string
	State    string
	Features []string          // Slurm: the node's available features
	Labels   map[string]string // Kubernetes: metadata.labels
	// LabelManagers names, per label key, the field managers that set
	// it; Managers reads them from metadata.managedFields when not set.
	LabelManagers map[string][]string
	managed       json.RawMessage // metadata.managedFields, undecoded
}

// Node returns the node called name, or nil.
func (s *State) Node(name string) *Node {
	for i := range s.Nodes {
		if s.Nodes[i].Name == name {
			return &s.Nodes[i]
		}
	}
	return nil
}

// NodeIndex maps node names to their index in s.Nodes.
func (s *State) NodeIndex() map[string]int {
	idx := make(map[string]int, len(s.Nodes))
	for i, n := range s.Nodes {
		idx[n.Name] = i
	}
	return idx
}

// Merge joins the states of one system read from several sources (the
// topology from scontrol, the nodes from sinfo).
func Merge(states ...*State) *State {
	out := &State{}
	for _, s := range states {
		if s == nil {
			continue
		}
		if out.System == "" {
			out.System = s.System
		}
		if out.Version == "" {
			out.Version = s.Version
		}
		if s.Plugin != "" {
			out.Plugin = s.Plugin
		}
		out.Sources = append(out.Sources, s.Sources...)
		out.Switches = append(out.Switches, s.Switches...)
		out.Blocks = append(out.Blocks, s.Blocks...)
		if s.Nodes != nil {
			out.Nodes = append(out.Nodes, s.Nodes...)
		}
	}
	return out
}

// sortNodes orders nodes by name, joining the entries of a node listed
// more than once (sinfo lists a node once per partition).
func sortNodes(nodes []Node) []Node {
	sort.SliceStable(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	out := nodes[:0]
	for _, n := range nodes {
		if k := len(out) - 1; k >= 0 && out[k].Name == n.Name {
			out[k].Features = union(out[k].Features, n.Features)
			continue
		}
		out = append(out, n)
	}
	return out
}

func union(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// ReadAll reads several schedulers at once (a nil one reads as nil):
// drift reads Slurm's and Kubernetes' outputs side by side.
func ReadAll(ctx context.Context, ss ...Scheduler) ([]*State, error) {
	out := make([]*State, len(ss))
	errs := make([]error, len(ss))
	var wg sync.WaitGroup
	for i, s := range ss {
		if s == nil {
			continue
		}
		wg.Go(func() { out[i], errs[i] = s.Read(ctx) })
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
