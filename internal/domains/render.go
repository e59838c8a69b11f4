package domains

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// advice is the report's advice, in words: the largest job one domain
// holds, the jobs that must span and what it costs, the refused, what
// placement changes and what the interval costs.
func advice(r Report) []string {
	out := []string{}
	for _, l := range r.Largest {
		out = append(out, fmt.Sprintf("largest job in one failure domain: %d GPUs of %s (%s)", l.GPUs, l.Generation, strings.Join(l.Domains, ", ")))
	}
	for _, j := range r.Jobs {
		switch {
		case j.Refused != "":
			out = append(out, fmt.Sprintf("job %s refused: %s", j.Name, j.Refused))
			continue
		case j.Fewest > 1:
			out = append(out, fmt.Sprintf("job %s (%d GPUs) must span %d failure domains: +%s min a month (+%s GPU-h) over one domain's interruptions",
				j.Name, j.GPUs, j.Fewest, minutes(j.SpanMin), gpuHours(j.SpanMin/60*float64(j.GPUs))))
		}
		packed := j.Placements[0]
		if j.Placeable[1] > j.Placeable[0] {
			out = append(out, fmt.Sprintf("job %s: placement changes %s–%s of its lost minutes a month (packed: %s); %s are fixed by its size",
				j.Name, minutes(j.Placeable[0]), minutes(j.Placeable[1]), strings.Join(packed.Domains, ", "), minutes(j.FixedMin)))
		} else {
			out = append(out, fmt.Sprintf("job %s: placement changes nothing of its %s lost minutes a month (%s fixed by its size)",
				j.Name, minutes(packed.LostMin.Total), minutes(j.FixedMin)))
		}
		if c := j.Checkpoint; c != nil {
			if c.WriteBound {
				out = append(out, fmt.Sprintf("job %s writes a checkpoint in %s, %s of its %s MTBF (write-bound from %s): even at the best interval it would write as long as it computes, so no interval helps; write faster or run smaller",
					j.Name, duration(j.WriteMin), percent(j.WriteMin/(c.MTBFh*60)), duration(c.MTBFh*60), percent(WriteBoundShare)))
				continue
			}
			out = append(out, fmt.Sprintf("job %s checkpoints every %s; at a %s MTBF the optimum is every %s (Daly %s, Young %s): its interval costs %s GPU-h a month (ETTR %s against %s)",
				j.Name, duration(j.IntervalMin), duration(c.MTBFh*60), duration(c.OptimumMin), duration(c.DalyMin), duration(c.YoungMin),
				gpuHours(c.CostGPUHours), percent(c.ETTRFixed), percent(c.ETTROptimum)))
		}
	}
	return out
}

// Text writes the report for people: the assumptions it used, the
// domains, each job placement by placement, the advice.
func Text(w io.Writer, r Report) error {
	nodes, gpus := 0, 0
	for _, d := range r.Domains {
		for _, p := range d.Pools {
			nodes, gpus = nodes+p.Nodes, gpus+p.GPUs
		}
	}
	fmt.Fprintf(w, "DOMAINS %s: %s, %s, %s\n", r.Site, count(len(r.Domains), "failure domain"), count(nodes, "node"), count(gpus, "GPU"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "assumptions: interruptions, a month being %s h\n", strconv.FormatFloat(r.Rates.MonthHours, 'f', -1, 64))
	for _, a := range []struct {
		name, per string
		r         Rate
	}{{"domain", "per failure domain", r.Rates.Domain}, {"gpu", "per GPU of a job", r.Rates.GPU}, {"node", "per node of a job", r.Rates.Node}, {"site", "for every job at once", r.Rates.Site}} {
		fmt.Fprintf(tw, "  %s\t%s a month %s\t%s\n", a.name, rate(a.r.PerMonth), a.per, cmp.Or(a.r.Source, "not declared"))
	}
	for _, d := range r.Domains {
		if _, ok := r.Rates.Domains[d.Name]; ok {
			fmt.Fprintf(tw, "  %s\t%s a month\t%s\n", d.Name, rate(d.Rate), cmp.Or(r.Rates.DomainSources[d.Name], "its own rate"))
		}
	}
	fmt.Fprintln(tw, "  lost per interruption\tinterval/2 + restart\tfirst order: the work since the last checkpoint (half an interval on average), then the restart")
	fmt.Fprintln(tw, "  ETTR\tτ / (M·e^(R/M)·(e^((τ+δ)/M) − 1))\tDaly's complete model: τ = interval − write, δ = write, R = restart, M = MTBF")
	fmt.Fprintln(tw, "failure domains:")
	for _, d := range r.Domains {
		for _, p := range d.Pools {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s a month\n", d.Name, strings.Join(d.Modules, ","), cmp.Or(p.Generation, "-"), count(p.Nodes, "node"), count(p.GPUs, "GPU"), rate(d.Rate))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, j := range r.Jobs {
		fmt.Fprintln(w)
		if err := jobText(w, j, r.Rates.Site.PerMonth > 0); err != nil {
			return err
		}
	}
	fmt.Fprintln(w, "\nADVICE")
	for _, a := range r.Advice {
		fmt.Fprintf(w, "  %s\n", a)
	}
	return nil
}

func jobText(w io.Writer, j JobReport, site bool) error {
	fmt.Fprintf(w, "JOB %s: %d GPUs, checkpoint every %s (write %s), restart %s: %s lost per interruption", j.Name, j.GPUs,
		duration(j.IntervalMin), duration(j.WriteMin), duration(j.RestartMin), duration(j.LostPerInterruptionMin))
	if j.Where != "" {
		fmt.Fprintf(w, "  (%s)", j.Where)
	}
	fmt.Fprintln(w)
	if j.Refused != "" {
		fmt.Fprintf(w, "  refused: %s\n", j.Refused)
		return nil
	}
	fmt.Fprintf(w, "  on %s, %s; the fewest failure domains that hold it: %d\n", j.Placed, count(j.Nodes, "node"), j.Fewest)
	parts := "domain + node"
	if site {
		parts += " + site"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  k\tdomains\tinterruptions a month (%s)\tlost min a month (%s)\tlost GPU-h a month\tMTBF\tETTR\n", parts, parts)
	for _, p := range j.Placements {
		mtbf := "none"
		if p.MTBFh > 0 {
			mtbf = duration(p.MTBFh * 60)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.K, strings.Join(p.Domains, ","), sum(p.Interruptions, site, rate),
			sum(p.LostMin, site, minutes), gpuHours(p.GPUHours), mtbf, percent(p.ETTR))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if c := j.Checkpoint; c != nil {
		fmt.Fprintf(w, "  interval at MTBF %s (packed): Young %s, Daly %s, optimum %s; every %s: ETTR %s against %s, %s GPU-h a month\n",
			duration(c.MTBFh*60), duration(c.YoungMin), duration(c.DalyMin), duration(c.OptimumMin), duration(j.IntervalMin),
			percent(c.ETTRFixed), percent(c.ETTROptimum), gpuHours(c.CostGPUHours))
	}
	return nil
}

// sum writes parts as "a + b = total" (with the site's part when the
// site has a rate).
func sum(p Parts, site bool, f func(float64) string) string {
	s := f(p.Domain) + " + " + f(p.Node)
	if site {
		s += " + " + f(p.Site)
	}
	return s + " = " + f(p.Total)
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// minutes writes minutes to a tenth: 35, 572.9.
func minutes(x float64) string { return trim(strconv.FormatFloat(math.Round(x*10)/10, 'f', 1, 64)) }

// rate writes a rate to three significant figures: 1, 16.4, 0.0142.
func rate(x float64) string {
	if x == 0 {
		return "0"
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

func gpuHours(x float64) string { return strconv.FormatFloat(math.Round(x), 'f', 0, 64) }

func percent(x float64) string {
	return strconv.FormatFloat(math.Round(x*1000)/10, 'f', 1, 64) + " %"
}

func trim(s string) string { return strings.TrimSuffix(s, ".0") }

// duration writes minutes as people say them: 45 s, 9.1 min, 37 min,
// 4 h 53 min, 41.4 h past a day.
func duration(m float64) string {
	switch {
	case math.IsInf(m, 1):
		return "never"
	case m == 0:
		return "0 s"
	case m < 1:
		return fmt.Sprintf("%.0f s", m*60)
	case m < 10:
		return trim(strconv.FormatFloat(m, 'f', 1, 64)) + " min"
	case m < 60:
		return fmt.Sprintf("%.0f min", m)
	case m < 24*60:
		r := int(math.Round(m))
		if r%60 == 0 {
			return fmt.Sprintf("%d h", r/60)
		}
		return fmt.Sprintf("%d h %d min", r/60, r%60)
	}
	return trim(strconv.FormatFloat(m/60, 'f', 1, 64)) + " h"
}
