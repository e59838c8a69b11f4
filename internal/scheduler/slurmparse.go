package scheduler

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/topology/hostlist"
)

// ParseTopology reads `scontrol show topology` (what slurmctld runs),
// in the line formats of Slurm's tree and block plugins:
//
//	SwitchName=%s Level=%u LinkSpeed=%u[ Nodes=%s][ Switches=%s]
//	BlockName=%s BlockIndex=%u[ Nodes=%s] BlockSize=%u   (AggregatedBlock= for derived blocks)
//
// Hostlists are expanded. source names the input in errors. A line that
// is neither, a hostlist cut short (SLURM_TOPO_LEN truncates lines) or an
// empty input is an error naming the line.
func ParseTopology(source string, b []byte) (*State, error) {
	st := &State{System: "slurm", Sources: []string{source}}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 256*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if err := st.parseLine(line, n); err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", source, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if len(st.Switches) == 0 && len(st.Blocks) == 0 {
		return nil, fmt.Errorf("%s: no switch or block: scontrol show topology printed nothing (is TopologyPlugin topology/none or topology/flat?)", source)
	}
	return st, nil
}

func (st *State) parseLine(line string, n int) error {
	if strings.HasPrefix(line, "No topology information") {
		return errors.New("Slurm has no topology information (TopologyPlugin is topology/none?)")
	}
	kv, err := ParseKV(line)
	if err == nil && kv.Stray != "" {
		err = fmt.Errorf("%q is not key=value", kv.Stray)
	}
	if err != nil {
		return fmt.Errorf("%w: not a line of scontrol show topology", err)
	}
	first, _ := kv.First()
	fields := kv
	nodes, err := hostlist.Expand(fields.Get("Nodes"))
	if err != nil {
		return fmt.Errorf("Nodes=: %w", err)
	}
	switch first {
	case "SwitchName":
		if st.Plugin == "block" {
			return errors.New("a SwitchName line among BlockName lines")
		}
		st.Plugin = "tree"
		level, err := number(fields, "Level", "SwitchName")
		if err != nil {
			return err
		}
		children, err := hostlist.Expand(fields.Get("Switches"))
		if err != nil {
			return fmt.Errorf("Switches=: %w", err)
		}
		st.Switches = append(st.Switches, Switch{Name: fields.Get("SwitchName"), Level: level, Nodes: nodes, Switches: children, Line: n})
	case "BlockName", "AggregatedBlock":
		if st.Plugin == "tree" {
			return fmt.Errorf("a %s line among SwitchName lines", first)
		}
		st.Plugin = "block"
		idx, err := number(fields, "BlockIndex", first)
		if err != nil {
			return err
		}
		size := 0
		if fields.Has("BlockSize") { // Slurm 24.05 and later
			if size, err = number(fields, "BlockSize", first); err != nil {
				return err
			}
		}
		st.Blocks = append(st.Blocks, Block{Name: fields.Get(first), Index: idx, Aggregated: first == "AggregatedBlock", Nodes: nodes, Size: size, Line: n})
	default:
		return fmt.Errorf("%q: not a line of scontrol show topology (SwitchName=… or BlockName=…; output of another Slurm version, or another command?)", cut(line))
	}
	return nil
}

func number(fields KV, key, kind string) (int, error) {
	v, ok := fields.Get(key), fields.Has(key)
	if !ok {
		return 0, fmt.Errorf("a %s line without %s= (from another Slurm version?)", kind, key)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number (truncated?)", key, v)
	}
	return n, nil
}

func cut(s string) string {
	if len(s) > 60 {
		return s[:60] + "…"
	}
	return s
}

// ParseSinfo reads `sinfo --json`: the nodes with their state and
// features, and the Slurm version. Two shapes are read: Slurm 22.05's
// (checked: nodes[] with name, state, features as a comma-separated
// string) and the later one that lists sinfo[] groups (nodes.nodes[],
// features.total, node.state[]), as 24.11 writes it.
func ParseSinfo(source string, b []byte) (*State, error) {
	var doc struct {
		Meta   json.RawMessage   `json:"meta"`
		Errors []json.RawMessage `json:"errors"`
		Nodes  []sinfoRecord     `json:"nodes"`
		Sinfo  []json.RawMessage `json:"sinfo"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", source, jsonError(b, err))
	}
	version := slurmVersion(doc.Meta)
	st := &State{System: "slurm", Version: version, Sources: []string{source}, Nodes: []Node{}}
	if len(doc.Errors) > 0 {
		return nil, fmt.Errorf("%s: sinfo reported errors: %s", source, bytes.Join(rawList(doc.Errors), []byte("; ")))
	}
	switch {
	case doc.Nodes != nil:
		for i, raw := range doc.Nodes {
			n, err := raw.node()
			if err != nil {
				return nil, fmt.Errorf("%s: nodes[%d]: %w (sinfo --json of Slurm %s)", source, i, err, orUnknown(version))
			}
			st.Nodes = append(st.Nodes, n)
		}
	case doc.Sinfo != nil:
		for i, raw := range doc.Sinfo {
			ns, err := sinfoGroup(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: sinfo[%d]: %w (sinfo --json of Slurm %s)", source, i, err, orUnknown(version))
			}
			st.Nodes = append(st.Nodes, ns...)
		}
	default:
		return nil, fmt.Errorf("%s: neither nodes[] (Slurm 22.05) nor sinfo[] (24.x) in sinfo --json of Slurm %s: a shape seam does not read", source, orUnknown(version))
	}
	st.Nodes = sortNodes(st.Nodes)
	return st, nil
}

func orUnknown(v string) string {
	if v == "" {
		return "(version not stated)"
	}
	return v
}

func rawList(rs []json.RawMessage) [][]byte {
	out := make([][]byte, len(rs))
	for i, r := range rs {
		out[i] = r
	}
	return out
}

// slurmVersion reads meta.Slurm.version (22.05: numbers) or
// meta.slurm.version (later: strings).
func slurmVersion(meta json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil {
		return ""
	}
	for _, key := range []string{"Slurm", "slurm"} {
		var s struct {
			Version struct{ Major, Minor, Micro json.RawMessage } `json:"version"`
			Release string                                        `json:"release"`
		}
		if json.Unmarshal(m[key], &s) != nil {
			continue
		}
		if s.Release != "" {
			return s.Release
		}
		if v := unquote(s.Version.Major); v != "" {
			return fmt.Sprintf("%s.%s.%s", v, unquote(s.Version.Minor), unquote(s.Version.Micro))
		}
	}
	return ""
}

func unquote(r json.RawMessage) string { return strings.Trim(string(r), `"`) }

// strings22 reads a comma-separated string (22.05) or a list of strings.
func stringList(raw json.RawMessage) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return splitList(s), nil
	}
	var l []string
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("%s is neither a string nor a list of strings", cut(string(raw)))
	}
	return l, nil
}

// sinfoRecord is a node of sinfo --json's nodes[], decoded in the
// document's one pass; state and features are a string or a list.
type sinfoRecord struct {
	Name     string          `json:"name"`
	State    json.RawMessage `json:"state"`
	Features json.RawMessage `json:"features"`
}

func (n sinfoRecord) node() (Node, error) {
	if n.Name == "" {
		return Node{}, errors.New("a node without a name")
	}
	state, err := stringList(n.State)
	if err != nil {
		return Node{}, fmt.Errorf("node %s: state: %w", n.Name, err)
	}
	var features []string
	if len(n.Features) > 0 && n.Features[0] == '{' {
		var total struct{ Total string }
		if err := json.Unmarshal(n.Features, &total); err != nil {
			return Node{}, fmt.Errorf("node %s: features: %w", n.Name, err)
		}
		features = splitList(total.Total)
	} else if features, err = stringList(n.Features); err != nil {
		return Node{}, fmt.Errorf("node %s: features: %w", n.Name, err)
	}
	return Node{Name: n.Name, State: strings.ToLower(strings.Join(state, "+")), Features: features}, nil
}

func sinfoGroup(raw json.RawMessage) ([]Node, error) {
	var g struct {
		Node struct {
			State []string `json:"state"`
		} `json:"node"`
		Nodes struct {
			Nodes []string `json:"nodes"`
		} `json:"nodes"`
		Features struct {
			Total string `json:"total"`
		} `json:"features"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		return nil, err
	}
	features := splitList(g.Features.Total)
	var out []Node
	for _, expr := range g.Nodes.Nodes {
		names, err := hostlist.Expand(expr)
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			out = append(out, Node{Name: name, State: strings.ToLower(strings.Join(g.Node.State, "+")), Features: features})
		}
	}
	return out, nil
}

// jsonError says where JSON stops being JSON: a truncated file (it ends
// inside a value), or the line and column of the first bad byte.
func jsonError(b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(b, " \t\r\n")))):
		if len(bytes.TrimSpace(b)) == 0 {
			return errors.New("empty: no JSON")
		}
		return fmt.Errorf("truncated: the JSON ends inside a value after %d bytes", len(b))
	case errors.As(err, &se):
		line, col := lineCol(b, int(se.Offset)-1)
		return fmt.Errorf("not JSON: %v at line %d, column %d", se, line, col)
	case errors.As(err, &te):
		line, col := lineCol(b, int(te.Offset))
		return fmt.Errorf("%s is a JSON %s, want %s, at line %d, column %d (the output of another version?)", orField(te.Field), te.Value, te.Type, line, col)
	}
	return err
}

func orField(f string) string {
	if f == "" {
		return "the document"
	}
	return f
}

func lineCol(b []byte, off int) (int, int) {
	off = min(max(off, 0), len(b))
	line := 1 + bytes.Count(b[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(b[:off], '\n')
}

// splitList splits a comma-separated list.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
