package redfish

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Root is the URI of a Redfish service root.
const Root = "/redfish/v1"

// Tree is a Redfish service as documents by URI: what Export writes,
// what a Handler serves, what Import reads. URIs are kept without a
// trailing slash ("/redfish/v1", "/redfish/v1/Chassis/ma-r01"); a
// document is JSON bytes, served as they are.
type Tree struct {
	docs map[string][]byte
	// files names where each document was read from (a path or a URL),
	// for messages; empty for a tree built in memory.
	files map[string]string
	// gone says why a linked URI is not in a tree read from a service
	// (the status of its GET).
	gone map[string]string
	// origin is the scheme and host of the service the tree was read
	// from: links that start with it are links into the tree.
	origin string
}

// NewTree is an empty tree.
func NewTree() *Tree {
	return &Tree{docs: map[string][]byte{}, files: map[string]string{}, gone: map[string]string{}}
}

// Clean is uri as a tree keys it: no trailing slash, no fragment, no
// query.
func Clean(uri string) string {
	if i := strings.IndexAny(uri, "#?"); i >= 0 {
		uri = uri[:i]
	}
	for len(uri) > 1 && strings.HasSuffix(uri, "/") {
		uri = uri[:len(uri)-1]
	}
	return uri
}

// Put stores the document at uri, read from file ("" for none).
func (t *Tree) Put(uri string, doc []byte, file string) {
	uri = Clean(uri)
	t.docs[uri] = doc
	if file != "" {
		t.files[uri] = file
	}
}

// Get is the document at uri.
func (t *Tree) Get(uri string) ([]byte, bool) {
	d, ok := t.docs[Clean(uri)]
	return d, ok
}

// File is where the document at uri was read from, or uri itself.
func (t *Tree) File(uri string) string {
	if f, ok := t.files[Clean(uri)]; ok {
		return f
	}
	return uri
}

// Len is how many documents the tree holds.
func (t *Tree) Len() int { return len(t.docs) }

// Bytes is the size of all documents.
func (t *Tree) Bytes() int {
	n := 0
	for _, d := range t.docs {
		n += len(d)
	}
	return n
}

// URIs lists the tree's URIs, sorted.
func (t *Tree) URIs() []string {
	out := make([]string, 0, len(t.docs))
	for u := range t.docs {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// Diff is "" when both trees hold the same URIs with byte-identical
// documents, else the first difference.
func (t *Tree) Diff(o *Tree) string {
	for _, u := range t.URIs() {
		od, ok := o.docs[u]
		if !ok {
			return u + ": only in the first tree"
		}
		if d := t.docs[u]; !bytes.Equal(d, od) {
			i := 0
			for i < len(d) && i < len(od) && d[i] == od[i] {
				i++
			}
			return fmt.Sprintf("%s: the documents differ at byte %d: %q vs %q", u, i, excerpt(d, i), excerpt(od, i))
		}
	}
	for _, u := range o.URIs() {
		if _, ok := t.docs[u]; !ok {
			return u + ": only in the second tree"
		}
	}
	return ""
}

func excerpt(b []byte, at int) string {
	from, to := max(at-30, 0), min(at+30, len(b))
	return string(b[from:to])
}

// indexFile is the name of every document in a mockup directory.
const indexFile = "index.json"

// WriteDir writes the tree to dir in the tall mockup layout of DMTF's
// Redfish-Mockup-Server: the document at /redfish/v1/X is
// dir/redfish/v1/X/index.json. A mockup server (or ReadDir) serves it
// back as it is.
func (t *Tree) WriteDir(dir string) error {
	const writers = 4
	uris := t.URIs() // a directory sorts before the ones below it
	made := map[string]bool{}
	for _, u := range uris {
		d := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(u, "/")))
		if made[filepath.Dir(d)] {
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		} else if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		made[d] = true
	}
	// the files, a few at a time: most of the time goes to the file system
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	work := make(chan string)
	for range writers {
		wg.Go(func() {
			for u := range work {
				p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(u, "/")), indexFile)
				if err := os.WriteFile(p, t.docs[u], 0o644); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for _, u := range uris {
		work <- u
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// ReadDir reads a mockup directory in place: the tall layout
// (dir/redfish/v1/index.json, as WriteDir writes it) or the short one of
// DMTF's published mockups (dir/index.json is the service root). Every
// index.json below it is a document; its URI is its directory's path
// under the service root. Documents are read, not parsed: Import reports
// the ones that do not parse.
func ReadDir(dir string) (*Tree, error) {
	root := filepath.Join(dir, "redfish", "v1")
	if _, err := os.Stat(filepath.Join(root, indexFile)); err != nil {
		root = dir
		if _, err := os.Stat(filepath.Join(root, indexFile)); err != nil {
			return nil, fmt.Errorf("%s: not a Redfish mockup: neither redfish/v1/%s nor %s is there", dir, indexFile, indexFile)
		}
	}
	t := NewTree()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != indexFile {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		uri := Root
		if rel != "." {
			uri += "/" + filepath.ToSlash(rel)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		t.Put(uri, b, p)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return t, nil
}

// Members is how many members the collection at uri lists (0 when
// there is none).
func (t *Tree) Members(uri string) int {
	v, _, _, err := decode(t.docs[Clean(uri)])
	if err != nil {
		return 0
	}
	o, _ := v.(map[string]any)
	list, _ := o["Members"].([]any)
	return len(list)
}

// Summary counts the top-level collections of a tree, for people.
func (t *Tree) Summary() string {
	var parts []string
	for _, c := range []struct{ uri, what string }{{chassisColl, "chassis"}, {systemsColl, "systems"}, {managersColl, "managers"},
		{pdCollections["PowerShelf"], "power shelves"}, {pdCollections["RackPDU"], "rack PDUs"}, {cdusColl, "CDUs"},
		{loopsColl, "cooling loops"}} {
		parts = append(parts, fmt.Sprintf("%d %s", t.Members(c.uri), c.what))
	}
	size := fmt.Sprintf("%.1f MB", float64(t.Bytes())/1e6)
	if t.Bytes() < 1e6 {
		size = fmt.Sprintf("%.1f kB", float64(t.Bytes())/1e3)
	}
	return fmt.Sprintf("%d resources (%s): %s", t.Len(), size, strings.Join(parts, ", "))
}
