package redfish_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/redfish"
)

// The handler serves the tree read-only: GET and HEAD of every document,
// with or without a trailing slash; 405 for anything else and 404 for an
// unknown URI, both with a Redfish error body.
func TestHandler(t *testing.T) {
	tree := treeOf(map[string]string{"/redfish/v1/Chassis": collectionOf()})
	srv := httptest.NewServer(tree.Handler())
	defer srv.Close()
	do := func(method, path string, hdr ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(`{"AssetTag": "x"}`))
		require.NoError(t, err)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		req.SetBasicAuth("anyone", "anything")
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(b)
	}
	root, _ := tree.Get(redfish.Root)
	for _, p := range []string{"/redfish/v1", "/redfish/v1/", "/redfish/v1/?$expand=*"} {
		resp, body := do("GET", p)
		assert.Equal(t, 200, resp.StatusCode, p)
		assert.Equal(t, string(root), body, p)
		assert.Equal(t, "application/json;charset=utf-8", resp.Header.Get("Content-Type"))
		assert.Equal(t, "4.0", resp.Header.Get("OData-Version"))
	}
	resp, body := do("HEAD", "/redfish/v1/Chassis")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Empty(t, body)
	etag := resp.Header.Get("ETag")
	assert.NotEmpty(t, etag)
	resp, _ = do("GET", "/redfish/v1/Chassis", "If-None-Match", etag)
	assert.Equal(t, http.StatusNotModified, resp.StatusCode)

	resp, body = do("GET", "/redfish")
	assert.Equal(t, 200, resp.StatusCode)
	assert.JSONEq(t, `{"v1": "/redfish/v1/"}`, body)

	resp, body = do("GET", "/redfish/v1/Chassis/nope")
	assert.Equal(t, 404, resp.StatusCode)
	assert.Equal(t, "Base.1.5.ResourceMissingAtURI", redfishError(t, body))
	assert.Contains(t, body, `"MessageArgs": [`)

	for _, m := range []string{"POST", "PATCH", "PUT", "DELETE"} {
		resp, body = do(m, "/redfish/v1/Chassis")
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, m)
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"), m)
		assert.Equal(t, "Base.1.5.GeneralError", redfishError(t, body), m)
		assert.Contains(t, body, "read-only", m)
	}
	after, _ := tree.Get("/redfish/v1/Chassis")
	assert.NotContains(t, string(after), "AssetTag", "nothing changed")
}

func redfishError(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
			Info []struct {
				MessageID string `json:"MessageId"`
			} `json:"@Message.ExtendedInfo"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &e), body)
	require.Len(t, e.Error.Info, 1)
	assert.Equal(t, e.Error.Code, e.Error.Info[0].MessageID)
	return e.Error.Code
}

// Fetching the served export over HTTP, by following its links from the
// service root, reads every resource of it (no resource is an orphan),
// and imports to the same graph.
func TestFetchServedExport(t *testing.T) {
	g := exampleGraph(t)
	tree := redfish.Export(g)
	srv := httptest.NewServer(tree.Handler())
	defer srv.Close()
	read, err := redfish.Fetch(t.Context(), strings.Replace(srv.URL, "http://", "http://seam:any@", 1)+"/redfish/v1", srv.Client())
	require.NoError(t, err)
	assert.Empty(t, tree.Diff(read))
	back, rep := redfish.Import(read, srv.URL)
	assert.Empty(t, rep.Problems)
	assert.Empty(t, tree.Diff(redfish.Export(back)))
}

// No input makes Import panic.
func FuzzImport(f *testing.F) {
	f.Add(chassisDoc("A", `"Links": {"ContainedBy": {"@odata.id": "/redfish/v1/Chassis/A"}}`))
	f.Add(chassisDoc("A", `"Links": {"PoweredBy": [{"@odata.id": "/redfish/v1/Chassis/A#/x/~1/9"}], "Oem": {"Seam": {"Kind": 7}}}`))
	f.Add(`{"@odata.type": "#Power.v1_7_3.Power", "PowerSupplies": [1, {"MemberId": 2}, {"@odata.id": 3}]}`)
	f.Add(`{"@odata.type": "#ComputerSystem.v1_27_0.ComputerSystem", "Links": {"Chassis": "x"}, "HostName": []}`)
	f.Add(`{"@odata.type": "#SoftwareInventory.v1_13_0.SoftwareInventory", "RelatedItem": [{"@odata.id": "/redfish/v1"}], "Version": 1}`)
	f.Add(`{"@odata.type": "#Chassis.v1_28_0.Chassis", "Members": [[]], "Location": {"PartLocation": {"LocationOrdinalValue": 1e300}}}`)
	f.Add(`"a string"`)
	f.Fuzz(func(t *testing.T, doc string) {
		tree := treeOf(map[string]string{
			"/redfish/v1/Chassis":       collectionOf("A", "B"),
			"/redfish/v1/Chassis/A":     doc,
			"/redfish/v1/Chassis/B":     chassisDoc("B", `"Links": {"Contains": [{"@odata.id": "/redfish/v1/Chassis/A"}]}`),
			"/redfish/v1/Chassis/A/Pow": doc,
		})
		g, _ := redfish.Import(tree, "fuzz")
		redfish.Export(g)
	})
}
