// Package fleettest is for tests only: the example site's fleet (its
// contracts and as-built inventory, read once per test binary), as the
// tests of everything that serves or talks to its BMCs build it.
package fleettest

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/redfish/bmc"
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

// Source is one tray of a fleet as its simulated BMC's source, steady
// (powered on, 5 kW under a 6.4 kW limit), its time a clock's: for
// tests of what talks to BMCs, where the BMC's tasks and reboots must
// move exactly as the client's waits do.
type Source struct {
	F     *fleet.Fleet
	Tray  *fleet.Tray
	Clock clock.Clock
}

var _ bmc.Source = (*Source)(nil)

// TraySource is the tray of f called key, on clk.
func TraySource(f *fleet.Fleet, key string, clk clock.Clock) *Source {
	return &Source{F: f, Tray: f.Tray(key), Clock: clk}
}

func (s *Source) Version() uint64                  { return 1 }
func (s *Source) Graph() (*inventory.Graph, error) { return s.F.TrayGraph(s.Tray), nil }
func (s *Source) Live() bmc.Live {
	return bmc.Live{PowerState: "On", PowerW: 5000, Limit: &bmc.Limit{SetPoint: 6400, Min: 2560, Max: 6400, Mode: "Automatic"}}
}
func (s *Source) SetPowerLimit(*float64, string) error { return nil }
func (s *Source) Reset(string) error                   { return nil }
func (s *Source) Now() time.Time                       { return s.Clock.Now() }
