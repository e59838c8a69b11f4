package contractc

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/drain/facilityd"
	"github.com/seamdc/seam/internal/headroom"
)

func init() {
	register("alerts", "write the site's Prometheus alerting rules: headroom, N-1, supply temperature, silent devices, grid ramp, swing and oscillation, facilityd's", runAlerts).
		WithExample("contractc alerts contracts/examples/threemodule --out rules.yml")
}

func runAlerts(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR [--out FILE] [--job facilityd] [--headroom 0.1] [--for 30s] [--silent-for 1m] [--inventory FILE…]", flag.ContinueOnError)
	out := fs.String("out", "", "write the rule file here (default: stdout)")
	job := fs.String("job", "facilityd", "the Prometheus job that scrapes facilityd")
	share := fs.Float64("headroom", 0.1, "alert when less than this share of a limit is left (0-1)")
	forDur := fs.Duration("for", 30*time.Second, "how long a condition holds before it alerts")
	silentFor := fs.Duration("silent-for", time.Minute, "how long facilityd or a device may be silent before it alerts")
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	}
	if err == nil && (*share <= 0 || *share >= 1) {
		err = cli.Usagef("--headroom %g: want a share between 0 and 1, e.g. 0.1 for 10 %%", *share)
	}
	if err == nil && (*forDur <= 0 || *silentFor <= 0) {
		err = cli.Usagef("--for and --silent-for must be positive durations, e.g. 30s")
	}
	if err != nil {
		return fail(stderr, "alerts", fs, err)
	}
	c, diags, err := contract.Load(pos[0])
	if err != nil {
		return fail(stderr, "alerts", fs, err)
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(pos[0])))
		return cli.ExitFindings
	}
	hd, err := c.ReadInventory(inv.paths())
	if err != nil {
		return fail(stderr, "alerts", fs, err)
	}
	g, gd := c.Graph()
	if errs := append(hd, gd...); errs.Count(diag.Error) > 0 {
		diag.Text(stderr, errs.Sorted().Rebase(cli.RelDir(pos[0])))
		return cli.ExitFindings
	}
	ix := alarm.NewIndex(g)
	domain := func(id string) string {
		d, err := ix.Resolve(id)
		if err != nil {
			return ""
		}
		return d.String()
	}
	rules, err := facilityd.SiteRules(c, domain, *job, promDuration(*silentFor), headroom.RuleOptions{Headroom: *share, For: *forDur, SilentFor: *silentFor})
	if err != nil {
		return fail(stderr, "alerts", fs, err)
	}
	if *out == "" {
		_, err = io.WriteString(stdout, rules)
	} else {
		err = os.WriteFile(*out, []byte(rules), 0o644)
	}
	if err != nil {
		return fail(stderr, "alerts", fs, fmt.Errorf("writing the rules: %w", err))
	}
	if *out != "" {
		fmt.Fprintf(stdout, "wrote %s: %d Prometheus alerting rules in %d groups\n", *out, strings.Count(rules, "- alert: "), strings.Count(rules, "- name: "))
	}
	return cli.ExitOK
}

// promDuration writes d as Prometheus does: 90s, 2m.
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return fmt.Sprintf("%ds", d/time.Second)
}
