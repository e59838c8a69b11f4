package firmware

import (
	_ "embed"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
)

//go:embed schema.cue
var schemaCUE []byte

// ImportPath is where firmware files may import the schema from.
const ImportPath = "seam.dev/firmware"

// bind makes every entry of baselines a #Baseline and policy a #Policy.
const bind = `import seamfirmware "seam.dev/firmware"

baselines: [string]: seamfirmware.#Baseline
policy?: seamfirmware.#Policy
`

const schemaDoc = "internal/firmware/schema.cue (explained in docs/firmware.md)"

// Load reads a firmware directory. A non-nil error is a tool failure
// (an unreadable directory); problems with the baselines are
// diagnostics positioned in the files relative to dir, every one at
// once. The set is nil when the CUE does not load or fails its schema;
// with FW errors it is returned all the same (vet reports them, a plan
// refuses them).
func Load(dir string) (*Set, diag.List, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("firmware baseline: %s is not a directory (the contracts' %s/, or --baseline DIR)", dir, Dir)
	}
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: ImportPath, Files: map[string][]byte{"firmware.cue": schemaCUE},
		Bind: bind, SchemaDoc: schemaDoc})
	if err != nil {
		return nil, nil, fmt.Errorf("firmware baseline: %w", err)
	}
	if diags.Count(diag.Error) > 0 {
		return nil, diags.Sorted(), nil
	}
	d := &decoder{r: r}
	d.topLevel()
	d.diags = append(d.diags, r.Validate(d.units()...)...)
	if d.diags.Count(diag.Error) > 0 {
		return nil, d.diags.Sorted(), nil
	}
	set := d.decode()
	if set.Digest, err = canon.Digest(r.Value); err != nil {
		return nil, nil, fmt.Errorf("firmware baseline %s: %w", dir, err)
	}
	return set, d.diags.Sorted(), nil
}

type decoder struct {
	r     *cueload.Result
	diags diag.List
}

func (d *decoder) topLevel() {
	it, err := d.r.Value.Fields()
	if err != nil {
		return
	}
	for it.Next() {
		if l := it.Selector().Unquoted(); l != "baselines" && l != "policy" {
			d.diags.Errorf(cueload.RuleNotAllowed, d.r.UserPos(it.Value()), l, "unknown top-level field %q", l).Hint =
				"a firmware directory holds `baselines: \"MODEL\": {...}` and `policy: {...}`"
		}
	}
}

// units lists the parts validated on their own, so that one error never
// hides another: each baseline, and the policy.
func (d *decoder) units() []cue.Path {
	paths := []cue.Path{cue.ParsePath("policy")}
	for _, l := range cueload.Labels(d.r.Value.LookupPath(cue.ParsePath("baselines"))) {
		paths = append(paths, cue.MakePath(cue.Str("baselines"), cue.Str(l)))
	}
	return paths
}

func (d *decoder) decode() *Set {
	set := &Set{Dir: d.r.Dir, Baselines: map[string]*Baseline{}}
	root := d.r.Value.LookupPath(cue.ParsePath("baselines"))
	for _, key := range cueload.Labels(root) {
		set.Baselines[key] = d.baseline(key, lookup(root, key))
	}
	if p := d.r.Value.LookupPath(cue.ParsePath("policy")); p.Exists() {
		set.Policy = d.policy(p)
	}
	return set
}

func lookup(v cue.Value, labels ...string) cue.Value {
	sels := make([]cue.Selector, len(labels))
	for i, l := range labels {
		sels[i] = cue.Str(l)
	}
	return v.LookupPath(cue.MakePath(sels...))
}

func str(v cue.Value, label string) string {
	s, _ := lookup(v, label).String()
	return s
}

func strs(v cue.Value) []string {
	var out []string
	it, err := v.List()
	if err != nil {
		return nil
	}
	for it.Next() {
		s, _ := it.Value().String()
		out = append(out, s)
	}
	return out
}

// path is a baseline's or component's contract path, for diagnostics.
func path(key string, more ...string) string {
	p := "baselines." + strconv.Quote(key)
	for _, m := range more {
		p += "." + m
	}
	return p
}

func (d *decoder) policy(v cue.Value) Policy {
	p := Policy{Pos: d.r.UserPos(v)}
	intOf := func(labels ...string) int {
		n, _ := lookup(v, labels...).Int64()
		return int(n)
	}
	p.CanaryRacks = intOf("canary", "racks")
	p.MaxRacksPerModule = intOf("max_racks_per_module")
	p.MaxNodesPerStage = intOf("max_nodes_per_stage")
	p.WholeScaleUpDomains, _ = lookup(v, "whole_scale_up_domains").Bool()
	p.ControlPlanesApart, _ = lookup(v, "control_planes_apart").Bool()
	p.SignedBy = strs(lookup(v, "signed_by"))
	return p
}

// baseline decodes one baseline and checks its components: digests,
// resets, the order and the dependencies.
func (d *decoder) baseline(key string, v cue.Value) *Baseline {
	b := &Baseline{Key: key, Pos: d.r.UserPos(v)}
	ov := lookup(v, "order")
	b.OrderPos = d.r.UserPos(ov)
	cv := lookup(v, "components")
	byName := map[string]*Component{}
	for _, name := range cueload.Labels(cv) {
		c := d.component(key, name, lookup(cv, name))
		byName[name] = c
	}
	b.Components = d.ordered(key, ov, byName)
	d.dependencies(b, byName, cv)
	return b
}

func (d *decoder) component(key, name string, v cue.Value) *Component {
	c := &Component{Name: name, Version: str(v, "version"), URI: str(lookup(v, "image"), "uri"), Targets: strs(lookup(v, "targets")),
		ApplyTime: str(v, "apply_time"), Reset: str(v, "reset"), After: strs(lookup(v, "after")),
		Pos: d.r.UserPos(v), VersionPos: d.r.UserPos(lookup(v, "version"))}
	c.DomainUniform, _ = lookup(v, "domain_uniform").Bool()
	p := path(key, "components", name)
	sum := lookup(v, "image", "sha256")
	switch s, _ := sum.String(); {
	case !sum.Exists():
		d.diags.Errorf(RuleDigest, c.Pos, p, "%s: component %s of %s has no image digest", p, name, key).Hint =
			"give the image's sha256 (image: {uri: \"…\", sha256: \"64 hex digits\"}): apply serves and checks only images with a digest"
	case !isSHA256(s):
		d.diags.Errorf(RuleDigest, d.r.UserPos(sum), p+".image.sha256", "%s.image.sha256: %q is not a sha256 digest (64 hexadecimal digits)", p, s).Hint =
			"write the digest as `sha256sum` prints it, without a prefix"
	default:
		c.SHA256 = strings.ToLower(s)
	}
	if c.ApplyTime == OnReset && c.Reset == ResetNone {
		d.diags.Errorf(RuleReset, d.r.UserPos(lookup(v, "reset")), p+".reset", "%s: component %s of %s is applied OnReset but names no reset: it would never take effect", p, name, key).Hint =
			"name the reset that applies it (system, manager or chassis), or apply it Immediate"
	}
	return c
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

// ordered returns the components in order's order: each entry must name
// a component, once; a component it leaves out is an error too (and
// comes last, by name).
func (d *decoder) ordered(key string, ov cue.Value, byName map[string]*Component) []*Component {
	var out []*Component
	seen := map[string]bool{}
	names := strs(ov)
	for i, name := range names {
		pos := d.r.UserPos(ov.LookupPath(cue.MakePath(cue.Index(i))))
		p := path(key, "order")
		switch c := byName[name]; {
		case c == nil:
			d.diags.Errorf(RuleComponent, pos, p, "%s: %q is no component of %s", p, name, key).Hint = didYouMean(name, keys(byName))
		case seen[name]:
			d.diags.Errorf(RuleComponent, pos, p, "%s: %s is listed twice", p, name).Hint = "list each component once, in the order it is updated"
		default:
			seen[name] = true
			out = append(out, c)
		}
	}
	for _, name := range keys(byName) {
		if !seen[name] {
			c := byName[name]
			d.diags.Errorf(RuleComponent, c.Pos, path(key, "components", name), "%s: component %s is missing from order", path(key, "order"), name).Hint =
				"add it to order where it is updated: the order is what apply follows"
			out = append(out, c)
		}
	}
	return out
}

func keys(m map[string]*Component) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func didYouMean(s string, names []string) string {
	if g := cueload.Closest(s, names); len(g) > 0 {
		return fmt.Sprintf("did you mean %q? The components are %s", g[0], strings.Join(names, ", "))
	}
	return "the components are " + strings.Join(names, ", ")
}

// dependencies checks each component's after: it names components of
// the baseline, without a cycle, each ordered before it.
func (d *decoder) dependencies(b *Baseline, byName map[string]*Component, cv cue.Value) {
	rank := map[string]int{}
	for i, c := range b.Components {
		rank[c.Name] = i
	}
	inCycle := d.cycles(b, byName)
	for _, c := range b.Components {
		av := lookup(cv, c.Name, "after")
		p := path(b.Key, "components", c.Name, "after")
		for i, dep := range c.After {
			pos := d.r.UserPos(av.LookupPath(cue.MakePath(cue.Index(i))))
			switch {
			case byName[dep] == nil:
				d.diags.Errorf(RuleComponent, pos, p, "%s: %q is no component of %s", p, dep, b.Key).Hint = didYouMean(dep, keys(byName))
			case inCycle[c.Name]:
			case rank[dep] > rank[c.Name]:
				d.diags.Errorf(RuleOrder, pos, p, "%s: %s is ordered before %s, which it must follow", p, c.Name, dep).Hint =
					fmt.Sprintf("move %s after %s in order", c.Name, dep)
				d.diags[len(d.diags)-1].Related = []diag.Related{{Pos: b.OrderPos, Message: "the order"}}
			}
		}
	}
}

// cycles reports each cycle of after once, as the chain from its first
// component (by name) back to it, and returns the components on one.
func (d *decoder) cycles(b *Baseline, byName map[string]*Component) map[string]bool {
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onPath
		stack = append(stack, name)
		c := byName[name]
		for _, dep := range c.After {
			if byName[dep] == nil {
				continue
			}
			switch state[dep] {
			case onPath:
				i := slices.Index(stack, dep)
				chain := append(slices.Clone(stack[i:]), dep)
				for _, n := range chain {
					on[n] = true
				}
				first := byName[chain[0]]
				p := path(b.Key, "components", first.Name, "after")
				d.diags.Errorf(RuleCycle, first.Pos, p, "%s: components of %s must each be updated after the other: %s", p, b.Key,
					strings.Join(chain, " after ")).Hint = "drop one of these after entries: no order can satisfy them all"
			case unseen:
				visit(dep)
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = done
	}
	for _, name := range keys(byName) {
		if state[name] == unseen {
			visit(name)
		}
	}
	return on
}
