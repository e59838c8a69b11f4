package topology

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// Slurm's topology/block (src/plugins/topology/block/block_record.c,
// block_record_validate) aggregates blocks by their order in the file:
// with BlockSizes=S0,S1,… each Si = S0·2^ki, the base blocks are
// numbered 0, 1, … as listed, and for every level ki>0 an aggregated
// block starts at each base block whose index is a multiple of 2^ki and
// takes the next 2^ki base blocks (a last, shorter run is aggregated
// only if it is longer than the level below). The first level whose
// 2^ki reaches the number of blocks is the last one used. BlockSizes
// values that are not a base multiple of a power of two (or a level
// above 15) stop slurmctld ("Invalid BlockSizes value"), and the man
// page asks each block to have at least S0 nodes.
//
// So a level can be exactly a module only when blocks are listed module
// by module and each module holds a power-of-two number of blocks; an
// aggregate never crosses a module boundary when every module's count is
// a multiple of the level's 2^k. PlanBlocks chooses the levels 0..k with
// k the smallest number of trailing zero bits of any module's block
// count: for 16 racks of 18 nodes, BlockSizes=18,36,72,144,288, and 288
// is the module.

// maxBlockLevel is the highest level Slurm accepts (block_level > 15 is
// fatal).
const maxBlockLevel = 15

// BlockPlan is the block plugin's configuration of a topology.
type BlockPlan struct {
	Blocks []*Leaf // in file order: module by module, by name
	Base   int     // the planning base block size: the smallest block
	Sizes  []int   // BlockSizes, in nodes: Base·2^0 … Base·2^k
	// ModuleLevel is the index in Sizes of the level that is exactly one
	// module, or -1 when no level is.
	ModuleLevel int
	Warnings    []string
}

// PlanBlocks lays the topology's leaves out as base blocks and chooses
// BlockSizes so that the highest level is a module where it can be.
func PlanBlocks(t *Topology) (*BlockPlan, error) {
	if len(t.Loose) > 0 {
		return nil, errors.New("leaves spanning modules (from a fabric tree) cannot be blocks: the block plugin's levels come from the order of blocks, module by module")
	}
	p := &BlockPlan{ModuleLevel: -1}
	k := maxBlockLevel
	counts := map[int][]string{}
	var smallest *Leaf
	largest := 0
	for _, m := range t.Modules {
		n := len(m.Leaves)
		counts[n] = append(counts[n], m.Name)
		k = min(k, bits.TrailingZeros(uint(n)))
		for _, l := range m.Leaves {
			p.Blocks = append(p.Blocks, l)
			if smallest == nil || len(l.Nodes) < len(smallest.Nodes) {
				smallest = l
			}
			largest = max(largest, len(l.Nodes))
		}
	}
	if smallest == nil {
		return nil, errors.New("no blocks: the topology has no nodes")
	}
	p.Base = len(smallest.Nodes)
	for i := 0; i <= k; i++ {
		p.Sizes = append(p.Sizes, p.Base<<i)
	}
	if len(counts) == 1 && len(t.Modules[0].Leaves) == 1<<k {
		p.ModuleLevel = k
	}
	p.warn(t, counts, k, smallest, largest)
	return p, nil
}

func (p *BlockPlan) warn(t *Topology, counts map[int][]string, k int, smallest *Leaf, largest int) {
	for _, m := range t.Modules {
		if n := len(m.Leaves); n&(n-1) != 0 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("module %s has %d blocks, not a power of two: no BlockSizes level is exactly the module; levels stop at %d blocks (%d nodes) so that no aggregated block spans two modules",
				m.Name, n, 1<<k, p.Base<<k))
		}
	}
	if len(counts) > 1 {
		var parts []string
		for n, ms := range counts {
			parts = append(parts, fmt.Sprintf("%d (%s)", n, strings.Join(ms, ", ")))
		}
		slices.Sort(parts)
		p.Warnings = append(p.Warnings, fmt.Sprintf("modules hold different numbers of blocks: %s; levels stop at %d blocks so that no aggregated block spans two modules", strings.Join(parts, ", "), 1<<k))
	}
	if largest != p.Base {
		p.Warnings = append(p.Warnings, fmt.Sprintf("blocks hold %d to %d nodes: the base block size is the smallest, %d (block %s); Slurm plans in units of %d nodes", p.Base, largest, p.Base, smallest.Name, p.Base))
	}
}

// Aggregate is a block Slurm derives from consecutive base blocks.
type Aggregate struct {
	Level       int // index in the sizes
	First, Last int // base block indices, inclusive
}

// SlurmAggregates computes the aggregated blocks Slurm derives from
// count base blocks and BlockSizes sizes (in nodes), as
// block_record_validate does.
func SlurmAggregates(count int, sizes []int) ([]Aggregate, error) {
	if len(sizes) == 0 {
		return nil, errors.New("no BlockSizes")
	}
	base := sizes[0]
	levels := map[int]bool{}
	for _, s := range sizes {
		if s <= 0 || s%base != 0 || (s/base)&(s/base-1) != 0 || bits.TrailingZeros(uint(s/base)) > maxBlockLevel {
			return nil, fmt.Errorf("BlockSizes value %d is not %d times a power of two up to 2^%d (slurmctld: \"Invalid BlockSizes value\")", s, base, maxBlockLevel)
		}
		levels[bits.TrailingZeros(uint(s/base))] = true
	}
	var inBlocks []int // block_sizes: the levels' sizes in base blocks
	for l := 0; l <= maxBlockLevel; l++ {
		if levels[l] {
			inBlocks = append(inBlocks, 1<<l)
			if 1<<l >= count {
				break
			}
		}
	}
	var out []Aggregate
	current := make([]int, len(inBlocks)) // index into out, or -1
	for i := 0; i < count; i++ {
		for j := 1; j < len(inBlocks); j++ {
			if i%inBlocks[j] == 0 {
				remaining := count - i
				if inBlocks[j] > remaining && inBlocks[j-1] >= remaining {
					current[j] = -1
					continue
				}
				out = append(out, Aggregate{Level: j, First: i, Last: i})
				current[j] = len(out) - 1
			} else if current[j] >= 0 {
				out[current[j]].Last = i
			}
		}
	}
	// Slurm sorts the aggregated blocks by level (qsort: the order within
	// a level may differ from Slurm's)
	slices.SortStableFunc(out, func(a, b Aggregate) int { return a.Level - b.Level })
	return out, nil
}
