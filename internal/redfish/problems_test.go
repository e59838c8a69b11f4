package redfish_test

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/redfish"
)

const rootDoc = `{"@odata.id": "/redfish/v1/", "@odata.type": "#ServiceRoot.v1_20_0.ServiceRoot", "Id": "RootService", "Name": "t",
	"Chassis": {"@odata.id": "/redfish/v1/Chassis"}}`

// chassisDoc is a chassis with extra properties (JSON, without braces).
func chassisDoc(id, extra string) string {
	if extra != "" {
		extra = ", " + extra
	}
	return fmt.Sprintf(`{"@odata.id": "/redfish/v1/Chassis/%s", "@odata.type": "#Chassis.v1_28_0.Chassis", "Id": %q, "Name": %q,
		"ChassisType": "Rack"%s}`, id, id, id, extra)
}

func collectionOf(ids ...string) string {
	var m []string
	for _, id := range ids {
		m = append(m, fmt.Sprintf(`{"@odata.id": "/redfish/v1/Chassis/%s"}`, id))
	}
	return fmt.Sprintf(`{"@odata.id": "/redfish/v1/Chassis", "@odata.type": "#ChassisCollection.ChassisCollection", "Name": "c",
		"Members@odata.count": %d, "Members": [%s]}`, len(ids), strings.Join(m, ", "))
}

func treeOf(docs map[string]string) *redfish.Tree {
	t := redfish.NewTree()
	t.Put(redfish.Root, []byte(rootDoc), "")
	for u, d := range docs {
		t.Put(u, []byte(d), "")
	}
	return t
}

// Each problem of a tree gets a message naming the resource's URI (and
// the file it was read from, and where in it), and nothing panics: the
// graph holds what could be read.
func TestBrokenTrees(t *testing.T) {
	for _, c := range []struct {
		name string
		docs map[string]string
		want []string // parts of one problem's text each
	}{
		{"a loop in Contains, by ContainedBy",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A", "B"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"ContainedBy": {"@odata.id": "/redfish/v1/Chassis/B"}}`),
				"/redfish/v1/Chassis/B": chassisDoc("B", `"Links": {"ContainedBy": {"@odata.id": "/redfish/v1/Chassis/A"}}`),
			},
			[]string{"/redfish/v1/Chassis/A: a loop in Contains: /redfish/v1/Chassis/A → /redfish/v1/Chassis/B → /redfish/v1/Chassis/A"}},
		{"a loop in Contains, by Contains",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A", "B", "C"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/B"}]}`),
				"/redfish/v1/Chassis/B": chassisDoc("B", `"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/C"}]}`),
				"/redfish/v1/Chassis/C": chassisDoc("C", `"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/A"}]}`),
			},
			[]string{"a loop in Contains: /redfish/v1/Chassis/A → /redfish/v1/Chassis/C → /redfish/v1/Chassis/B → /redfish/v1/Chassis/A"}},
		{"a chassis in itself",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"ContainedBy": {"@odata.id": "/redfish/v1/Chassis/A"}}`),
			},
			[]string{"/redfish/v1/Chassis/A: a loop in Contains: it contains itself"}},
		{"contained twice",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A", "B", "C"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/C"}]}`),
				"/redfish/v1/Chassis/B": chassisDoc("B", ""),
				"/redfish/v1/Chassis/C": chassisDoc("C", `"Links": {"ContainedBy": {"@odata.id": "/redfish/v1/Chassis/B"}}`),
			},
			[]string{"/redfish/v1/Chassis/C: contained twice: its own links say /redfish/v1/Chassis/B, and /redfish/v1/Chassis/A lists it"}},
		{"a link to nowhere",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"PoweredBy": [{"@odata.id": "/redfish/v1/PowerEquipment/RackPDUs/gone"}]}`),
			},
			[]string{"/redfish/v1/Chassis/A /Links/PoweredBy/0/@odata.id: link to nowhere: /redfish/v1/PowerEquipment/RackPDUs/gone (no resource has that URI)"}},
		{"a member to nowhere",
			map[string]string{"/redfish/v1/Chassis": collectionOf("A")},
			[]string{"/redfish/v1/Chassis /Members/0/@odata.id: link to nowhere: /redfish/v1/Chassis/A"}},
		{"a fragment to nowhere",
			map[string]string{
				"/redfish/v1/Chassis":         collectionOf("A"),
				"/redfish/v1/Chassis/A":       chassisDoc("A", `"Links": {"PoweredBy": [{"@odata.id": "/redfish/v1/Chassis/A/Power#/PowerSupplies/7"}]}`),
				"/redfish/v1/Chassis/A/Power": `{"@odata.id": "/redfish/v1/Chassis/A/Power", "@odata.type": "#Power.v1_7_3.Power", "Id": "Power", "Name": "p", "PowerSupplies": []}`,
			},
			[]string{"link to nowhere: /redfish/v1/Chassis/A/Power#/PowerSupplies/7 (/redfish/v1/Chassis/A/Power has nothing at #/PowerSupplies/7)"}},
		{"a link that is not a URI",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"ContainedBy": {"@odata.id": 7}}`),
			},
			[]string{"/redfish/v1/Chassis/A /Links/ContainedBy/@odata.id: @odata.id is a number, not a string"}},
		{"a member that is not an object",
			map[string]string{
				"/redfish/v1/Chassis": `{"@odata.id": "/redfish/v1/Chassis", "@odata.type": "#ChassisCollection.ChassisCollection", "Name": "c",
					"Members": [{"@odata.id": "/redfish/v1/Chassis/A"}, "/redfish/v1/Chassis/B", null]}`,
				"/redfish/v1/Chassis/A": chassisDoc("A", ""),
			},
			[]string{"/redfish/v1/Chassis /Members/1: member 1 is a string, not an object", "/redfish/v1/Chassis /Members/2: member 2 is null, not an object"}},
		{"Members that is not an array",
			map[string]string{"/redfish/v1/Chassis": `{"@odata.type": "#ChassisCollection.ChassisCollection", "Members": {"a": 1}}`},
			[]string{"/redfish/v1/Chassis /Members: Members is map[string]interface {}, not an array"}},
		{"a document that is not an object",
			map[string]string{"/redfish/v1/Chassis": `[{"@odata.id": "/redfish/v1/Chassis/A"}]`},
			[]string{"/redfish/v1/Chassis: the document is an array, not a JSON object"}},
		{"JSON that does not parse",
			map[string]string{"/redfish/v1/Chassis": "{\n  \"Members\": [\n    {\"@odata.id\": \"/redfish/v1/Chassis/A\"},,\n  ]\n}"},
			[]string{"/redfish/v1/Chassis:3:44 (/redfish/v1/Chassis): JSON does not parse: invalid character ','"}},
		{"a kind seam does not have",
			map[string]string{
				"/redfish/v1/Chassis":   collectionOf("A"),
				"/redfish/v1/Chassis/A": chassisDoc("A", `"Oem": {"Seam": {"Kind": "toaster"}}`),
			},
			[]string{`/redfish/v1/Chassis/A /Oem/Seam/Kind: Oem.Seam.Kind "toaster" is not a kind of seam's inventory`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, rep := redfish.Import(treeOf(c.docs), "test")
			require.NotNil(t, g)
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.String())
			}
			for _, w := range c.want {
				assert.True(t, containsPart(got, w), "no problem says %q; the problems:\n%s", w, strings.Join(got, "\n"))
			}
			assert.False(t, rep.OK())
		})
	}
}

func containsPart(list []string, part string) bool {
	for _, s := range list {
		if strings.Contains(s, part) {
			return true
		}
	}
	return false
}

// Read from a directory, a problem names the file, and for JSON that
// does not parse its line and column.
func TestBrokenMockupDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, doc string) {
		p := filepath.Join(dir, filepath.FromSlash(rel), "index.json")
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(doc), 0o644))
	}
	write(".", rootDoc)
	write("Chassis", collectionOf("A", "B"))
	write("Chassis/A", chassisDoc("A", `"Links": {"ContainedBy": {"@odata.id": "/redfish/v1/Chassis/B"}}`))
	write("Chassis/B", "{\n  \"Id\": \"B\",\n  \"Name\": \"B\" \"ChassisType\": \"Rack\"\n}\n")
	tree, err := redfish.ReadDir(dir)
	require.NoError(t, err)
	_, rep := redfish.Import(tree, dir)
	var got []string
	for _, p := range rep.Problems {
		got = append(got, p.String())
	}
	file := filepath.Join(dir, "Chassis", "B", "index.json")
	assert.Equal(t, []string{file + ":3:15 (/redfish/v1/Chassis/B): JSON does not parse: invalid character '\"' after object key:value pair"}, got,
		"B is there, though broken: A's link to it is no link to nowhere")

	_, err = redfish.ReadDir(filepath.Join(dir, "Chassis", "A", "nothing"))
	assert.ErrorContains(t, err, "not a Redfish mockup")
}

// Read from a service, a link to nowhere says what its GET returned.
func TestBrokenService(t *testing.T) {
	tree := treeOf(map[string]string{
		"/redfish/v1/Chassis":   collectionOf("A"),
		"/redfish/v1/Chassis/A": chassisDoc("A", `"Links": {"ManagedBy": [{"@odata.id": "/redfish/v1/Managers/gone"}]}`),
	})
	srv := httptest.NewServer(tree.Handler())
	defer srv.Close()
	read, err := redfish.Fetch(t.Context(), srv.URL, srv.Client())
	require.NoError(t, err)
	_, rep := redfish.Import(read, srv.URL)
	require.Len(t, rep.Problems, 1)
	assert.Equal(t, srv.URL+"/redfish/v1/Chassis/A (/redfish/v1/Chassis/A) /Links/ManagedBy/0/@odata.id: link to nowhere: "+
		"/redfish/v1/Managers/gone (GET /redfish/v1/Managers/gone: 404 Not Found)", rep.Problems[0].String())

	_, err = redfish.Fetch(t.Context(), "http://127.0.0.1:1", nil)
	assert.ErrorContains(t, err, "http://127.0.0.1:1/redfish/v1/")
}
