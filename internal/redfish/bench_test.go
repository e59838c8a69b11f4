package redfish_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stmcginnis/gofish"

	"github.com/seamdc/seam/internal/redfish"
)

// The figure "Redfish export of the example and read-back through
// gofish": ms per operation and resources per second.

func report(b *testing.B, resources int) {
	b.ReportMetric(float64(resources), "resources")
	b.ReportMetric(float64(resources)*float64(b.N)/b.Elapsed().Seconds(), "resources/s")
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/op")
}

// BenchmarkExport exports the worked example (about 16,000 elements).
func BenchmarkExport(b *testing.B) {
	g := exampleGraph(b)
	var tree *redfish.Tree
	for b.Loop() {
		tree = redfish.Export(g)
	}
	report(b, tree.Len())
	b.ReportMetric(float64(tree.Bytes())/1e6, "MB")
}

// BenchmarkImport reads the example's export back into a graph.
func BenchmarkImport(b *testing.B) {
	tree := redfish.Export(exampleGraph(b))
	for b.Loop() {
		if _, rep := redfish.Import(tree, "bench"); !rep.OK() {
			b.Fatal(rep.Problems[0])
		}
	}
	report(b, tree.Len())
}

// BenchmarkGofishReadBack serves the example's export over loopback HTTP
// and reads it through gofish v0.23.0: the service root, every chassis,
// system and manager, the power shelves, rack PDUs, CDUs and cooling
// loops (each collection and every member).
func BenchmarkGofishReadBack(b *testing.B) {
	tree := redfish.Export(exampleGraph(b))
	srv := httptest.NewServer(tree.Handler())
	defer srv.Close()
	n := 0
	for b.Loop() {
		n = gofishWalk(b, srv.URL)
	}
	report(b, n)
}

// gofishWalk reads the collections through gofish and counts the
// resources it read.
func gofishWalk(b *testing.B, url string) int {
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: url, ReuseConnections: true, MaxConcurrentRequests: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Logout()
	svc := c.GetService()
	n := 1
	add := func(k int, err error) {
		if err != nil {
			b.Fatal(err)
		}
		n += 1 + k // the collection and its members
	}
	ch, err := svc.Chassis()
	add(len(ch), err)
	sys, err := svc.Systems()
	add(len(sys), err)
	mgr, err := svc.Managers()
	add(len(mgr), err)
	pe, err := svc.PowerEquipment()
	add(0, err)
	shelves, err := pe.PowerShelves()
	add(len(shelves), err)
	pdus, err := pe.RackPDUs()
	add(len(pdus), err)
	te, err := svc.ThermalEquipment()
	add(0, err)
	cdus, err := te.CDUs()
	add(len(cdus), err)
	loops, err := te.CoolingLoops()
	add(len(loops), err)
	return n - 2 // PowerEquipment and ThermalEquipment are no collections
}
