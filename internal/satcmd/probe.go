package satcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/probe"
)

func init() {
	register("probe", "read every bound channel once (or --watch): value, unit, quality, latency", runProbe).
		WithExample("sat probe --site /tmp/site")
}

const probeHelp = `Reads every channel and load bank of a site binding through the device
profiles and prints value, unit, quality and latency. Exits 2 when a
required (not optional) channel or load bank point is unreadable or stale,
1 when the binding is broken or a device cannot be opened.
Credentials come from the environment variables and files the binding
names.`

type probeFlags struct {
	site     string
	watch    bool
	interval time.Duration
	count    int
	format   string
	verbose  bool
}

func runProbe(args []string, stdout, stderr io.Writer) int {
	return runProbeEnv(args, stdout, stderr, os.LookupEnv)
}

// runProbeEnv is runProbe with the environment that credentials are
// resolved from.
func runProbeEnv(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("--site BINDING [--watch] [--format table|json]", flag.ContinueOnError)
	var f probeFlags
	fs.StringVar(&f.site, "site", "", "the site binding directory (required)")
	fs.BoolVar(&f.watch, "watch", false, "keep reading and refreshing the table until interrupted")
	fs.DurationVar(&f.interval, "interval", time.Second, "time between reads with --watch")
	fs.IntVar(&f.count, "count", 0, "with --watch, stop after this many reads (0: until interrupted)")
	fs.StringVar(&f.format, "format", "table", "output format: table or json")
	fs.BoolVar(&f.verbose, "v", false, "log requests and reconnects to stderr")
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) > 0:
		err = cli.Usagef("unexpected arguments %q", pos)
	case f.site == "":
		err = cli.Usagef("--site is required")
	case f.format != "table" && f.format != "json":
		err = cli.Usagef("unknown format %q (want table or json)", f.format)
	case f.interval <= 0:
		err = cli.Usagef("--interval must be positive")
	}
	if err != nil {
		if err == flag.ErrHelp {
			fmt.Fprintln(stderr, probeHelp)
		}
		return fail(stderr, "probe", fs, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return probeSite(ctx, f, stdout, stderr, lookupEnv)
}

func probeSite(ctx context.Context, f probeFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	b, diags, err := loadBinding(f.site)
	if err != nil {
		fmt.Fprintf(stderr, "sat probe: %v\n", err)
		return cli.ExitTool
	}
	if diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags)
		fmt.Fprintf(stderr, "sat probe: the binding in %s has %d error(s)\n", f.site, diags.Count(diag.Error))
		return cli.ExitTool
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	site, err := probe.OpenSite(b, probe.Options{Logger: logger, LookupEnv: lookupEnv})
	if err != nil {
		fmt.Fprintf(stderr, "sat probe: %v\n", err)
		return cli.ExitTool
	}
	defer site.Close()
	clk := clock.Real{}
	code := cli.ExitOK
	for round := 1; ; round++ {
		rs, err := site.ReadAll(ctx)
		if err != nil {
			return code // interrupted: the last complete round decides
		}
		if f.watch && f.format == "table" && isTerminal(stdout) {
			fmt.Fprint(stdout, "\x1b[H\x1b[2J")
		}
		if err := render(stdout, f.format, rs, clk.Now()); err != nil {
			fmt.Fprintf(stderr, "sat probe: %v\n", err)
			return cli.ExitTool
		}
		code = verdict(rs)
		if !f.watch || (f.count > 0 && round >= f.count) {
			return code
		}
		if clk.Sleep(ctx, f.interval) != nil {
			return code
		}
	}
}

// verdict is 2 when a required reading is unreadable or stale.
func verdict(rs []probe.ChannelReading) int {
	for _, r := range rs {
		if !r.Optional && r.Quality != probe.Good {
			return cli.ExitFindings
		}
	}
	return cli.ExitOK
}

// isTerminal reports whether w is a terminal that takes cursor control:
// a file with terminal attributes (not merely a character device such as
// /dev/null), and TERM is not "dumb".
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func render(w io.Writer, format string, rs []probe.ChannelReading, now time.Time) error {
	if format == "json" {
		return renderJSON(w, rs)
	}
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tDEVICE\tPOINT\tVALUE\tUNIT\tQUALITY\tLATENCY\tNOTE")
	counts := map[probe.Quality]int{}
	failing := 0
	for _, r := range rs {
		counts[r.Quality]++
		if !r.Optional && r.Quality != probe.Good {
			failing++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Device, r.Point, value(r.Reading), r.Unit,
			r.Quality, latency(r.Reading), note(r))
	}
	tw.Flush()
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		io.WriteString(w, strings.TrimRight(line, " \n")+strings.Repeat("\n", strings.Count(line, "\n")))
	}
	fmt.Fprintf(w, "%s: %d readings: %d good, %d stale, %d error; %d required not good\n",
		now.UTC().Format(time.RFC3339), len(rs), counts[probe.Good], counts[probe.Stale], counts[probe.Bad], failing)
	return nil
}

// value renders a reading: alarms as active/clear, states by name.
func value(r probe.Reading) string {
	switch {
	case r.Quality == probe.Bad:
		return "-"
	case r.Alarm && r.Value != 0:
		return "active"
	case r.Alarm:
		return "clear"
	case r.Unit == "" && r.State != "":
		return fmt.Sprintf("%s (%s)", strconv.FormatFloat(r.Raw, 'f', -1, 64), r.State)
	}
	return strconv.FormatFloat(r.Value, 'g', 6, 64)
}

func latency(r probe.Reading) string {
	if r.Latency <= 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(r.Latency)/float64(time.Millisecond), 'f', 1, 64) + " ms"
}

func note(r probe.ChannelReading) string {
	var parts []string
	if r.Optional {
		parts = append(parts, "optional")
	}
	if r.Err != nil {
		parts = append(parts, r.Err.Error())
	}
	return strings.Join(parts, "; ")
}

type jsonReading struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	Device     string   `json:"device"`
	Point      string   `json:"point"`
	Value      *float64 `json:"value"`
	Unit       string   `json:"unit,omitempty"`
	Raw        *float64 `json:"raw,omitempty"`
	State      string   `json:"state,omitempty"`
	Quality    string   `json:"quality"`
	Optional   bool     `json:"optional,omitempty"`
	LatencyMS  float64  `json:"latency_ms"`
	Received   string   `json:"received,omitempty"`
	DeviceTime string   `json:"device_time,omitempty"`
	Error      string   `json:"error,omitempty"`
}

func renderJSON(w io.Writer, rs []probe.ChannelReading) error {
	out := make([]jsonReading, 0, len(rs))
	for _, r := range rs {
		j := jsonReading{Name: r.Name, Kind: "channel", Device: r.Device, Point: r.Point, Unit: r.Unit, State: r.State,
			Quality: r.Quality.String(), Optional: r.Optional, LatencyMS: float64(r.Latency) / float64(time.Millisecond)}
		if r.LoadBank {
			j.Kind = "loadbank"
		}
		if r.Quality != probe.Bad {
			v := r.Value
			j.Value = &v
		}
		if r.HasRaw {
			raw := r.Raw // also for a bad reading: the number to look at when the scale is suspect
			j.Raw = &raw
		}
		if !r.Received.IsZero() {
			j.Received = r.Received.UTC().Format(time.RFC3339Nano)
		}
		if !r.DeviceTime.IsZero() {
			j.DeviceTime = r.DeviceTime.UTC().Format(time.RFC3339)
		}
		if r.Err != nil {
			j.Error = r.Err.Error()
		}
		out = append(out, j)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
