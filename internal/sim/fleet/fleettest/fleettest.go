// Package fleettest is for tests only: the example site's fleet (its
// contracts and as-built inventory, read once per test binary), as the
// tests of everything that serves or talks to its BMCs build it.
package fleettest

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/sim/fleet"
)

var (
	once  sync.Once
	graph *inventory.Graph
	err   error
)

// Graph is the example site's inventory graph with its as-built
// records (contracts/examples/threemodule), read once.
func Graph(t testing.TB) *inventory.Graph {
	t.Helper()
	root := peer.Root(t)
	once.Do(func() {
		var c *contract.Contracts
		c, _, err = contract.Load(filepath.Join(root, "contracts", "examples", "threemodule"))
		if err == nil {
			_, err = c.ReadInventory(nil)
		}
		if err == nil {
			graph, _ = c.Graph() // vet's findings on the graph do not matter here
		}
	})
	if err != nil {
		t.Fatalf("the example site: %v", err)
	}
	return graph
}

// Example is a new fleet of the example site, with default options.
func Example(t testing.TB) *fleet.Fleet {
	t.Helper()
	return fleet.New(Graph(t), fleet.Options{})
}
