package satcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/discover"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/topology"
	"github.com/seamdc/seam/internal/version"
)

func init() {
	register("discover", "walk the site's BMCs over Redfish and report what differs from the inventory", runDiscover).
		WithExample("sat discover --site /tmp/site")
}

const discoverHelp = `Walks the site's BMCs over Redfish (gofish: a session per BMC, closed
after its walk; --parallel BMCs at once, --per-bmc requests in flight to
each; a busy BMC's Retry-After honoured) and compares what they report
with the declared inventory (the binding's contract directory and its
handover inventory, or --contracts and --inventory): a tray missing or
one too many, a changed serial (a swapped part), firmware drift, a tray
in the wrong slot or rack, a PSU absent. A BMC that fails (401, 404,
garbage, a redirect loop, no answer, a Contains loop) is reported with
its name and the URI, and the others are walked all the same.

The BMCs come from the binding's bmcs section (its endpoints, or every
BMC address of the inventory); for a simulated site without one, from
the simulator its binding names, with the credentials of
SEAM_BMC_USER and SEAM_BMC_PASSWORD or the simulator's defaults.

Exit codes: 0 the BMCs match the inventory, 2 differences or BMC
errors, 1 the tool failed.`

type discoverFlags struct {
	site, contracts, format, event string
	inventories                    []string
	racks                          string
	bmc                            bmcFlags
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runDiscover(args []string, stdout, stderr io.Writer) int {
	return runDiscoverEnv(args, stdout, stderr, os.LookupEnv)
}

func runDiscoverEnv(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("--site BINDING [--format text|json] [--event FILE]", flag.ContinueOnError)
	var f discoverFlags
	var inv multiFlag
	fs.StringVar(&f.site, "site", "", "the site binding directory (required)")
	fs.StringVar(&f.contracts, "contracts", "", "the contract directory of the declared inventory (default: the binding's)")
	fs.Var(&inv, "inventory", "a handover inventory file (repeatable; default: the contract directory's inventory/*.json)")
	fs.StringVar(&f.racks, "racks", "", "only these racks, comma-separated (ma/r01 or a-r01)")
	fs.StringVar(&f.format, "format", "text", "output format: text or json")
	fs.StringVar(&f.event, "event", "", "also write the lifecycle store's reconcile event to this file")
	f.bmc.add(fs, "BMCs walked at once", "log each BMC's walk to stderr")
	pos, err := cli.Parse(fs, args)
	f.inventories = inv
	switch {
	case err != nil:
	case len(pos) > 0:
		err = cli.Usagef("unexpected arguments %q", pos)
	case f.site == "":
		err = cli.Usagef("--site is required")
	case f.format != "text" && f.format != "json":
		err = cli.Usagef("unknown format %q (want text or json)", f.format)
	case f.bmc.check() != nil:
		err = f.bmc.check()
	case f.bmc.parallel < 0:
		err = cli.Usagef("--parallel must be positive")
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, discoverHelp)
		}
		return fail(stderr, "discover", fs, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	r, err := discoverSite(ctx, f, stderr, lookupEnv)
	if err != nil {
		fmt.Fprintf(stderr, "sat discover: %v\n", err)
		return cli.ExitTool
	}
	if f.format == "json" {
		err = r.WriteJSON(stdout)
	} else {
		r.WriteText(stdout)
	}
	if err == nil && f.event != "" {
		err = writeEvent(f.event, r.Event(time.Now(), "sat discover "+version.Version, splitList(f.racks)...))
	}
	if err != nil {
		fmt.Fprintf(stderr, "sat discover: %v\n", err)
		return cli.ExitTool
	}
	if !r.Clean() {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func writeEvent(path string, ev discover.ReconcileEvent) error {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// discoverSite loads the binding and the declared inventory, finds the
// BMCs and walks them.
func discoverSite(ctx context.Context, f discoverFlags, stderr io.Writer, lookupEnv func(string) (string, bool)) (*discover.Report, error) {
	sb, err := loadSiteBMCs(ctx, f.site, f.contracts, f.inventories, splitList(f.racks), stderr, lookupEnv)
	if err != nil {
		return nil, err
	}
	f.bmc.apply(&sb.access, stderr)
	return discover.Run(ctx, sb.site, sb.declared, sb.targets, sb.access), nil
}

// siteBMCs are a site's BMCs as its binding and its declared inventory
// give them (sat discover, sat bmc rotate).
type siteBMCs struct {
	site     string
	declared *discover.Declared // only the racks asked for
	targets  []discover.Target  // only the racks asked for
	access   bmchttp.Access
	bmcs     *binding.BMCs
}

// loadSiteBMCs loads the binding, its bmcs section and the declared
// inventory (of contracts, else the binding's contract directory), and
// finds the BMCs, only those of racks when some are given.
func loadSiteBMCs(ctx context.Context, site, contracts string, inventories, racks []string, stderr io.Writer, lookupEnv func(string) (string, bool)) (*siteBMCs, error) {
	b, diags, err := binding.Load(site)
	if err == nil && diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags)
		err = fmt.Errorf("the binding in %s has %d error(s)", site, diags.Count(diag.Error))
	}
	if err != nil {
		return nil, err
	}
	bm, bd, err := binding.LoadBMCs(site)
	if err == nil && bd.Count(diag.Error) > 0 {
		diag.Text(stderr, bd)
		err = fmt.Errorf("the bmcs section of %s has %d error(s)", site, bd.Count(diag.Error))
	}
	if err != nil {
		return nil, err
	}
	dir := contracts
	if dir == "" {
		dir = b.Contracts
	}
	if dir == "" {
		return nil, errors.New("no declared inventory: the binding names no contract directory; give --contracts DIR")
	}
	name, g, names, err := declared(dir, inventories, stderr)
	if err != nil {
		return nil, err
	}
	d := discover.Declare(g, names)
	for _, r := range racks {
		if !d.HasRack(r) {
			return nil, fmt.Errorf("--racks: no rack %q in the inventory", r)
		}
	}
	targets, opt, err := bmcTargets(ctx, b, bm, d, lookupEnv)
	if err != nil {
		return nil, err
	}
	if len(racks) > 0 {
		d = d.Only(racks...)
		targets = onlyRacks(targets, racks, names)
	}
	return &siteBMCs{site: name, declared: d, targets: targets, access: opt, bmcs: bm}, nil
}

// declared reads the contract directory and its handover inventory (or
// the files given) as the inventory graph, with the racks' handover
// names.
func declared(dir string, files []string, stderr io.Writer) (string, *inventory.Graph, map[string]string, error) {
	c, diags, err := contract.Load(dir)
	if err == nil && c == nil {
		err = fmt.Errorf("%s: no contracts", dir)
	}
	if err == nil && diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags)
		err = fmt.Errorf("the contracts in %s have %d error(s)", dir, diags.Count(diag.Error))
	}
	if err != nil {
		return "", nil, nil, err
	}
	var paths []string
	if len(files) > 0 {
		paths = files
	}
	hd, err := c.ReadInventory(paths)
	if err == nil && hd.Count(diag.Error) > 0 {
		diag.Text(stderr, hd)
		err = fmt.Errorf("the handover inventory has %d error(s)", hd.Count(diag.Error))
	}
	if err != nil {
		return "", nil, nil, err
	}
	g, gd := c.Graph()
	if gd.Count(diag.Error) > 0 {
		diag.Text(stderr, gd)
	}
	names := map[string]string{}
	for key, name := range topology.RackNames(g, c.Handovers) {
		names[name] = key
	}
	return c.Site.Name, g, names, nil
}

// bmcTargets are the BMCs to walk and how: the binding's bmcs section's
// access, and its endpoints (else the inventory's addresses); on a
// simulated site the BMCs its simulator runs now (a tray added since sat
// sim wrote bmcs.cue is walked too).
func bmcTargets(ctx context.Context, b *binding.Binding, bm *binding.BMCs, d *discover.Declared, lookupEnv func(string) (string, bool)) ([]discover.Target, discover.Options, error) {
	if bm == nil {
		return nil, discover.Options{}, errors.New("the binding names no BMCs: add a bmcs section (secrets or user and password, endpoints), or discover a simulated site (sat sim's binding has one)")
	}
	opt, err := bmchttp.FromBinding(bm, lookupEnv)
	if err != nil {
		return nil, opt, err
	}
	if b.Simulator != nil {
		eps, err := (&sim.Client{URL: b.Simulator.Control}).BMCs(ctx)
		var out []discover.Target
		for _, e := range eps {
			out = append(out, discover.Target{Name: e.Name, URL: bm.Scheme + "://" + e.Address, Expect: e.Key})
		}
		return out, opt, err
	}
	if len(bm.Endpoints) == 0 {
		t := d.Targets(bm.Scheme)
		if len(t) == 0 {
			return nil, opt, errors.New("the bmcs section lists no endpoints, and the inventory gives no BMC an address")
		}
		return t, opt, nil
	}
	byName := d.BMCNames()
	var out []discover.Target
	for _, e := range bm.Endpoints {
		out = append(out, discover.Target{Name: e.Name, URL: bm.Scheme + "://" + e.Address, Expect: byName[e.Name]})
	}
	return out, opt, nil
}

func splitList(s string) []string {
	var out []string
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r != "" {
			out = append(out, r)
		}
	}
	return out
}

// onlyRacks keeps the targets whose tray is in one of the racks.
func onlyRacks(ts []discover.Target, racks []string, names map[string]string) []discover.Target {
	keys := map[string]bool{}
	for _, r := range racks {
		if k, ok := names[r]; ok {
			r = k
		}
		keys[r] = true
	}
	var out []discover.Target
	for _, t := range ts {
		for k := range keys {
			if strings.HasPrefix(t.Expect, k+"/") {
				out = append(out, t)
				break
			}
		}
	}
	return out
}
