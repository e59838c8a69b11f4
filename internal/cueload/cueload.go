// Package cueload loads a directory of CUE files with seam's schema bound
// into it, and turns CUE's errors into positioned diagnostics that point
// at the user's files, never at the embedded schema.
package cueload

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/diag"
)

// Rule ids for problems found while loading.
const (
	RuleEmpty      = "LOAD001" // no CUE files
	RuleSyntax     = "LOAD002" // a file does not parse
	RuleModule     = "LOAD003" // cue.mod is wrong: language version, module path
	RulePackage    = "LOAD004" // files of different packages, or none
	RuleSchema     = "SCHEMA001"
	RuleRequired   = "SCHEMA002"
	RuleNotAllowed = "SCHEMA003"
)

// Config says what to bind: Files are embedded CUE files overlaid at
// ImportPath inside cue.mod/gen, and Bind is CUE source (without a
// package clause) added to the user's package, such as
// `site: schema.#Site`.
type Config struct {
	ImportPath string            // e.g. "seam.dev/schema"
	Files      map[string][]byte // file name → content of the embedded package
	Bind       string
	// SchemaDoc is where a person reads the fields of each part, for
	// hints (default contracts/schema/schema.cue).
	SchemaDoc string
}

// bindFile is the name of the overlaid binding file; it never appears in
// a diagnostic.
const bindFile = "zz_seam_bind.cue"

// Result is a loaded directory.
type Result struct {
	Dir   string    // absolute
	Root  string    // module root, absolute
	Value cue.Value // the built package; valid only when Diags has no LOAD error
	Files []string  // the user's .cue files, relative to Dir
	Ctx   *cue.Context
	// SchemaDoc is Config.SchemaDoc, for hints.
	SchemaDoc string
	// Package is the package name of the user's files.
	Package string
	arg     string // dir as the caller gave it, for messages
}

// What names the loaded package for a message such as the CUE budget's:
// "package site in contracts/examples/threemodule (controls.cue,
// cooling.cue, it.cue and 8 more)".
func (r *Result) What() string {
	files := r.Files
	more := ""
	if len(files) > 3 {
		files, more = files[:3], fmt.Sprintf(" and %d more", len(r.Files)-3)
	}
	if len(files) == 0 {
		return "the CUE in " + r.arg
	}
	return fmt.Sprintf("package %s in %s (%s%s)", r.Package, r.arg, strings.Join(files, ", "), more)
}

// Load reads dir. It returns a load result and the diagnostics found
// while parsing and building; a non-nil error is a tool failure (an
// unreadable directory), not a problem with the contracts.
func Load(dir string, cfg Config) (*Result, diag.List, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("contract directory: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("contract directory: %w", err)
	}
	if !st.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory", dir)
	}
	r := &Result{Dir: abs, Ctx: cuecontext.New(), SchemaDoc: cfg.SchemaDoc, arg: dir}
	var diags diag.List
	r.Files, err = cueFiles(abs)
	if err != nil {
		return nil, nil, err
	}
	if len(r.Files) == 0 {
		diags.Errorf(RuleEmpty, diag.Pos{File: "."}, "", "no .cue files in %s", dir).Hint =
			"point contractc at a directory of contracts, such as contracts/examples/threemodule"
		return r, diags, nil
	}
	pkg, pd := packageName(abs, r.Files)
	if len(pd) > 0 {
		return r, pd, nil
	}
	r.Package = pkg
	// Building evaluates: a runaway package stops here, under the budget
	// (the caller's Guard or the armed one), named by its files.
	defer cli.GuardEval(r.What())()
	r.Root = moduleRoot(abs)
	overlay := map[string]load.Source{}
	if r.Root == "" {
		r.Root = abs
		overlay[filepath.Join(abs, "cue.mod", "module.cue")] = load.FromString("module: \"seam.local/contracts@v0\"\nlanguage: version: \"v0.17.1\"\n")
	}
	for name, b := range cfg.Files {
		overlay[filepath.Join(r.Root, "cue.mod", "gen", cfg.ImportPath, name)] = load.FromBytes(b)
	}
	if cfg.Bind != "" {
		overlay[filepath.Join(abs, bindFile)] = load.FromString("package " + pkg + "\n\n" + cfg.Bind)
	}
	lc := &load.Config{Dir: abs, ModuleRoot: r.Root, Package: pkg, Overlay: overlay, Env: []string{"CUE_REGISTRY=none"}}
	insts := load.Instances([]string{"."}, lc)
	if len(insts) != 1 {
		return nil, nil, fmt.Errorf("loading %s: %d instances", dir, len(insts))
	}
	if err := insts[0].Err; err != nil {
		diags := r.Diagnostics(err, loadRule(err))
		for i := range diags {
			if !diags[i].Pos.IsValid() && diags[i].Rule == RuleModule {
				diags[i].Pos = r.moduleFilePos()
				diags[i].Hint = "contractc understands CUE language versions up to v0.17.1: lower `language: version` in cue.mod/module.cue"
			}
		}
		return r, diags, nil
	}
	r.Value = r.Ctx.BuildInstance(insts[0])
	return r, nil, nil
}

// moduleFilePos points at the language version in cue.mod/module.cue.
func (r *Result) moduleFilePos() diag.Pos {
	name := filepath.Join(r.Root, "cue.mod", "module.cue")
	rel := RelFile(r.Dir, name)
	b, err := os.ReadFile(name)
	if err != nil {
		return diag.Pos{File: rel}
	}
	for i, line := range strings.Split(string(b), "\n") {
		if c := strings.Index(line, "version"); c >= 0 {
			return diag.Pos{File: rel, Line: i + 1, Col: c + 1}
		}
	}
	return diag.Pos{File: rel, Line: 1, Col: 1}
}

func loadRule(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "language version") || strings.Contains(msg, "module.cue") || strings.Contains(msg, "cue.mod"):
		return RuleModule
	case strings.Contains(msg, "package"):
		return RulePackage
	}
	return RuleSyntax
}

// cueFiles lists the .cue files directly in dir (not in cue.mod).
func cueFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".cue") {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// moduleRoot walks up from dir to the directory holding cue.mod.
func moduleRoot(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cue.mod", "module.cue")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// packageName reads the package clauses; all files must agree.
func packageName(dir string, files []string) (string, diag.List) {
	var diags diag.List
	names := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			diags.Errorf(RuleSyntax, diag.Pos{File: f}, "", "cannot read: %v", err)
			continue
		}
		file, err := parser.ParseFile(f, b, parser.PackageClauseOnly)
		if err != nil {
			for _, e := range cueerrors.Errors(err) {
				diags.Add(diag.Diagnostic{Rule: RuleSyntax, Severity: diag.Error, Pos: relPos(dir, firstPos(e, dir)), Message: e.Error()})
			}
			continue
		}
		name := file.PackageName()
		if name == "" {
			diags.Errorf(RulePackage, diag.Pos{File: f, Line: 1, Col: 1}, "", "%s has no package clause", f).Hint = "start every .cue file of the directory with the same `package` line, such as `package site`"
			continue
		}
		names[name] = f
	}
	if len(diags) > 0 {
		return "", diags
	}
	if len(names) > 1 {
		var list []string
		for n, f := range names {
			list = append(list, fmt.Sprintf("%s (%s)", n, f))
		}
		sort.Strings(list)
		diags.Errorf(RulePackage, diag.Pos{File: names[firstKey(names)], Line: 1, Col: 1}, "", "files declare different packages: %s", strings.Join(list, ", ")).Hint = "use one package name in every file of the directory"
		return "", diags
	}
	return firstKey(names), nil
}

func firstKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys[0]
}

// Diagnostics converts a CUE error into diagnostics, one per error, each at
// the user's position of the value it concerns. rule "" picks one from the
// message. The alternatives of an empty disjunction become one message.
func (r *Result) Diagnostics(err error, rule string) diag.List {
	var out diag.List
	alternatives := map[string][]string{} // path → allowed values
	got := map[string]string{}            // path → the user's value
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		msg := fmt.Sprintf(format, args...)
		if strings.Contains(msg, "%!") || msg == "" {
			msg = e.Error()
		}
		path := strings.Join(e.Path(), ".")
		if strings.HasSuffix(msg, "errors in empty disjunction:") {
			alternatives[path] = []string{}
			continue
		}
		if _, ok := alternatives[path]; ok && format == "conflicting values %s and %s" && len(args) == 2 {
			alternatives[path] = append(alternatives[path], fmt.Sprint(args[0]))
			got[path] = fmt.Sprint(args[1])
			if len(alternatives[path]) > 1 {
				continue
			}
		}
		d := diag.Diagnostic{Rule: rule, Severity: diag.Error, Message: msg, Path: path}
		if d.Rule == "" {
			d.Rule, d.Hint = classify(msg, r.schemaDoc())
		}
		d.Pos = r.errPos(e)
		switch {
		case d.Rule == RuleSyntax && strings.Contains(msg, "found 'EOF'"):
			r.unclosed(&d)
		case d.Rule == RuleSyntax && strings.Contains(msg, "expected 'EOF', found"):
			r.strayCloser(&d)
		}
		if strings.HasPrefix(format, "conflicting values") {
			d.Related = r.otherValues(e, d.Pos, e.Path())
			d.Hint = conflictHint(msg, r.schemaDoc())
		}
		if d.Rule == RuleNotAllowed {
			if guess := r.closestField(e.Path()); guess != "" {
				d.Hint = fmt.Sprintf("did you mean %q? Otherwise remove the field; %s lists the fields of each part", guess, r.schemaDoc())
			}
		}
		out = append(out, d)
	}
	out = dropTypeNoise(out)
	for i, d := range out {
		if alts, ok := alternatives[d.Path]; ok && len(alts) > 1 {
			sort.Strings(alts)
			out[i].Message = fmt.Sprintf("%s is not allowed here: want one of %s", got[d.Path], strings.Join(alts, ", "))
			out[i].Related = nil
			out[i].Hint = closestAlternative(got[d.Path], alts)
		}
		if out[i].Path != "" {
			out[i].Message = out[i].Path + ": " + out[i].Message
		}
	}
	return out
}

// errPos finds where the user wrote the value an error concerns: the
// value at the error's path, or the nearest enclosing one that the user
// wrote, or else the error's first position in a user file.
func (r *Result) errPos(e cueerrors.Error) diag.Pos {
	if r.Value.Exists() {
		sels := e.Path()
		for n := len(sels); n > 0; n-- {
			v := r.Value.LookupPath(cue.MakePath(selectors(sels[:n])...))
			if p := r.UserPos(v); p.IsValid() {
				return p
			}
		}
	}
	return r.userPos(e)
}

func selectors(labels []string) []cue.Selector {
	out := make([]cue.Selector, len(labels))
	for i, l := range labels {
		out[i] = cue.Str(strings.Trim(l, `"`))
		if strings.HasPrefix(l, "#") {
			out[i] = cue.Def(l)
		}
	}
	return out
}

// UserPos returns where the user wrote v: v's own position if it is in a
// user file, else the first user-written conjunct's.
func (r *Result) UserPos(v cue.Value) diag.Pos {
	return r.userPosDepth(v, 0)
}

func (r *Result) userPosDepth(v cue.Value, depth int) diag.Pos {
	if p := r.Pos(v.Pos()); p.IsValid() {
		return p
	}
	if depth > 4 {
		return diag.Pos{}
	}
	op, args := v.Expr()
	if op == cue.NoOp {
		return diag.Pos{}
	}
	for _, a := range args {
		if p := r.userPosDepth(a, depth+1); p.IsValid() {
			return p
		}
	}
	return diag.Pos{}
}

// schemaDoc is where the fields of each part are listed.
func (r *Result) schemaDoc() string {
	if r == nil || r.SchemaDoc == "" {
		return "contracts/schema/schema.cue"
	}
	return r.SchemaDoc
}

func classify(msg, schema string) (rule, hint string) {
	switch {
	case strings.Contains(msg, "literal not terminated"), strings.Contains(msg, "expected"), strings.Contains(msg, "missing ','"):
		return RuleSyntax, "the mistake is at or just before this position: look for an unclosed quote, brace or bracket"
	case strings.Contains(msg, "field is required but not present"):
		return RuleRequired, "add the field; " + schema + " lists the fields of each part (required ones end in !)"
	case strings.Contains(msg, "not allowed"):
		return RuleNotAllowed, "remove the field or fix its spelling; " + schema + " lists the fields of each part"
	}
	return RuleSchema, ""
}

// userPos picks the first position of e that lies in a user file.
func (r *Result) userPos(e cueerrors.Error) diag.Pos {
	return relPos(r.Dir, firstPos(e, r.Dir))
}

func firstPos(e cueerrors.Error, dir string) token.Pos {
	positions := cueerrors.Positions(e)
	if p := e.Position(); p.IsValid() {
		positions = append([]token.Pos{p}, positions...)
	}
	for _, p := range positions {
		if IsUserFile(dir, p.Filename()) {
			return p
		}
	}
	return token.NoPos
}

// IsUserFile reports whether filename is one of the user's files in dir
// rather than the embedded schema or the binding file.
func IsUserFile(dir, filename string) bool {
	if filename == "" || filepath.Base(filename) == bindFile {
		return false
	}
	if strings.Contains(filepath.ToSlash(filename), "/cue.mod/gen/") {
		return false
	}
	return true
}

func relPos(dir string, p token.Pos) diag.Pos {
	if !p.IsValid() {
		return diag.Pos{}
	}
	return diag.Pos{File: RelFile(dir, p.Filename()), Line: p.Line(), Col: p.Column()}
}

// RelFile makes filename relative to dir, with forward slashes.
func RelFile(dir, filename string) string {
	if rel, err := filepath.Rel(dir, filename); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(filename)
}

// Pos converts a CUE position into a diagnostic position relative to the
// loaded directory; positions in the schema or binding are invalid.
func (r *Result) Pos(p token.Pos) diag.Pos {
	if !p.IsValid() || !IsUserFile(r.Dir, p.Filename()) {
		return diag.Pos{}
	}
	return relPos(r.Dir, p)
}

// Validate checks each value at paths on its own for concreteness and
// required fields, so that one error never hides another, and returns
// the diagnostics without duplicates.
func (r *Result) Validate(paths ...cue.Path) diag.List {
	var out diag.List
	for _, p := range paths {
		v := r.Value.LookupPath(p)
		if !v.Exists() {
			continue
		}
		if err := v.Validate(cue.Concrete(true)); err != nil {
			out = append(out, r.Diagnostics(err, "")...)
		}
	}
	return out.Sorted()
}

// otherValues lists the other user positions of a conflict: where the
// other side set the field.
// Only positions on a line that names the field count: the others are the
// structs around it.
func (r *Result) otherValues(e cueerrors.Error, at diag.Pos, path []string) []diag.Related {
	if len(path) == 0 {
		return nil
	}
	label := strings.Trim(path[len(path)-1], `"`)
	at = at.Resolved()
	seen := map[string]bool{at.File + ":" + fmt.Sprint(at.Line): true}
	var out []diag.Related
	for _, p := range cueerrors.Positions(e) {
		if !IsUserFile(r.Dir, p.Filename()) {
			continue
		}
		rp := relPos(r.Dir, p)
		key := rp.File + ":" + fmt.Sprint(rp.Line)
		if seen[key] || !lineHas(p.Filename(), p.Line(), label) {
			continue
		}
		seen[key] = true
		out = append(out, diag.Related{Pos: rp, Message: "also set here"})
	}
	return out
}

func lineHas(file string, line int, label string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	lines := strings.Split(string(b), "\n")
	return line >= 1 && line <= len(lines) && strings.Contains(lines[line-1], label)
}

// conflictHint explains the common conflicts in a contract's terms.
func conflictHint(msg, schema string) string {
	switch {
	case strings.Contains(msg, "mismatched types string and number"), strings.Contains(msg, "mismatched types string and int"), strings.Contains(msg, "mismatched types string and float"):
		return "this field takes a plain number without a unit or quotes (see the schema)"
	case strings.Contains(msg, "mismatched types"):
		return "the value has the wrong type for this field (see " + schema + ")"
	}
	return "two files (or two places) set this field to different values: agree on one, or move it to one side"
}

// dropTypeNoise removes "conflicting values X and number (mismatched
// types …)" when the same path also has a conflict between two values:
// the first is the schema's other disjunct, not the user's mistake.
func dropTypeNoise(l diag.List) diag.List {
	real := map[string]bool{}
	for _, d := range l {
		if strings.HasPrefix(d.Message, "conflicting values") && !strings.Contains(d.Message, "mismatched types") {
			real[d.Path] = true
		}
	}
	var out diag.List
	for _, d := range l {
		if real[d.Path] && strings.Contains(d.Message, "mismatched types") {
			continue
		}
		out = append(out, d)
	}
	return out
}
