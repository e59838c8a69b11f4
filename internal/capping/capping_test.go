package capping

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodes are n nodes of designW on rack, in domain, ranged 40..100 %.
func nodes(rack, domain string, n int, designW float64) []Node {
	var out []Node
	for i := range n {
		key := fmt.Sprintf("%s/compute-%02d", rack, i+1)
		out = append(out, Node{Name: key, Key: key, Rack: rack, Domain: domain, BMC: "bmc-" + key, DesignW: designW,
			MinW: designW * 0.4, MaxW: designW})
	}
	return out
}

func site(rackW map[string]float64, groups ...[]Node) *Site {
	s := &Site{Name: "t", RackW: rackW}
	for _, g := range groups {
		s.Nodes = append(s.Nodes, g...)
	}
	return s
}

func TestCompute(t *testing.T) {
	pdu := func(limitW float64, share float64) Limit {
		return Limit{What: "PDU r1/a", Lost: "the rack's other PDU", LimitW: limitW, Share: map[string]float64{"r1": share}}
	}
	for _, c := range []struct {
		name   string
		site   *Site
		limits []Limit
		needed bool
		caps   map[string]float64 // by domain
		err    string
	}{
		{name: "fits uncapped", site: site(map[string]float64{"r1": 110e3}, nodes("r1", "d1", 10, 10e3)),
			limits: []Limit{pdu(120e3, 1)}},
		// 10 kW the caps do not touch, and ten nodes: 10 + 10·c ≤ 100 kW
		{name: "one domain", site: site(map[string]float64{"r1": 110e3}, nodes("r1", "d1", 10, 10e3)),
			limits: []Limit{pdu(100e3, 1)}, needed: true, caps: map[string]float64{"d1": 9000}},
		// half the rack on each PDU, all of it with the other lost: the
		// lost case binds
		{name: "N-1 binds", site: site(map[string]float64{"r1": 110e3}, nodes("r1", "d1", 10, 10e3)),
			limits: []Limit{{What: "PDU r1/a", LimitW: 100e3, Share: map[string]float64{"r1": 0.5}}, pdu(100e3, 1)},
			needed: true, caps: map[string]float64{"d1": 9000}},
		// domain d2 spans r1 and r2: its nodes on r2 get the same cap
		// (slowest rank), though r2 is not on the target
		{name: "a domain across racks is capped whole",
			site:   site(map[string]float64{"r1": 100e3, "r2": 50e3}, nodes("r1", "d1", 5, 10e3), nodes("r1", "d2", 5, 10e3), nodes("r2", "d2", 5, 10e3)),
			limits: []Limit{pdu(80e3, 1)}, needed: true, caps: map[string]float64{"d1": 8000, "d2": 8000}},
		// d1's nodes cannot go above 6 kW: the others take what is left
		{name: "clamped to the range",
			site: site(map[string]float64{"r1": 100e3}, nodes("r1", "d2", 5, 10e3), func() []Node {
				ns := nodes("r1", "d1", 5, 10e3)
				for i := range ns {
					ns[i].Key += "x"
					ns[i].MaxW = 6000
				}
				return ns
			}()),
			limits: []Limit{pdu(80e3, 1)}, needed: true, caps: map[string]float64{"d1": 6000, "d2": 10000}},
		{name: "nodes without a domain each their own",
			site:   site(map[string]float64{"r1": 20e3}, nodes("r1", "", 2, 10e3)),
			limits: []Limit{pdu(15e3, 1)}, needed: true, caps: map[string]float64{"node r1/compute-01": 7500, "node r1/compute-02": 7500}},
		{name: "infeasible names the limit", site: site(map[string]float64{"r1": 110e3}, nodes("r1", "d1", 10, 10e3)),
			limits: []Limit{pdu(40e3, 1)},
			err:    "target r1: PDU r1/a with the rack's other PDU lost: caps cannot make it fit: with all 10 nodes of its 1 scale-up domain(s) at their lowest cap the load is 50.0 kW, above its limit of 40.0 kW"},
		{name: "no node on the target", site: site(map[string]float64{"r1": 110e3}, nodes("r2", "d1", 10, 10e3)),
			limits: []Limit{pdu(40e3, 1)}, err: "target r1: no node of the inventory is on it"},
		{name: "ranges that do not overlap",
			site: site(map[string]float64{"r1": 20e3}, func() []Node {
				ns := nodes("r1", "d1", 2, 10e3)
				ns[0].MinW, ns[1].MaxW = 8000, 7000
				return ns
			}()),
			limits: []Limit{pdu(15e3, 1)}, err: "scale-up domain d1: its nodes' cap ranges do not overlap (the highest minimum 8000 W is above the lowest maximum 7000 W)"},
		{name: "a node without a design draw",
			site: site(map[string]float64{"r1": 20e3}, func() []Node {
				ns := nodes("r1", "d1", 2, 10e3)
				ns[1].DesignW = 0
				return ns
			}()),
			limits: []Limit{pdu(15e3, 1)}, err: "node r1/compute-02 (r1/compute-02): design draw 0 W"},
		{name: "no limit", site: site(nil), err: "target r1: no limit to fit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := Compute(c.site, "r1", c.limits, DefaultModel)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.needed, p.Needed)
			for _, l := range p.Limits {
				assert.LessOrEqual(t, l.CappedW, l.LimitW+1e-6, "%s fits once capped", l.Name())
			}
			if !c.needed {
				assert.Empty(t, p.Caps)
				return
			}
			got := map[string]float64{}
			for _, d := range p.Domains {
				got[d.Domain] = d.CapW
			}
			assert.Equal(t, c.caps, got)
			for _, cp := range p.Caps {
				assert.Equal(t, got[cp.Domain+map[bool]string{true: "node " + cp.Key}[cp.Domain == ""]], cp.Watts, "node %s has its domain's cap", cp.Node)
				assert.GreaterOrEqual(t, cp.Watts, cp.MinW)
				assert.LessOrEqual(t, cp.Watts, cp.MaxW)
			}
			assert.NotEmpty(t, p.Binding)
		})
	}
}

// The performance model: the share of throughput at a cap, by the cube
// law (clock ∝ GPU power^⅓) and by the linear bound, with the node's
// other share (12.5 %) left as it is.
func TestThroughput(t *testing.T) {
	for _, c := range []struct{ capW, designW, cube, linear float64 }{
		{10000, 10000, 1, 1},
		{12000, 10000, 1, 1},
		{9000, 10000, math.Cbrt(7750.0 / 8750), 7750.0 / 8750},
		{5625, 10000, 0.5 / 0.5 * math.Cbrt(0.5), 0.5},
		{1000, 10000, 0, 0},
	} {
		cube, lin := DefaultModel.Throughput(c.capW, c.designW)
		assert.InDelta(t, c.cube, cube, 1e-9, "%v of %v", c.capW, c.designW)
		assert.InDelta(t, c.linear, lin, 1e-9, "%v of %v", c.capW, c.designW)
	}
}

// A caps file round-trips, and bad ones name the file, the line or the
// cap, and say what to write.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	p, err := Compute(site(map[string]float64{"r1": 110e3}, nodes("r1", "d1", 2, 10e3)), "r1",
		[]Limit{{What: "PDU r1/a", LimitW: 18e3, Share: map[string]float64{"r1": 1}}}, DefaultModel)
	require.Error(t, err, "90 kW the caps cannot touch")
	p, err = Compute(site(map[string]float64{"r1": 21e3}, nodes("r1", "d1", 2, 10e3)), "r1",
		[]Limit{{What: "PDU r1/a", LimitW: 18e3, Share: map[string]float64{"r1": 1}}}, DefaultModel)
	require.NoError(t, err)
	good := filepath.Join(dir, "caps.json")
	require.NoError(t, os.WriteFile(good, FileOf("t", p).Marshal(), 0o644))
	f, err := ReadFile(good)
	require.NoError(t, err)
	assert.Equal(t, Format, f.Format)
	require.Len(t, f.Caps, 2)
	assert.Equal(t, 8500.0, f.Caps[0].Watts)
	assert.Equal(t, "PDU r1/a", f.Limit)

	for _, c := range []struct{ body, err string }{
		{"{\n\"format\": \"seam.caps/v1\",\n\"caps\": [\n}", "bad.json:4: invalid character '}'"},
		{`{"format": "seam.caps/v0", "caps": []}`, `bad.json: format "seam.caps/v0", want "seam.caps/v1"`},
		{`{"format": "seam.caps/v1", "caps": [{"node": "n1", "watts": 100}]}`, "bad.json: caps[0] (node n1): no bmc"},
		{`{"format": "seam.caps/v1", "caps": [{"node": "n1", "bmc": "b", "watts": -1}]}`, "caps[0] (node n1): watts -1: want a cap above 0 W"},
		{`{"format": "seam.caps/v1", "caps": [{"node": "n1", "bmc": "b", "watts": 100, "min_watts": 200, "max_watts": 400}]}`, "100 W is outside the node's range 200..400 W"},
		{`{"format": "seam.caps/v1", "caps": [{"node": "n1", "bmc": "b", "watts": 100}, {"node": "n1", "bmc": "b", "watts": 100}]}`, "caps[1] (node n1): a second cap"},
		{`{"format": "seam.caps/v1", "caps": [{"node": "n1", "bmc": "b", "watt": 100}]}`, `unknown field "watt"`},
		{`{"format": "seam.caps/v1", "caps": [{"node": "n1", "bmc": "b", "watts": "100"}]}`, "bad.json:1: json: cannot unmarshal string"},
	} {
		bad := filepath.Join(dir, "bad.json")
		require.NoError(t, os.WriteFile(bad, []byte(c.body), 0o644))
		_, err := ReadFile(bad)
		require.Error(t, err, c.body)
		assert.Contains(t, err.Error(), c.err)
	}
}
