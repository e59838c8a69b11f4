package contract

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
)

// Rules describes every rule id that vet can report: the contract's
// and the inventory's (inventory.Rules).
var Rules = rules()

func rules() map[string]string {
	out := map[string]string{}
	for k, v := range contractRules {
		out[k] = v
	}
	for k, v := range inventory.Rules {
		out[k] = v
	}
	for k, v := range operateRules {
		out[k] = v
	}
	for k, v := range alarmRules {
		out[k] = v
	}
	for k, v := range opsRules {
		out[k] = v
	}
	for k, v := range gridRules {
		out[k] = v
	}
	for k, v := range cxRules {
		out[k] = v
	}
	return out
}

var contractRules = map[string]string{
	cueload.RuleEmpty:      "the directory holds no .cue files",
	cueload.RuleSyntax:     "a file does not parse as CUE",
	cueload.RuleModule:     "cue.mod/module.cue is wrong, e.g. a language version newer than this tool",
	cueload.RulePackage:    "files declare different packages, or none",
	cueload.RuleSchema:     "a value conflicts with the contract schema",
	cueload.RuleRequired:   "a required field is missing",
	cueload.RuleNotAllowed: "a field the schema does not know",
	RuleNoUnit:             "a quantity without a unit",
	RuleBadUnit:            "a unit outside the closed unit table, or a malformed quantity",
	RuleDimension:          "a quantity of the wrong dimension",
	RuleRange:              "a quantity outside the range its field allows, such as a liquid fraction above 100 %",
	RuleUnknownModule:      "a reference to a module that does not exist",
	RuleUnknownChannel:     "a reference to a channel the boundary does not declare",
	RuleUnknownElement:     "a reference to an inventory element that does not exist",
	RuleChannelKind:        "a channel of the wrong quantity for its use",
	RuleUnknownClause:      "settle_into names a steady clause that does not exist",
	RuleUnknownShared:      "depends_on names a shared dependency that does not exist",
	RuleDuplicate:          "an id or channel declared twice",
	RuleKind:               "content or medium that does not fit the module kind",
	RuleBand:               "a band that cannot be read: tolerance without nominal, min above max",
	RuleOneSided:           "a clause stated by one side only: the joint cannot be checked",
	RuleIncomplete:         "a boundary without steady or failure clauses, or an electrical or liquid one without a transient clause",
	RuleExcitation:         "an excitation that cannot be run: low above high, a square wave without period",
	RuleSteadyGap:          "the supplier's guaranteed band is not inside the consumer's required band",
	RuleStepGap:            "the consumer's load step exceeds what the supplier withstands",
	RuleRateGap:            "the consumer's edge rate exceeds what the supplier withstands",
	RulePeriodGap:          "the consumer's square-wave period is shorter than the supplier allows",
	RuleDeviationGap:       "the supplier's transient deviation exceeds what the consumer tolerates",
	RuleRecoveryGap:        "the supplier recovers later than the consumer requires",
	RuleMaskGap:            "the supplier's guaranteed response leaves the consumer's mask (e.g. ITIC)",
	RuleInterruptionGap:    "the supplier may interrupt, or rides through for less than required",
	RuleDegradedGap:        "the degraded band or its duration exceeds what the consumer accepts",
	RuleAlarmGap:           "an alarm that is missing, different, late, or a recovery that is too slow",
	RuleSettleGap:          "a square wave that holds each level for less time than the supplier needs to recover",
	RuleMaskOrder:          "a custom mask whose points are not in increasing duration",
	RuleSettleKind:         "settle_into names a steady clause of another quantity",
	RuleParties:            "a boundary whose parties omit the supplier's or the consumer's vendor",
	RuleFeedOverload:       "feed load above breaker rating x its continuous derating (80 % unless the breaker states one)",
	RuleRedundancy:         "the load no longer fits with one unit lost (N+1, 2N)",
	RuleBlockRating:        "a block's load above its rating",
	RulePDU:                "a rack that does not fit on its PDUs with one lost",
	RuleCoolingCapacity:    "loop heat above CDU capacity with one CDU lost",
	RuleFlow:               "pump flow with one pump lost below the flow the heat load needs",
	RuleUPS:                "a UPS rated below the load it must carry",
	RuleRedundancyUnits:    "a declared redundancy the units cannot give (N+1 with one unit, 2N with an odd number)",
	RuleNoBoundary:         "a module powered, cooled or served by another with no boundary between them",
	RuleInventory:          "a contract value that contradicts the inventory (block voltage, frequency, loop supply temperature, UPS ride-through)",
	RuleShared:             "modules in separate failure domains that depend on one shared thing",
}

// Load reads and decodes a contract directory. The diagnostics cover
// loading, schema and units; a nil Contracts means nothing could be
// decoded.
//
// The evaluation runs under the CUE budget (cli.GuardEval): a runaway
// package stops the process with a message naming it and the variable
// that raises the budget.
func Load(dir string) (*Contracts, diag.List, error) {
	defer cli.GuardEval("the CUE in " + dir)()
	r, diags, err := cueload.Load(dir, cueload.Config{ImportPath: schema.ImportPath, Files: schema.Files(), Bind: schema.Bind})
	if err != nil || diags.Count(diag.Error) > 0 {
		return nil, diags, err
	}
	defer cli.GuardEval(r.What())()
	// One validation of the whole tree is enough when it passes; when it
	// fails, each unit is validated on its own so that one error never
	// hides another (a conflict can mask a missing required field).
	if err := r.Value.Validate(cue.Concrete(true)); err != nil {
		diags = append(diags, r.Validate(contractUnits(r)...)...)
	}
	c, ud := decode(r)
	return c, append(diags, ud...), nil
}

// contractUnits lists the contract units validated on their own: each module,
// each shared dependency and load bank, the site's own fields, and each
// boundary.
func contractUnits(r *cueload.Result) []cue.Path {
	var paths []cue.Path
	add := func(sel ...cue.Selector) { paths = append(paths, cue.MakePath(sel...)) }
	site := r.Value.LookupPath(cue.ParsePath("site"))
	for _, group := range []string{"modules", "shared", "loadbanks"} {
		for _, l := range cueload.Labels(site.LookupPath(cue.ParsePath(group))) {
			add(cue.Str("site"), cue.Str(group), cue.Str(l))
		}
	}
	add(cue.Str("site"))
	for _, l := range cueload.Labels(r.Value.LookupPath(cue.ParsePath("boundaries"))) {
		add(cue.Str("boundaries"), cue.Str(l))
	}
	add(cue.Str("boundaries"))
	return paths
}

// Vet loads dir and runs every check. Schema and unit errors do not stop
// the checks that can still run: one error never hides another.
func Vet(dir string) (*Contracts, diag.List, error) {
	return VetInventory(dir, nil)
}

// VetInventory is Vet with the handover inventories at paths (nil: the
// contract directory's inventory/*.json).
func VetInventory(dir string, paths []string) (*Contracts, diag.List, error) {
	c, diags, err := Load(dir)
	if err != nil || c == nil {
		return c, diags.Sorted(), err
	}
	hd, err := c.ReadInventory(paths)
	if err != nil {
		return c, diags.Sorted(), err
	}
	diags = append(diags, hd...)
	diags = append(diags, withoutCascades(Check(c), diags)...)
	return c, diags.Sorted().Fold(), nil
}

// InventoryDir is where a contract directory keeps its handover
// inventory: JSON files, read in name order.
const InventoryDir = "inventory"

// ReadInventory reads the handover inventories at paths (nil: the
// contract directory's inventory/*.json) into c.Handovers. Positions in
// the directory's own files are relative to it, as every position of a
// contract is; files given elsewhere are named by their absolute path.
func (c *Contracts) ReadInventory(paths []string) (diag.List, error) {
	type file struct{ path, name string }
	var files []file
	if paths == nil {
		found, err := filepath.Glob(filepath.Join(c.Dir, InventoryDir, "*.json"))
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, f := range found {
			files = append(files, file{f, filepath.Join(InventoryDir, filepath.Base(f))})
		}
	}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, err
		}
		name := abs
		if rel, err := filepath.Rel(c.Dir, abs); err == nil && !strings.HasPrefix(rel, "..") {
			name = rel
		}
		files = append(files, file{abs, name})
	}
	var diags diag.List
	c.Handovers = nil
	for _, f := range files {
		b, err := os.ReadFile(f.path)
		if err != nil {
			return diags, fmt.Errorf("handover inventory: %w", err)
		}
		h, hd, err := inventory.ParseHandover(f.name, b)
		if err != nil {
			return diags, fmt.Errorf("handover inventory %s: %w", f.path, err)
		}
		diags = append(diags, hd...)
		c.Handovers = append(c.Handovers, h)
	}
	return diags, nil
}

// Graph joins the site and its handover inventories into the inventory
// graph, with the problems joining them.
func (c *Contracts) Graph() (*inventory.Graph, diag.List) {
	return inventory.Build(c.Site, c.Handovers...)
}

// withoutCascades drops model findings inside a value that already has a
// schema or unit error: a misspelt field should be reported once, not
// again as the band it left incomplete.
func withoutCascades(found, first diag.List) diag.List {
	var broken []string
	for _, d := range first {
		if d.Path == "" {
			continue
		}
		parent := d.Path
		if i := strings.LastIndex(parent, "."); i > 0 {
			parent = parent[:i]
		}
		broken = append(broken, parent)
	}
	var out diag.List
	for _, d := range found {
		cascade := false
		for _, p := range broken {
			inside := d.Path == p || strings.HasPrefix(d.Path, p+".")
			// a finding about a whole clause whose part is broken
			clause := strings.HasPrefix(p, d.Path+".") && strings.Count(d.Path, ".") >= 3
			if inside || clause {
				cascade = true
				break
			}
		}
		if !cascade {
			out = append(out, d)
		}
	}
	return out
}

// Check runs the model checks: references, clauses, joints, budgets and
// shared dependencies.
func Check(c *Contracts) diag.List {
	var diags diag.List
	idx := newIndex(c)
	checkRefs(c, idx, &diags)
	for _, b := range c.Boundaries {
		checkClauses(c, b, &diags)
		checkJoint(c, b, &diags)
	}
	checkBudget(Budget(c), &diags)
	checkRedundancyUnits(c, &diags)
	checkCoverage(c, idx, &diags)
	checkAgreement(c, idx, &diags)
	checkShared(c, idx, &diags)
	g, gd := c.Graph()
	diags = append(diags, gd...)
	diags = append(diags, inventory.Check(g)...)
	diags = append(diags, checkOperate(c, idx, func(name string) bool { _, ok := g.Find(name); return ok })...)
	checkAlarms(c, &diags)
	checkOperating(c, g, &diags)
	checkGrid(c, &diags)
	checkCommissioning(c, &diags)
	return diags
}
