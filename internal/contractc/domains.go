package contractc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/domains"
	"github.com/seamdc/seam/internal/inventory"
)

func init() {
	register("domains", "lost minutes per placement, checkpoint intervals and placement advice (exit 2: a job refused)", runDomains).
		WithExample("contractc domains contracts/examples/threemodule --gpu-rate 0")
}

const domainsExits = `Exit codes: 0 every job placed; 1 the tool failed (bad arguments, a job
file or rate that cannot be read); 2 a job no placement runs, or a contract
with errors.`

// rateFlag is an interruption rate given on the command line, which
// overrides the site's.
type rateFlag struct {
	v   float64
	set bool
}

func (r *rateFlag) String() string {
	if !r.set {
		return ""
	}
	return strconv.FormatFloat(r.v, 'g', -1, 64)
}

func (r *rateFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return fmt.Errorf("want interruptions a month, a number of 0 or more, such as 1 or 0.0142")
	}
	r.v, r.set = v, true
	return nil
}

func runDomains(args []string, stdout, stderr io.Writer) int {
	const name = "domains"
	fs := flag.NewFlagSet("DIR [--jobs FILE] [--domain-rate N] [--gpu-rate N] [--node-rate N] [--site-rate N] [--rows N] [--format text|json] [--inventory FILE…]", flag.ContinueOnError)
	jobsFile := fs.String("jobs", "", "more job profiles, one JSON object a line (docs/domains.md); the site's site.jobs are always read")
	var domain, gpu, node, site rateFlag
	fs.Var(&domain, "domain-rate", "interruptions a month of each failure domain (overrides site.reliability.domain and its per-domain rates)")
	fs.Var(&gpu, "gpu-rate", "interruptions a month of each GPU of a job (overrides site.reliability.gpu; 0 for the design brief's model)")
	fs.Var(&node, "node-rate", "interruptions a month of each node of a job (overrides site.reliability.node)")
	fs.Var(&site, "site-rate", "interruptions a month of the whole site (overrides site.reliability.site)")
	rows := fs.Int("rows", domains.DefaultRows, "placements shown a job, from the fewest failure domains that hold it up (0: every k)")
	format := formatFlag(fs)
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case *rows < 0:
		err = cli.Usagef("--rows %d: want 0 (every k) or more", *rows)
	default:
		err = checkFormat(*format)
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printFlags(stderr, name, fs)
			fmt.Fprintln(stderr, domainsExits)
			return cli.ExitOK
		}
		return fail(stderr, name, fs, err)
	}
	c, g, op, err := loadOperate(pos[0], inv.paths(), stderr)
	if err != nil {
		return failLoad(stderr, name, fs, err)
	}
	rates, sources, err := siteRates(op.Reliability, map[string]*rateFlag{"domain": &domain, "gpu": &gpu, "node": &node, "site": &site})
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	jobs := siteJobs(op.Jobs)
	if *jobsFile != "" {
		more, err := readJobs(*jobsFile)
		if err != nil {
			return fail(stderr, name, fs, err)
		}
		jobs = append(jobs, more...)
	}
	if len(jobs) == 0 {
		return fail(stderr, name, fs, errors.New("no job profiles: declare site.jobs in the contract or give --jobs FILE (docs/domains.md)"))
	}
	rep, err := domains.Evaluate(c.Site.Name, domains.FromGraph(g), rates, sources, jobs, domains.Options{Rows: *rows})
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	if *format == "json" {
		err = writeJSON(stdout, rep)
	} else {
		err = domains.Text(stdout, rep)
	}
	if err != nil {
		return fail(stderr, name, fs, err)
	}
	if rep.Refused > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

// loadOperate loads a contract directory, its inventory graph and its
// operate side. Errors anywhere are printed and come back as
// errInvalid; warnings are printed and pass.
func loadOperate(dir string, inventories []string, stderr io.Writer) (*contract.Contracts, *inventory.Graph, *contract.Operate, error) {
	c, diags, err := contract.Load(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	var g *inventory.Graph
	var op *contract.Operate
	if c != nil && diags.Count(diag.Error) == 0 {
		hd, err := c.ReadInventory(inventories)
		if err != nil {
			return nil, nil, nil, err
		}
		diags = append(diags, hd...)
		if diags.Count(diag.Error) == 0 {
			var gd, od diag.List
			g, gd = c.Graph()
			op, od = c.CheckedOperate(g)
			diags = append(append(diags, gd...), od...)
		}
	}
	if len(diags) > 0 {
		diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(dir)))
	}
	if g == nil || diags.Count(diag.Error) > 0 {
		return nil, nil, nil, fmt.Errorf("%w: fix them first (contractc vet %s)", errInvalid, dir)
	}
	return c, g, op, nil
}

// siteRates are the site's rates with the command line's over them,
// and where each comes from.
func siteRates(rel *contract.Reliability, flags map[string]*rateFlag) (domains.Rates, map[string]string, error) {
	var r domains.Rates
	sources := map[string]string{}
	from := func(name string, rt *contract.Rate, to *float64) {
		if f := flags[name]; f.set {
			*to, sources[name] = f.v, "--"+name+"-rate"
			return
		}
		if rt != nil {
			*to, sources[name] = rt.PerMonth(), rateSource(rt)
		}
	}
	if rel == nil {
		rel = &contract.Reliability{}
	}
	if rel.Domain == nil && !flags["domain"].set {
		return r, nil, errors.New("the site declares no site.reliability.domain rate: declare how often a failure domain is interrupted (docs/domains.md) or give --domain-rate N")
	}
	from("domain", rel.Domain, &r.Domain)
	from("gpu", rel.GPU, &r.GPU)
	from("node", rel.Node, &r.Node)
	from("site", rel.Site, &r.Site)
	if !flags["domain"].set && len(rel.Domains) > 0 {
		r.Domains = map[string]float64{}
		for _, rt := range rel.Domains {
			r.Domains[rt.Name], sources["domain "+rt.Name] = rt.PerMonth(), rateSource(rt)
		}
	}
	return r, sources, nil
}

// rateSource says where a declared rate is and what it was counted
// from: "site.cue:31:8: 419 per 1296 h among 16384: Llama 3 405B".
func rateSource(rt *contract.Rate) string {
	s := fmt.Sprintf("%s: %s per %s", rt.Pos, strconv.FormatFloat(rt.Interruptions, 'g', -1, 64), rt.Per.Raw)
	if rt.Among > 0 {
		among := map[string]string{"gpu": " GPUs", "node": " nodes"}[rt.Name]
		s += fmt.Sprintf(" among %d%s", rt.Among, among)
	}
	if rt.Source != "" {
		s += ": " + rt.Source
	}
	return s
}

func siteJobs(profiles []*contract.JobProfile) []domains.Job {
	var out []domains.Job
	for _, p := range profiles {
		out = append(out, domains.Job{Name: p.ID, GPUs: p.GPUs, Interval: dur(p.Interval), Write: dur(p.Write), Restart: dur(p.Restart),
			Generation: p.Generation, Where: p.Pos.String()})
	}
	return out
}

func dur(q contract.Q) time.Duration { return time.Duration(q.Canon * float64(time.Second)) }

func readJobs(path string) ([]domains.Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("job profiles: %w", err)
	}
	defer f.Close()
	jobs, err := domains.ReadJobs(cli.RelDir(path), f)
	if err != nil {
		return nil, fmt.Errorf("job profiles:\n%w", indent(err))
	}
	return jobs, nil
}

// indent puts each line of a joined error under the one that names it.
func indent(err error) error {
	return errors.New("  " + strings.ReplaceAll(err.Error(), "\n", "\n  "))
}
