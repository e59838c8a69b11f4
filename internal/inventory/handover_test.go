package inventory_test

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/units"
)

// q is a quantity as a contract writes it.
func q(t testing.TB, s string) inventory.Q {
	v, err := units.Parse(s)
	require.NoError(t, err)
	return inventory.Q{Quantity: v, Set: true, Raw: s}
}

// smallSite is a site of one IT module ma with racks r01 and r02 of a
// small design (two compute trays at U1 and U2, a management switch at
// U3, two power shelves at U4 and U5 on PDUs a and b), its power block
// p1/block and its loop l1/loop.
func smallSite(t testing.TB) *inventory.Site {
	design := &inventory.RackDesign{Name: "small", HeightU: 8, Trays: []*inventory.TrayDesign{
		{Name: "compute", Kind: inventory.Compute, Slots: []int{1, 2}, HeightU: 1, Power: q(t, "10 kW"), Liquid: true,
			Parts: []*inventory.PartDesign{{Name: "bmc", Kind: inventory.BMC, Count: 1}, {Name: "gpu", Kind: inventory.GPU, Count: 4}}},
		{Name: "mgmt", Kind: inventory.ManagementSwitch, Slots: []int{3}, HeightU: 1},
		{Name: "shelf", Kind: inventory.PowerShelf, Slots: []int{4, 5}, HeightU: 1, PSUs: 4, PSUPower: q(t, "10 kW"),
			Feeds: []inventory.Ref{{To: "a"}, {To: "b"}}},
	}}
	ma := &inventory.Module{ID: "ma", Kind: "it", RackDesigns: []*inventory.RackDesign{design}}
	for _, id := range []string{"r01", "r02"} {
		r := &inventory.Rack{Path: "site.modules.ma.racks." + id, ID: "ma/" + id, Module: "ma", DesignPower: q(t, "20 kW"),
			GPUs: 8, Nodes: 2, CooledBy: inventory.Ref{To: "l1/loop"}, Design: inventory.Ref{To: "small"}, DesignOf: design}
		for _, p := range []string{"a", "b"} {
			r.PDUs = append(r.PDUs, &inventory.PDU{ID: r.ID + "/" + p, Feed: inventory.Ref{To: "p1/block/" + p}, Breaker: q(t, "100 A")})
		}
		ma.Racks = append(ma.Racks, r)
	}
	block := &inventory.Block{ID: "p1/block", Module: "p1", Rating: q(t, "1 MW"), Redundancy: "2N"}
	for _, f := range []string{"a", "b"} {
		block.Feeds = append(block.Feeds, &inventory.Feed{ID: "p1/block/" + f, Block: block})
	}
	p1 := &inventory.Module{ID: "p1", Kind: "power", Blocks: []*inventory.Block{block}}
	l1 := &inventory.Module{ID: "l1", Kind: "cooling", Loops: []*inventory.Loop{{ID: "l1/loop", Module: "l1",
		CDUs: []*inventory.CDU{{ID: "l1/loop/cdu-1", Capacity: q(t, "1 MW")}}}}}
	return &inventory.Site{Name: "small", Modules: []*inventory.Module{l1, ma, p1}}
}

// smallRacks is a clean per-rack handover of smallSite, one tray per line.
const smallRacks = `{"format": "seam.handover/v1", "site": "small", "racks": [
  {"name": "a-r01", "module": "ma", "position": "r01", "serial": "SN-R1", "trays": [
    {"slot": 1, "kind": "compute", "serial": "SN-C1", "node": {"slurm": "n1"}, "bmc": {"switch": 3, "port": 1}, "parts": {"gpu": ["G1", "G2", "G3", "G4"]}},
    {"slot": 2, "kind": "compute", "serial": "SN-C2", "node": {"slurm": "n2"}, "bmc": {"switch": 3, "port": 2}},
    {"slot": 3, "kind": "management-switch", "serial": "SN-M1"},
    {"slot": 4, "kind": "power-shelf", "serial": "SN-S1", "pdu": "a", "psus": ["P1", "P2", "P3", "P4"]},
    {"slot": 5, "kind": "power-shelf", "serial": "SN-S2", "pdu": "b"}
  ]}
]}
`

// parse reads a handover and joins it to smallSite, returning every
// diagnostic, sorted, with positions resolved.
func parse(t *testing.T, file, src string) (*inventory.Handover, diag.List) {
	t.Helper()
	h, diags, err := inventory.ParseHandover(file, []byte(src))
	require.NoError(t, err)
	require.NotNil(t, h)
	g, bd := inventory.Build(smallSite(t), h)
	diags = append(diags, bd...)
	diags = append(diags, inventory.Check(g)...)
	return h, diags.Sorted()
}

// one asserts the diagnostics are exactly one, of rule, at line:col of
// file, with a message holding each of want.
func one(t *testing.T, diags diag.List, rule, file string, line, col int, want ...string) diag.Diagnostic {
	t.Helper()
	require.Len(t, diags, 1, "want one %s diagnostic, got:\n%s", rule, text(diags))
	d := diags[0]
	assert.Equal(t, rule, d.Rule, d.Message)
	assert.Equal(t, diag.Pos{File: file, Line: line, Col: col}, d.Pos, d.Message)
	for _, w := range want {
		assert.Contains(t, d.Message, w)
	}
	assert.NotEmpty(t, d.Hint, "every handover diagnostic says what to do")
	return d
}

func text(l diag.List) string {
	var b bytes.Buffer
	_ = diag.Text(&b, l)
	return b.String()
}

func TestHandoverClean(t *testing.T) {
	h, diags := parse(t, "racks.json", smallRacks)
	require.Empty(t, diags, text(diags))
	require.Len(t, h.Racks, 1)
	assert.Len(t, h.Racks[0].Trays, 5)
}

func TestHandoverEmpty(t *testing.T) {
	for _, src := range []string{"", "  \n\t\n"} {
		h, diags := parse(t, "empty.json", src)
		one(t, diags, inventory.RuleHandoverSyntax, "empty.json", 1, 1, "the file is empty")
		assert.Empty(t, h.Racks)
		assert.Empty(t, h.Nodes)
	}
}

func TestHandoverNotJSON(t *testing.T) {
	_, diags := parse(t, "nodes.csv", "node,module,rack\ngpu-1,ma,r01\n")
	one(t, diags, inventory.RuleHandoverSyntax, "nodes.csv", 1, 1, "not JSON", `"node,module,rack"`)

	_, diags = parse(t, "bom.json", "\xef\xbb\xbf[]")
	one(t, diags, inventory.RuleHandoverSyntax, "bom.json", 1, 1, "byte-order mark")

	// JSON, but neither form
	_, diags = parse(t, "n.json", "\n 42\n")
	one(t, diags, inventory.RuleHandoverFormat, "n.json", 2, 2, "the file is a number")

	// a missing comma between two trays, on line 4
	src := strings.Replace(smallRacks, `"node": {"slurm": "n2"}`, `"node": {"slurm": "n2"} "bmc": {}`, 1)
	h, diags := parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverSyntax, "racks.json", 4, 79, "not JSON", "invalid character '\"' after object key:value pair")
	assert.Empty(t, h.Racks, "a file that is not JSON yields no records")

	// a trailing comma
	src = strings.Replace(smallRacks, `"pdu": "b"}`, `"pdu": "b"},`, 1)
	_, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverSyntax, "racks.json", 8, 3, "a comma before it")

	// text after the inventory
	_, diags = parse(t, "racks.json", smallRacks+"]}\n")
	one(t, diags, inventory.RuleHandoverSyntax, "racks.json", 10, 1, "more text after the end")
}

func TestHandoverTruncated(t *testing.T) {
	cut := smallRacks[:strings.Index(smallRacks, `{"slot": 3`)]
	h, diags := parse(t, "racks.json", cut)
	d := one(t, diags, inventory.RuleHandoverSyntax, "racks.json", 5, 5, "the file ends with 4 arrays or objects still open", "line 2, column 84", "cut short")
	assert.Contains(t, d.Hint, "stopped early")
	assert.Empty(t, h.Racks)

	// every prefix of a file reads without a panic, and one that is not
	// the whole file says why
	for i := range len(smallRacks) - 1 {
		src := smallRacks[:i]
		h, diags := parse(t, "racks.json", src)
		if strings.TrimSpace(src) == strings.TrimSpace(smallRacks) {
			continue
		}
		require.NotEmpty(t, diags, "prefix %d: %q", i, src)
		assert.Empty(t, h.Racks)
	}
}

func TestHandoverUnknownFields(t *testing.T) {
	src := strings.Replace(smallRacks, `"serial": "SN-C2"`, `"serail": "SN-C2"`, 1)
	h, diags := parse(t, "racks.json", src)
	d := one(t, diags, inventory.RuleHandoverField, "racks.json", 4, 36, `rack a-r01, tray 2 (U2): unknown field "serail"`)
	assert.Equal(t, `did you mean "serial"?`, d.Hint)
	require.Len(t, h.Racks, 1, "the rack is read all the same")
	assert.Len(t, h.Racks[0].Trays, 5)
	assert.Equal(t, "n2", h.Racks[0].Trays[1].Node.Slurm, "the tray's other fields are read")

	// a top-level field, and a rack's
	src = strings.Replace(smallRacks, `"site": "small"`, `"sites": "small"`, 1)
	src = strings.Replace(src, `"position": "r01"`, `"postion": "r01"`, 1)
	_, diags = parse(t, "racks.json", src)
	require.Len(t, diags, 2, text(diags))
	assert.Equal(t, diag.Pos{File: "racks.json", Line: 1, Col: 32}, diags[0].Pos)
	assert.Contains(t, diags[0].Message, `unknown field "sites"`)
	assert.Equal(t, `did you mean "site"?`, diags[0].Hint)
	assert.Equal(t, diag.Pos{File: "racks.json", Line: 2, Col: 37}, diags[1].Pos)
	assert.Contains(t, diags[1].Message, `rack a-r01: unknown field "postion"`)

	// a brief record's misspelt field; the record still joins
	nodes := `[
  {"node": "n1", "module": "ma", "rack": "r01", "nvlink_domian": "d1"},
  {"node": "n2", "module": "ma", "rack": "r01"}
]`
	h, diags = parse(t, "nodes.json", nodes)
	d = one(t, diags, inventory.RuleHandoverField, "nodes.json", 2, 49, `record 1 (node n1): unknown field "nvlink_domian"`)
	assert.Equal(t, `did you mean "nvlink_domain"?`, d.Hint)
	assert.Len(t, h.Nodes, 2)

	// a value of the wrong type, at the value
	src = strings.Replace(smallRacks, `{"slot": 3,`, `{"slot": "3",`, 1)
	h, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverField, "racks.json", 5, 14, `rack a-r01, tray 3: "trays.slot" is a string, want a whole number`)
	assert.Len(t, h.Racks[0].Trays, 4, "the tray without a slot is left out")

	// an unknown tray kind and part kind
	src = strings.Replace(smallRacks, `"kind": "management-switch"`, `"kind": "mgmt-switch"`, 1)
	src = strings.Replace(src, `"parts": {"gpu"`, `"parts": {"gpus"`, 1)
	_, diags = parse(t, "racks.json", src)
	require.Len(t, diags, 2, text(diags))
	assert.Equal(t, diag.Pos{File: "racks.json", Line: 3, Col: 5}, diags[0].Pos)
	assert.Contains(t, diags[0].Message, `parts "gpus" is not a part kind`)
	assert.Equal(t, diag.Pos{File: "racks.json", Line: 5, Col: 5}, diags[1].Pos)
	assert.Contains(t, diags[1].Message, `kind "mgmt-switch" is not a tray kind`)
}

func TestHandoverNullTray(t *testing.T) {
	src := strings.Replace(smallRacks, `    {"slot": 3, "kind": "management-switch", "serial": "SN-M1"},`, `    null,`, 1)
	h, diags := parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverField, "racks.json", 5, 5, "rack a-r01: tray 3 is null")
	require.Len(t, h.Racks, 1)
	assert.Len(t, h.Racks[0].Trays, 4, "the null is left out; the other trays are read")

	// null records, a record of another type, a tray without a slot
	_, diags = parse(t, "nodes.json", "[\n  null,\n  \"n1\"\n]")
	require.Len(t, diags, 2, text(diags))
	assert.Equal(t, diag.Pos{File: "nodes.json", Line: 2, Col: 3}, diags[0].Pos)
	assert.Contains(t, diags[0].Message, "record 1 is null, want an object")
	assert.Equal(t, diag.Pos{File: "nodes.json", Line: 3, Col: 3}, diags[1].Pos)
	assert.Contains(t, diags[1].Message, "record 2 is a string, want an object")

	src = strings.Replace(smallRacks, `{"slot": 3, "kind": "management-switch",`, `{"kind": "management-switch",`, 1)
	_, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverMissing, "racks.json", 5, 5, `tray 3 has no a "slot"`)

	src = strings.Replace(smallRacks, `"racks": [`, `"racks": null, "x": [`, 1)
	_, diags = parse(t, "racks.json", src)
	require.Len(t, diags, 2, text(diags))
	assert.Contains(t, diags[0].Message, `"racks" is null, want an array of racks`)
	assert.Contains(t, diags[1].Message, `unknown field "x"`)
}

func TestHandoverMissingFields(t *testing.T) {
	nodes := `[
  {"node": "n1", "module": "ma", "rack": "r01"},
  {"node": "n2", "rack": "r01"}
]`
	h, diags := parse(t, "nodes.json", nodes)
	one(t, diags, inventory.RuleHandoverMissing, "nodes.json", 3, 3, `record 2 (node n2) has no "module"`)
	assert.Len(t, h.Nodes, 1)

	src := strings.Replace(smallRacks, `"module": "ma", `, ``, 1)
	_, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverMissing, "racks.json", 2, 3, `rack a-r01 has no "module"`)

	src = strings.Replace(smallRacks, `{"format": "seam.handover/v1", `, `{`, 1)
	_, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverFormat, "racks.json", 1, 1, `the file has no "format"`)

	src = strings.Replace(smallRacks, `seam.handover/v1`, `seam.handover/v2`, 1)
	_, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleHandoverFormat, "racks.json", 1, 12, `format "seam.handover/v2"`)
}

func TestHandoverDuplicates(t *testing.T) {
	// one node twice, and one node in two racks
	nodes := `[
  {"node": "n1", "module": "ma", "rack": "r01"},
  {"node": "n2", "module": "ma", "rack": "r01"},
  {"node": "n1", "module": "ma", "rack": "r01"},
  {"node": "n3", "module": "ma", "rack": "r02"},
  {"node": "n4", "module": "ma", "rack": "r02"},
  {"node": "n3", "module": "ma", "rack": "r01"}
]`
	_, diags := parse(t, "nodes.json", nodes)
	require.Len(t, diags, 2, text(diags))
	assert.Equal(t, inventory.RuleSlurmName, diags[0].Rule)
	assert.Equal(t, diag.Pos{File: "nodes.json", Line: 4, Col: 3}, diags[0].Pos)
	assert.Equal(t, "node n1 is listed twice: the first record is at nodes.json:2:3", diags[0].Message)
	assert.Equal(t, diag.Pos{File: "nodes.json", Line: 7, Col: 3}, diags[1].Pos)
	assert.Equal(t, "node n3 is listed in two racks (ma/r02, and ma/r01 here): the first record is at nodes.json:5:3", diags[1].Message)

	// one rack twice
	second := strings.Replace(smallRacks[strings.Index(smallRacks, "  {\"name\""):strings.LastIndex(smallRacks, "\n]}")], `"a-r01"`, `"a-r01-copy"`, 1)
	second = strings.NewReplacer(`"SN-`, `"SN-X-`, `"P`, `"XP`, `"G`, `"XG`, `"n1"`, `"x1"`, `"n2"`, `"x2"`).Replace(second)
	src := strings.Replace(smallRacks, "\n]}", ",\n"+second+"\n]}", 1)
	_, diags = parse(t, "racks.json", src)
	one(t, diags, inventory.RuleSlot, "racks.json", 9, 3, "rack a-r01-copy is rack ma/r01 of the contract, which rack a-r01 at racks.json:2:3 describes already")

	// one rack in two files, and a file of another site
	h1, d1, _ := inventory.ParseHandover("one.json", []byte(smallRacks))
	h2, d2, _ := inventory.ParseHandover("two.json", []byte(smallRacks))
	h3, d3, _ := inventory.ParseHandover("other.json", []byte(strings.Replace(smallRacks, `"site": "small"`, `"site": "big"`, 1)))
	require.Empty(t, append(append(d1, d2...), d3...))
	_, bd := inventory.Build(smallSite(t), h1, h2, h3)
	bd = bd.Sorted()
	require.Len(t, bd, 2, text(bd))
	assert.Equal(t, diag.Pos{File: "other.json", Line: 1, Col: 40}, bd[0].Pos)
	assert.Contains(t, bd[0].Message, `the handover inventory of site "big", but the contract's site is "small"`)
	assert.Equal(t, diag.Pos{File: "two.json", Line: 2, Col: 3}, bd[1].Pos)
	assert.Contains(t, bd[1].Message, "which rack a-r01 at one.json:2:3 describes already")
}

func TestHandoverUnknownRacks(t *testing.T) {
	nodes := `[
  {"node": "n1", "module": "mz", "rack": "r01"},
  {"node": "n2", "module": "p1", "rack": "r01"},
  {"node": "n3", "module": "ma", "rack": "a-r09"},
  {"node": "n4", "module": "ma", "rack": "r01", "power_block": "p9", "cooling_loop": "l1"}
]`
	_, diags := parse(t, "nodes.json", nodes)
	require.Len(t, diags, 4, text(diags))
	for i, want := range []string{
		`node n1: module "mz" is not a module of site small (its IT modules: ma)`,
		`node n2: module "p1" is a power module, not an IT module (its IT modules: ma)`,
		`node n3: rack "a-r09", read as position "r09" is not a rack of module ma (its racks: r01 … r02)`,
		`node n4: power_block "p9" is not a power module of site small (rack ma/r01 is on p1)`,
	} {
		assert.Equal(t, inventory.RuleUnknownRef, diags[i].Rule)
		assert.Equal(t, i+2, diags[i].Pos.Line)
		assert.Equal(t, want, diags[i].Message)
	}
}

// 100,000 records of the design brief's form read in well under a
// second; a problem near the end is at its line.
func TestHandoverManyRecords(t *testing.T) {
	const n = 100_000
	var b bytes.Buffer
	b.WriteString("[\n")
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteString(",\n")
		}
		field := "nvlink_domain"
		if i == n-1 {
			field = "nvlink_domian"
		}
		fmt.Fprintf(&b, `  {"node": "gpu-%06d", "module": "m%03d", "power_block": "p%03d", "cooling_loop": "l%03d", "rack": "r%02d", %q: "d%05d"}`,
			i, i/288, i/288, i/288, i%16, field, i/72)
	}
	b.WriteString("\n]\n")
	start := time.Now()
	h, diags, err := inventory.ParseHandover("nodes.json", b.Bytes())
	took := time.Since(start)
	require.NoError(t, err)
	assert.Len(t, h.Nodes, n)
	diags = diags.Sorted()
	require.Len(t, diags, 1, text(diags))
	assert.Equal(t, diag.Pos{File: "nodes.json", Line: n, Col: 106}, diags[0].Pos)
	assert.Contains(t, diags[0].Message, fmt.Sprintf(`record %d (node gpu-%06d): unknown field "nvlink_domian"`, n-1, n-1))
	assert.Equal(t, n+1, h.Nodes[n-1].Pos.Resolved().Line)
	assert.Less(t, took, budget(3*time.Second), "reading %d records took %v", n, took)
	t.Logf("%d records (%d MB) in %v", n, b.Len()>>20, took)
}

// budget is a time limit, ten times as long under the race detector.
func budget(d time.Duration) time.Duration {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "-race" && s.Value == "true" {
				return 10 * d
			}
		}
	}
	return d
}

// FuzzParseHandover: no input makes the reader or the join panic, and
// every diagnostic has a position in the file.
func FuzzParseHandover(f *testing.F) {
	for _, seed := range []string{smallRacks, "", "[", "{", "[null]", `{"racks": [null]}`, `{"racks": [{"trays": [null, 1, "x", {}]}]}`,
		`[{"node": "n", "module": "ma", "rack": "r01"}]`, `{"racks": {}}`, "\xef\xbb\xbf{}", `{"format": 1, "site": [], "racks": "x"}`} {
		f.Add([]byte(seed))
	}
	site := smallSite(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		h, diags, err := inventory.ParseHandover("f.json", b)
		require.NoError(t, err)
		g, bd := inventory.Build(site, h)
		diags = append(append(diags, bd...), inventory.Check(g)...)
		for _, d := range diags.Sorted() {
			if d.Pos.File == "f.json" {
				require.Positive(t, d.Pos.Line, d.Message)
			}
		}
	})
}

// The as-built against the design: a shelf on a PDU the rack lacks,
// more serials than the design has places for, empty bays, a BMC left
// uncabled. A shelf that lists no PSUs is as designed.
func TestHandoverAsBuiltAgainstDesign(t *testing.T) {
	for _, c := range []struct {
		name, old, new string
		rule           string
		line, col      int
		want           string
	}{
		{"shelf on an unknown PDU", `"pdu": "b"}`, `"pdu": "c"}`, inventory.RuleUnknownRef, 7, 5,
			`rack a-r01: the power shelf at U5 is on PDU "c", which rack ma/r01 does not have (its PDUs: a, b)`},
		{"more PSUs than bays", `"psus": ["P1", "P2", "P3", "P4"]`, `"psus": ["P1", "P2", "P3", "P4", "P5"]`, inventory.RuleCounts, 6, 5,
			"the power shelf at U4 lists 5 PSUs, but the design's shelf has 4 bays"},
		{"more GPU serials than GPUs", `["G1", "G2", "G3", "G4"]`, `["G1", "G2", "G3", "G4", "G5"]`, inventory.RuleCounts, 3, 5,
			"the compute tray at U1 lists 5 gpu serials, but the design's compute tray holds 4"},
		{"a BMC without its cable", `"bmc": {"switch": 3, "port": 2}`, `"bmc": {"address": "10.0.0.2"}`, inventory.RuleBMCOffMgmt, 4, 5,
			"the BMC of compute tray ma/r01/compute-02 (n2) is on no management network"},
		{"a BMC on the management switch's slot of another rack", `"bmc": {"switch": 3, "port": 2}`, `"bmc": {"switch": 7, "port": 2}`, inventory.RuleBMCOffMgmt, 4, 5,
			"its record cables it to no management switch (the rack's: mgmt-01 at U3)"},
		// the other shelf carries the rack, but not with itself lost; the
		// design carries it, so the finding is at the shelf's record
		{"a shelf's bays empty", `"pdu": "a", "psus": ["P1", "P2", "P3", "P4"]}`, `"pdu": "a", "psus": ["", "", "", ""]}`, inventory.RuleBusbarShelf, 6, 5,
			"site.modules.ma.racks.r01: as built, its power shelf shelf-01 at U4 has bays 1, 2, 3, 4 of its 4 empty: with one power shelf lost its other shelves give 0 kW, below its design power of 20 kW (so it cannot lose a feed either; as built, 1 of its 2 shelves holds no PSU)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Contains(t, smallRacks, c.old)
			_, diags := parse(t, "racks.json", strings.Replace(smallRacks, c.old, c.new, 1))
			file := "racks.json"
			if c.line == 0 {
				file = ""
			}
			one(t, diags, c.rule, file, c.line, c.col, c.want)
		})
	}

	// both shelves' bays empty: nothing feeds the busbar
	src := strings.Replace(smallRacks, `"pdu": "a", "psus": ["P1", "P2", "P3", "P4"]}`, `"pdu": "a", "psus": ["", "", "", ""]}`, 1)
	src = strings.Replace(src, `"pdu": "b"}`, `"pdu": "b", "psus": ["", "", "", ""]}`, 1)
	_, diags := parse(t, "racks.json", src)
	one(t, diags, inventory.RuleNoPower, "racks.json", 6, 5, "site.modules.ma.racks.r01: its 2 trays (2 compute) have no power path to a feed: every bay of its power shelves is empty")
}
