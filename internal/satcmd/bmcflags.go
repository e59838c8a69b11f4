package satcmd

import (
	"flag"
	"io"
	"log/slog"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// bmcFlags pace a command that talks to many BMCs (sat discover, sat
// cap): each overrides the binding's bmcs section when given.
type bmcFlags struct {
	parallel, perBMC int
	timeout          time.Duration
	verbose          bool
}

func (b *bmcFlags) add(fs *flag.FlagSet, parallel, verbose string) {
	fs.IntVar(&b.parallel, "parallel", 0, parallel+" (default: the binding's, else 64)")
	fs.IntVar(&b.perBMC, "per-bmc", 0, "requests in flight to one BMC, 1 or 2 (default: the binding's, else 1)")
	fs.DurationVar(&b.timeout, "timeout", 0, "how long one request may take (default: the binding's, else 10s)")
	fs.BoolVar(&b.verbose, "v", false, verbose)
}

// check refuses a --per-bmc other than 1 or 2.
func (b *bmcFlags) check() error {
	if b.perBMC < 0 || b.perBMC > 2 {
		return cli.Usagef("--per-bmc must be 1 or 2, got %d", b.perBMC)
	}
	return nil
}

// apply puts the flags given into a, and its log on stderr (each BMC
// with -v, else warnings only).
func (b *bmcFlags) apply(a *bmchttp.Access, stderr io.Writer) {
	if b.parallel > 0 {
		a.Parallel = b.parallel
	}
	if b.perBMC > 0 {
		a.PerBMC = b.perBMC
	}
	if b.timeout > 0 {
		a.Timeout = b.timeout
	}
	level := slog.LevelWarn
	if b.verbose {
		level = slog.LevelDebug
	}
	a.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}
