package netbox_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/netbox"
)

// No NetBox server runs in these tests: the fixtures under
// testdata/netbox-4 are written from NetBox 4.x's DCIM serializers (see
// the package comment), with the fields NetBox writes that seam does
// not read left in.

var update = flag.Bool("update", false, "rewrite golden files")

const example = "../../contracts/examples/threemodule"

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s is stale: go test ./internal/netbox -update", path)
}

func exampleSite(t *testing.T) *netbox.Site { return exampleSiteB(t) }

func exampleSiteB(t testing.TB) *netbox.Site {
	t.Helper()
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	hd, err := c.ReadInventory(nil)
	require.NoError(t, err)
	require.Empty(t, hd)
	g, _ := c.Graph()
	s, err := netbox.FromInventory(g, c.Handovers)
	require.NoError(t, err)
	return s
}

// The example's inventory exported as NetBox's API pages, imported
// back, is the example's handover file byte for byte, and exports again
// to the same pages.
func TestRoundTripExample(t *testing.T) {
	s := exampleSite(t)
	require.Len(t, s.Racks, 48)
	require.Len(t, s.Feeds, 6)
	first := t.TempDir()
	e, err := netbox.ExportSite(s, "")
	require.NoError(t, err)
	require.NoError(t, netbox.WriteDir(first, e, "", 1000))

	back, err := netbox.ReadDir(first)
	require.NoError(t, err)
	again, err := netbox.ImportSite(back)
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(example, "inventory", "racks.json"))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(again.Handover()), "NetBox → handover gives the example's as-built back")
	assert.Equal(t, s.Panels, again.Panels)
	assert.Equal(t, s.Feeds, again.Feeds)

	second := t.TempDir()
	e2, err := netbox.ExportSite(again, "")
	require.NoError(t, err)
	require.NoError(t, netbox.WriteDir(second, e2, "", 1000))
	files, err := filepath.Glob(filepath.Join(first, "*.json"))
	require.NoError(t, err)
	assert.Greater(t, len(files), len(netbox.Endpoints), "more than one page of devices at 1000 a page")
	for _, f := range files {
		a, err := os.ReadFile(f)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(second, filepath.Base(f)))
		require.NoError(t, err, "the second export has %s", filepath.Base(f))
		assert.Equal(t, string(a), string(b), "%s: export → import → export is identical", filepath.Base(f))
	}
	devices, err := os.ReadFile(filepath.Join(first, "dcim-devices.json"))
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(devices), `"next": "https://netbox.invalid/api/dcim/devices/?limit=1000&offset=1000"`), "the first page links the next")
	assert.True(t, strings.Contains(string(devices), `"count": 1776,`), "every tray a device")
}

// A NetBox export as the API writes it (pages, nested objects, choices,
// fields seam does not read) imports into the handover form.
func TestImportFixture(t *testing.T) {
	e, err := netbox.ReadDir("testdata/netbox-4")
	require.NoError(t, err)
	require.Len(t, e.Devices, 3, "both pages")
	s, err := netbox.ImportSite(e)
	require.NoError(t, err)
	golden(t, "testdata/netbox-4.handover.json", s.Handover())
	r := s.Racks[0]
	assert.Equal(t, "ma", r.Module, "the rack's location when seam_module is null")
	n := r.Trays[0]
	assert.Equal(t, "10.20.1.5", n.BMC.Address, "oob_ip without its prefix length")
	assert.Equal(t, 40, n.BMC.Switch)
	assert.Equal(t, 7, n.BMC.Port.Port, "Ethernet1/7")
	assert.Equal(t, 21, n.Data.Port, "swp21, the tray at the cable's b end")
	assert.Equal(t, []string{"SN-PSU-0000001", "", "SN-PSU-0000003"}, r.Trays[1].PSUs)
	assert.Equal(t, []netbox.Feed{{Name: "p1/block/a", Panel: "p1/block"}, {Name: "p1/block/b", Panel: "p1/block"}}, s.Feeds)
}

// Bad input names the object (endpoint, id, name) and the field, and
// says what to do.
func TestImportErrors(t *testing.T) {
	read := func() *netbox.Export {
		e, err := netbox.ReadDir("testdata/netbox-4")
		require.NoError(t, err)
		return e
	}
	for _, c := range []struct {
		name  string
		edit  func(e *netbox.Export)
		field string
		want  string
	}{
		{"half a U", func(e *netbox.Export) { p := 5.5; e.Devices[0].Position = &p }, "position", "dcim/devices id 101 (gpu-a-r01-n01), field position: U 5.5: seam's trays sit at whole units from U1"},
		{"unracked", func(e *netbox.Export) { e.Devices[1].Rack = nil }, "rack", "dcim/devices id 102, field rack: the device is in no rack"},
		{"unknown rack", func(e *netbox.Export) { e.Devices[2].Rack.ID = 99 }, "rack", "rack id 99 (a-r01) is not in dcim/racks"},
		{"no module", func(e *netbox.Export) { e.Racks[0].Location = nil }, "custom_fields.seam_module", "dcim/racks id 14 (a-r01), field custom_fields.seam_module: no seam module"},
		{"module not a string", func(e *netbox.Export) { e.Racks[0].CustomFields["seam_module"] = []byte("7") }, "custom_fields.seam_module", "want a string, got 7"},
		{"no role", func(e *netbox.Export) { e.Devices[0].Role.Slug = "" }, "role", "the role is the tray's kind"},
		{"bad oob ip", func(e *netbox.Export) { e.Devices[0].OOBIP.Address = "10.20.1.5" }, "oob_ip.address", "not an address with its prefix length"},
		{"cable to a console port", func(e *netbox.Export) { e.Cables[0].ATerminations[0].ObjectType = "dcim.consoleport" }, "a_terminations", "dcim/cables id 900 (a-r01 n01 bmc), field a_terminations: terminates on a dcim.consoleport"},
		{"cable without objects", func(e *netbox.Export) { e.Cables[1].BTerminations[0].Object = nil }, "b_terminations.object", "interface id 5002 comes without its object"},
		{"switch port unnumbered", func(e *netbox.Export) { e.Cables[0].BTerminations[0].Object.Name = "uplink" }, "b_terminations.object.name", `switch interface "uplink": its name ends with no port number`},
		{"feed of no panel", func(e *netbox.Export) { e.PowerFeeds[1].PowerPanel.ID = 5 }, "power_panel", "dcim/power-feeds id 12 (p1/block/b), field power_panel: power panel id 5 is not in dcim/power-panels"},
	} {
		e := read()
		c.edit(e)
		_, err := netbox.ImportSite(e)
		var oe *netbox.ObjectError
		require.True(t, errors.As(err, &oe), "%s: %v", c.name, err)
		assert.Equal(t, c.field, oe.Field, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}

	// an export missing a page, or an endpoint, says so
	dir := t.TempDir()
	for _, f := range []string{"dcim-racks.json", "dcim-devices.json", "dcim-power-panels.json", "dcim-power-feeds.json", "dcim-cables.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata/netbox-4", f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), raw, 0o644))
	}
	_, err := netbox.ReadDir(dir)
	assert.ErrorContains(t, err, "NetBox counts 3 dcim/devices, the pages hold 2: save every page (follow next) as dcim-devices.json, dcim-devices.2.json")
	raw, err := os.ReadFile("testdata/netbox-4/dcim-devices.2.json")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dcim-devices.2.json"), raw, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "dcim-cables.json")))
	_, err = netbox.ReadDir(dir)
	assert.ErrorContains(t, err, "no dcim-cables.json: save each endpoint's pages as the API returns them")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dcim-racks.json"), []byte("{\n \"count\": \"one\"}"), 0o644))
	_, err = netbox.ReadDir(dir)
	assert.ErrorContains(t, err, "dcim-racks.json: line 2")
}
