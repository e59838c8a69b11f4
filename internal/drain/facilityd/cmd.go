package facilityd

import (
	"io"
	"log/slog"
	"strings"

	"github.com/seamdc/seam/internal/cli"
)

var program = &cli.Program{
	Name:  "facilityd",
	About: "facilityd turns facility alarms into Slurm drains or Kubernetes taints: one alarm stream, holds with owners, an undrain a named person approves.",
	Exits: "0 done, 1 the tool failed, 2 refused (a request facilityd would not take).",
	// run loads CUE once at start and runs for long; the others read no CUE
	NoBudget: map[string]bool{"run": true, "status": true, "approve": true},
}

// ExitRefused is the exit of a request facilityd refused.
const ExitRefused = cli.ExitFindings

func register(name, summary string, run func(args []string, stdout, stderr io.Writer) int) *cli.Command {
	return program.Register(name, summary, run)
}

// Main runs facilityd with args (without the program name).
func Main(args []string, stdout, stderr io.Writer) int { return program.Main(args, stdout, stderr) }

// logger writes text (or JSON) logs to w at level.
func logger(w io.Writer, verbose bool, format string) *slog.Logger {
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if strings.EqualFold(format, "json") {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
