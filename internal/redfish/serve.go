package redfish

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
)

// Handler serves the tree read-only, as a Redfish service: GET and HEAD
// of every document (with or without a trailing slash; queries such as
// $expand are not supported and ignored), GET /redfish for the protocol
// versions; any other method is 405, an unknown URI 404, both with a
// Redfish error body (Base.1.5.0 messages). Any credentials, or none,
// are accepted: nothing can be changed. The tree must not change while
// it is served.
func (t *Tree) Handler() http.Handler { return http.HandlerFunc(t.serve) }

// versions is GET /redfish: the protocol versions the service speaks.
var versions = []byte("{\n    \"v1\": \"/redfish/v1/\"\n}\n")

func (t *Tree) serve(w http.ResponseWriter, r *http.Request) {
	uri := Clean(r.URL.Path)
	doc, ok := t.docs[uri]
	if uri == "/redfish" {
		doc, ok = versions, true
	}
	h := w.Header()
	h.Set("OData-Version", "4.0")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "GeneralError",
			"A general error has occurred. See Resolution for information on how to resolve the error.",
			fmt.Sprintf("This service is a read-only export: %s is not allowed; use GET or HEAD.", r.Method), nil)
		return
	}
	if !ok {
		writeError(w, http.StatusNotFound, "ResourceMissingAtURI",
			fmt.Sprintf("The resource at the URI %s was not found.", r.URL.Path),
			"Place a valid resource at the URI or correct the URI and resubmit the request.", []string{r.URL.Path})
		return
	}
	sum := fnv.New64a()
	sum.Write(doc)
	etag := fmt.Sprintf(`"%016x"`, sum.Sum64())
	h.Set("ETag", etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", "application/json;charset=utf-8")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Length", fmt.Sprint(len(doc)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(doc)
	}
}

// writeError writes a Redfish error response with one message of the
// Base 1.5.0 registry.
func writeError(w http.ResponseWriter, status int, id, message, resolution string, args []string) {
	msgID := "Base.1.5." + id
	info := map[string]any{
		"@odata.type": "#Message.v1_1_1.Message",
		"MessageId":   msgID,
		"Message":     message,
		"Resolution":  resolution,
		"Severity":    "Critical",
	}
	if args != nil {
		info["MessageArgs"] = args
	}
	body, _ := json.MarshalIndent(map[string]any{"error": map[string]any{
		"code":                  msgID,
		"message":               message,
		"@Message.ExtendedInfo": []any{info},
	}}, "", "    ")
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
