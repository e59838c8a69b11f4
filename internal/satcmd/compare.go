package satcmd

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/report"
)

func init() {
	register("compare", "compare the measured values of two runs (FAT against SAT)", runCompare).
		WithExample("sat compare evidence/fat-p1-factory evidence/sat-ma-2026-11-29")
}

const compareHelp = `Matches every check of RUN_A with the check of RUN_B that grades the
same clause, check and channel (a FAT case at the factory with the SAT
case of the same module on site), re-grading both from their raw
samples, and prints the change of each measured value. A change of
margin beyond --threshold of RUN_A's margin is flagged; checks that only
one run has are listed. Exit 0: nothing got worse; 2: a margin shrank
beyond the threshold, a verdict regressed, or a bundle does not verify
or re-grade; 1: a bundle cannot be read.`

func runCompare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("RUN_A RUN_B [--threshold 20%] [--format text|csv]", flag.ContinueOnError)
	thr := fs.String("threshold", "20%", "flag a margin change larger than this share of RUN_A's margin")
	format := fs.String("format", "text", "text or csv")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 2 {
		err = cli.Usagef("want two evidence bundle directories, got %d arguments", len(pos))
	}
	var threshold float64
	if err == nil {
		threshold, err = parseShare(*thr)
	}
	if err == nil && *format != "text" && *format != "csv" {
		err = cli.Usagef("--format %q: want text or csv", *format)
	}
	if err != nil {
		if err == flag.ErrHelp {
			fmt.Fprintln(stderr, compareHelp)
		}
		return fail(stderr, "compare", fs, err)
	}
	var runs [2]*report.Run
	for i, dir := range pos {
		if runs[i], err = report.Load(dir, report.Options{}); err != nil {
			return fail(stderr, "compare", fs, err)
		}
	}
	c := report.Compare(runs[0], runs[1], threshold)
	if *format == "csv" {
		err = c.WriteCSV(stdout)
	} else {
		err = c.WriteText(stdout)
	}
	if err != nil {
		return fail(stderr, "compare", fs, err)
	}
	if c.Flagged() || !runs[0].OK() || !runs[1].OK() {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

// parseShare reads "20%" or "0.2" as 0.2.
func parseShare(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, "%")), 64)
	if err != nil || v < 0 {
		return 0, cli.Usagef("--threshold %q: want a share such as 20%% or 0.2", s)
	}
	if pct {
		v /= 100
	}
	return v, nil
}
