package lifecyclecmd

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/lifecycle"
)

func init() {
	register("chem", "record and list each cooling loop's water-chemistry samples; check them against their limits", runChem).
		WithExample("sat lifecycle chem record l2/loop --sample LAB-0412 --taken 2026-11-01T09:30Z --lab aqualab --conductivity 2.1 --ph 8.4 --key operator")
}

// measure is an optional number flag: nil until given.
type measure struct{ v *float64 }

func (m *measure) String() string {
	if m == nil || m.v == nil {
		return ""
	}
	return strconv.FormatFloat(*m.v, 'g', -1, 64)
}

func (m *measure) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	m.v = &v
	return nil
}

func runChem(args []string, stdout, stderr io.Writer) int {
	c := newCommon("record LOOP --sample ID --taken TIME --lab LAB [--conductivity µS/cm] [--ph PH] [--glycol %] [--particulates mg/L] | list [LOOP] | check [--limits FILE] [--at TIME]").withAuth().withFormat()
	var smp lifecycle.Sample
	var taken, limits, at string
	var cond, ph, glycol, part measure
	c.fs.StringVar(&smp.SampleID, "sample", "", "record: the lab's sample id")
	c.fs.StringVar(&taken, "taken", "", "record: when the sample was drawn (2026-11-01T09:30Z, or 2026-11-01)")
	c.fs.StringVar(&smp.Lab, "lab", "", "record: the lab that measured it")
	c.fs.Var(&cond, "conductivity", "record: conductivity, µS/cm")
	c.fs.Var(&ph, "ph", "record: pH")
	c.fs.Var(&glycol, "glycol", "record: glycol concentration, % by volume")
	c.fs.Var(&part, "particulates", "record: particulates (total suspended solids), mg/L")
	c.fs.StringVar(&limits, "limits", "", "check: a limits file ("+lifecycle.LimitsFormat+"; default: the built-in table, PG25, every 30 days)")
	c.fs.StringVar(&at, "at", "", "check: as of this time (default now)")
	pos, err := c.parse(args, -1, "")
	if err == nil {
		switch {
		case len(pos) == 0:
			err = cli.Usagef("want record, list or check")
		case pos[0] == "record" && len(pos) == 2, pos[0] == "list" && len(pos) <= 2, pos[0] == "check" && len(pos) == 1:
		default:
			err = cli.Usagef("want record LOOP, list [LOOP] or check")
		}
	}
	if err != nil {
		return fail(stderr, "chem", c, err)
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "chem", c, err)
	}
	defer s.Close()
	switch pos[0] {
	case "list":
		loop := ""
		if len(pos) == 2 {
			loop = pos[1]
		}
		return chemList(ctx, s, c, loop, stdout, stderr)
	case "check":
		return chemCheck(ctx, s, c, limits, at, stdout, stderr)
	}
	if taken == "" {
		return fail(stderr, "chem", c, cli.Usagef("--taken: when the sample was drawn"))
	}
	if smp.Taken, err = parseTime(taken); err != nil {
		return fail(stderr, "chem", c, cli.Usagef("--taken %q: write a time such as 2026-11-01T09:30Z or 2026-11-01", taken))
	}
	smp.Loop, smp.Conductivity, smp.PH, smp.Glycol, smp.Particulates = pos[1], cond.v, ph.v, glycol.v, part.v
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "chem", c, err)
	}
	got, err := s.RecordSample(ctx, a, smp)
	if err != nil {
		return fail(stderr, "chem", c, err)
	}
	emit(stdout, c.format, got, func(w io.Writer) {
		fmt.Fprintf(w, "sample %s of %s drawn %s (%s): %s; recorded by %s, event %d\n", got.SampleID, got.Loop, stamp(got.Taken), got.Lab, measures(got), got.RecordedBy, got.Event)
	})
	return cli.ExitOK
}

func chemList(ctx context.Context, s *lifecycle.Store, c *common, loop string, stdout, stderr io.Writer) int {
	list, err := s.Samples(ctx, loop)
	if err != nil {
		return fail(stderr, "chem", c, err)
	}
	emit(stdout, c.format, list, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "LOOP\tSAMPLE\tTAKEN\tLAB\tCOND µS/cm\tPH\tGLYCOL %\tPARTICULATES mg/L\tBY")
		for _, smp := range list {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", smp.Loop, smp.SampleID, stamp(smp.Taken), smp.Lab,
				show(smp.Conductivity), show(smp.PH), show(smp.Glycol), show(smp.Particulates), smp.RecordedBy)
		}
		tw.Flush()
		fmt.Fprintf(w, "%d sample(s)\n", len(list))
	})
	return cli.ExitOK
}

// chemCheck evaluates the sampled loops (installed and after) and exits
// 2 when one is overdue or out of its limits.
func chemCheck(ctx context.Context, s *lifecycle.Store, c *common, limits, at string, stdout, stderr io.Writer) int {
	var lf *lifecycle.LimitsFile
	if limits != "" {
		var err error
		if lf, err = lifecycle.LoadLimits(limits); err != nil {
			return fail(stderr, "chem", c, err)
		}
	}
	now := time.Now()
	if c.now != nil {
		now = c.now()
	}
	if at != "" {
		t, err := parseTime(at)
		if err != nil {
			return fail(stderr, "chem", c, cli.Usagef("--at %q: write a time such as 2026-11-01T00:00Z", at))
		}
		now = t
	}
	findings, loops, err := s.CheckChemistry(ctx, lf, now)
	if err != nil {
		return fail(stderr, "chem", c, err)
	}
	emit(stdout, c.format, findings, func(w io.Writer) {
		for _, f := range findings {
			fmt.Fprintf(w, "%s\t%s\t%s\n", f.Loop, f.Kind, f.Detail)
		}
		fmt.Fprintf(w, "%d loop(s) sampled, %d finding(s)\n", loops, len(findings))
	})
	if len(findings) > 0 {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func show(v *float64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

func measures(smp lifecycle.Sample) string {
	return fmt.Sprintf("conductivity %s µS/cm, pH %s, glycol %s %%, particulates %s mg/L", show(smp.Conductivity), show(smp.PH), show(smp.Glycol), show(smp.Particulates))
}
