package redfish

import (
	"fmt"
	"sort"
	"testing"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

func TestScratch(t *testing.T) {
	c, _, err := contract.Load("../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	c.ReadInventory(nil)
	g, _ := c.Graph()
	counts := map[string]int{}
	samples := map[string][]string{}
	for i := 0; i < g.Len(); i++ {
		e := g.El(inventory.ID(i))
		k := e.Kind.String()
		counts[k]++
		if len(samples[k]) < 3 {
			samples[k] = append(samples[k], fmt.Sprintf("%s slot=%d h=%d w=%d liq=%v id=%+v names=%+v bmc=%q dom=%q parent=%v", e.Key, e.Slot, e.HeightU, e.PowerW, e.Liquid, e.Identity, e.Names, e.BMCAddress, e.Domain, func() string { p := g.Parent(inventory.ID(i)); if p == inventory.None { return "-" }; return g.El(p).Key }()))
		}
	}
	fmt.Println("total", g.Len())
	var ks []string
	for k := range counts { ks = append(ks, k) }
	sort.Strings(ks)
	for _, k := range ks {
		fmt.Println(k, counts[k])
		for _, s := range samples[k] { fmt.Println("   ", s) }
	}
	for _, r := range []inventory.Relation{inventory.Contains, inventory.Powers, inventory.Cools, inventory.Connects, inventory.ManagedBy} {
		pairs := map[string]int{}
		for i := 0; i < g.Len(); i++ {
			for _, o := range g.Out(r, inventory.ID(i)) {
				pairs[g.El(inventory.ID(i)).Kind.String()+"→"+g.El(o).Kind.String()]++
			}
		}
		fmt.Println(r, g.Edges(r), pairs)
	}
	for _, e := range g.OfKind(inventory.KindModule) { fmt.Println("module", g.El(e).Key) }
	for _, k := range []inventory.Kind{inventory.KindNetwork, inventory.KindShared, inventory.KindLoadBank, inventory.KindBlock, inventory.KindFeed, inventory.KindUPS, inventory.KindLoop, inventory.KindCDU, inventory.KindPump, inventory.KindSite} {
		for _, e := range g.OfKind(k) { fmt.Print(g.El(e).Key, " ") }
		fmt.Println()
	}
}
