package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// kubeItem is one Node of kubectl's list, as far as seam reads it.
type kubeItem struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name          string          `json:"name"`
		Labels        labelMap        `json:"labels"`
		ManagedFields json.RawMessage `json:"managedFields"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
}

// ParseKubeNodes reads `kubectl get nodes -o json` (a List or NodeList
// of Nodes): each node's name and labels, and which field manager set
// each label when the input carries metadata.managedFields (kubectl get
// --show-managed-fields). A large list is decoded on every CPU.
func ParseKubeNodes(source string, b []byte) (*State, error) {
	kind, items, err := decodeKubeList(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, jsonError(b, err))
	}
	if kind != "List" && kind != "NodeList" {
		return nil, fmt.Errorf("%s: kind %q: want the List that kubectl get nodes -o json writes", source, kind)
	}
	st := &State{System: "kubernetes", Sources: []string{source}, Nodes: make([]Node, 0, len(items))}
	for i, it := range items {
		if it.Kind != "" && it.Kind != "Node" {
			return nil, fmt.Errorf("%s: items[%d] is a %s, not a Node", source, i, it.Kind)
		}
		if it.Metadata.Name == "" {
			return nil, fmt.Errorf("%s: items[%d] has no metadata.name", source, i)
		}
		n := Node{Name: it.Metadata.Name, Labels: it.Metadata.Labels, State: "ready"}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		if it.Spec.Unschedulable {
			n.State = "cordoned"
		}
		n.managed = it.Metadata.ManagedFields
		st.Nodes = append(st.Nodes, n)
	}
	st.Nodes = sortNodes(st.Nodes)
	return st, nil
}

// decodeKubeList decodes the list: its items split by a structural scan
// and decoded in parallel when there are many, else (and whenever that
// fails, for a positioned error) by one json.Unmarshal.
func decodeKubeList(b []byte) (string, []kubeItem, error) {
	if kind, raws, ok := listItems(b); ok && len(raws) >= 4096 {
		items := make([]kubeItem, len(raws))
		workers := max(1, min(runtime.GOMAXPROCS(0), 8))
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := w; i < len(raws); i += workers {
					if err := json.Unmarshal(raws[i], &items[i]); err != nil {
						errs[w] = err
						return
					}
				}
			})
		}
		wg.Wait()
		if errors.Join(errs...) == nil {
			return kind, items, nil
		}
	}
	var doc struct {
		Kind  string     `json:"kind"`
		Items []kubeItem `json:"items"`
	}
	err := json.Unmarshal(b, &doc)
	return doc.Kind, doc.Items, err
}

// listItems finds, by a scan of the structure only (each item is
// checked when it is decoded), the top-level object's kind and the
// bytes of each element of its items.
func listItems(b []byte) (kind string, items [][]byte, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", nil, false
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		key, next, err := jsonString(b, i, false)
		if err != nil {
			return "", nil, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return "", nil, false
		}
		i = skipSpace(b, i+1)
		switch {
		case key == "kind":
			if kind, next, err = jsonString(b, i, false); err != nil {
				return "", nil, false
			}
			i = next
		case key == "items" && i < len(b) && b[i] == '[':
			if items, i, ok = elements(b, i); !ok {
				return "", nil, false
			}
		default:
			if i, ok = skipValue(b, i); !ok {
				return "", nil, false
			}
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if i >= len(b) || skipSpace(b, i+1) != len(b) {
		return "", nil, false
	}
	return kind, items, true
}

// elements splits the array at b[i].
func elements(b []byte, i int) ([][]byte, int, bool) {
	var out [][]byte
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != ']' {
		end, ok := skipValue(b, i)
		if !ok {
			return nil, i, false
		}
		out = append(out, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	if i >= len(b) {
		return nil, i, false
	}
	return out, i + 1, true
}

// skipValue returns the end of the value at b[i]: a string, an object or
// array (brackets counted outside strings), or a literal.
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch b[i] {
	case '"':
		_, end, err := jsonString(b, i, false)
		return end, err == nil
	case '{', '[':
		depth, inString := 0, false
		for j := i; j < len(b); j++ {
			c := b[j]
			switch {
			case inString && c == '\\':
				j++
			case c == '"':
				inString = !inString
			case inString:
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return len(b), false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	return j, j > i
}

// KubeFile is a saved `kubectl get nodes -o json`.
type KubeFile struct{ Path string }

// Read reads the saved copy.
func (k KubeFile) Read(context.Context) (*State, error) {
	b, err := os.ReadFile(k.Path)
	if err != nil {
		return nil, fmt.Errorf("kubectl get nodes -o json: %w", err)
	}
	return ParseKubeNodes(k.Path, b)
}

// Managers are the field managers that set label key on the node: from
// LabelManagers, else from the node's metadata.managedFields as read
// (kept undecoded until asked: most drift checks never need them).
func (n *Node) Managers(key string) []string {
	if m, ok := n.LabelManagers[key]; ok {
		return m
	}
	raw := n.managed
	if len(raw) == 0 {
		return nil
	}
	var fields []struct {
		Manager  string `json:"manager"`
		FieldsV1 struct {
			Metadata struct {
				Labels map[string]json.RawMessage `json:"f:labels"`
			} `json:"f:metadata"`
		} `json:"fieldsV1"`
	}
	if json.Unmarshal(raw, &fields) != nil {
		return nil
	}
	var out []string
	for _, f := range fields {
		if _, ok := f.FieldsV1.Metadata.Labels["f:"+key]; ok && !slices.Contains(out, f.Manager) {
			out = append(out, f.Manager)
		}
	}
	slices.Sort(out)
	return out
}

// labelMap is a node's labels, decoded by hand: a flat object of
// strings, its keys shared between nodes (the same few keys recur on
// every node of a 100,000-node list).
type labelMap map[string]string

var (
	internMu sync.Mutex
	interned = map[string]string{}
)

func intern(b []byte) string {
	internMu.Lock()
	defer internMu.Unlock()
	if s, ok := interned[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(interned) < 1<<16 {
		interned[s] = s
	}
	return s
}

// UnmarshalJSON reads {"key": "value", …}; the decoder has checked that
// b is JSON already.
func (m *labelMap) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	out := make(map[string]string, 8)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return fmt.Errorf("labels: want an object, got %s", strings.SplitN(string(b), "\n", 2)[0])
	}
	i = skipSpace(b, i+1)
	for i < len(b) && b[i] != '}' {
		key, next, err := jsonString(b, i, true)
		if err != nil {
			return err
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return errors.New("labels: want ':'")
		}
		i = skipSpace(b, i+1)
		value, next, err := jsonString(b, i, false)
		if err != nil {
			return fmt.Errorf("labels: %s: %w", key, err)
		}
		out[key] = value
		i = skipSpace(b, next)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	*m = out
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonString reads the JSON string at b[i]; key strings are interned.
func jsonString(b []byte, i int, key bool) (string, int, error) {
	if i >= len(b) || b[i] != '"' {
		return "", i, errors.New("want a string")
	}
	j := i + 1
	escaped := false
	for j < len(b) && b[j] != '"' {
		if b[j] == '\\' {
			escaped = true
			j++
		}
		j++
	}
	if j >= len(b) {
		return "", j, errors.New("an unterminated string")
	}
	if escaped {
		var s string
		if err := json.Unmarshal(b[i:j+1], &s); err != nil {
			return "", j, err
		}
		return s, j + 1, nil
	}
	if key {
		return intern(b[i+1 : j]), j + 1, nil
	}
	return string(b[i+1 : j]), j + 1, nil
}
