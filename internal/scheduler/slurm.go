package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/dryrun"
)

// Command runs a scheduler's commands. The zero value runs them with
// os/exec, each bounded by a minute.
type Command struct {
	Timeout time.Duration
	// Exec replaces os/exec (tests hand in fakes); env is added to the
	// process's environment.
	Exec func(ctx context.Context, env []string, name string, args ...string) ([]byte, error)
	Log  *slog.Logger
	// Dry, when set, is a dry run: every command that changes the
	// scheduler is recorded there ("would run: scontrol update …")
	// instead of run; commands that only read still run.
	Dry *dryrun.Recorder
}

func (c Command) run(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	exe := c.Exec
	if exe == nil {
		exe = osExec
	}
	out, err := exe(ctx, env, name, args...)
	if c.Log != nil {
		c.Log.Debug("ran", "command", name+" "+strings.Join(args, " "), "duration_seconds", time.Since(start).Seconds(), "error", err)
	}
	if err != nil {
		shown := filepath.Base(name) + " " + strings.Join(args, " ")
		if ctx.Err() == context.DeadlineExceeded {
			return out, fmt.Errorf("%s: timed out after %s", shown, timeout)
		}
		return out, fmt.Errorf("%s: %w", shown, err)
	}
	return out, nil
}

// write runs a command that changes the scheduler, or records it in a
// dry run.
func (c Command) write(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	if c.Dry.Active() {
		c.Dry.Would(dryrun.Scheduler, "run: %s", shellQuote(append([]string{filepath.Base(name)}, args...)))
		return nil, nil
	}
	return c.run(ctx, env, name, args...)
}

// shellQuote joins a command line as a shell reads it back (a
// hostlist's brackets are left as Slurm's documentation writes them).
func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()") {
			out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// osExec runs a program; its error carries the exit and what it wrote
// to standard error.
func osExec(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return out, fmt.Errorf("%w: %s", err, msg)
		}
		return out, err
	}
	return out, nil
}

// Slurm is a live Slurm cluster, reached through scontrol and sinfo on
// a host that can talk to its controller (apply: the controller's host,
// where topology.conf lives).
type Slurm struct {
	// Conf is slurm.conf (passed as SLURM_CONF); "" leaves the
	// environment's.
	Conf string
	// Bin is the directory of scontrol and sinfo; "" finds them on PATH.
	Bin string
	Command
}

func (s *Slurm) env() []string {
	if s.Conf == "" {
		return nil
	}
	return []string{"SLURM_CONF=" + s.Conf}
}

func (s *Slurm) bin(name string) string {
	if s.Bin == "" {
		return name
	}
	return filepath.Join(s.Bin, name)
}

// Scontrol runs scontrol with args: show and ping read; anything else
// (update, create, delete, reconfigure) changes Slurm, and a dry run
// records it instead.
func (s *Slurm) Scontrol(ctx context.Context, args ...string) ([]byte, error) {
	if scontrolReads(args) {
		return s.run(ctx, s.env(), s.bin("scontrol"), args...)
	}
	return s.write(ctx, s.env(), s.bin("scontrol"), args...)
}

// scontrolReads reports whether scontrol's arguments only read.
func scontrolReads(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		return a == "show" || a == "ping" || a == "version"
	}
	return false
}

// Env is the environment Slurm's commands run with (SLURM_CONF), for
// the jobs a burn-in runs.
func (s *Slurm) Env() []string { return s.env() }

// Bin is the path of one of Slurm's programs.
func (s *Slurm) Path(prog string) string { return s.bin(prog) }

// Read runs scontrol show topology and sinfo --json.
func (s *Slurm) Read(ctx context.Context) (*State, error) {
	topo, err := s.Scontrol(ctx, "show", "topology")
	if err != nil {
		return nil, err
	}
	ts, err := ParseTopology("scontrol show topology", topo)
	if err != nil {
		return nil, err
	}
	nodes, err := s.run(ctx, s.env(), s.bin("sinfo"), "--json")
	if err != nil {
		return nil, err
	}
	ns, err := ParseSinfo("sinfo --json", nodes)
	if err != nil {
		return nil, err
	}
	return Merge(ts, ns), nil
}

// TopologyFile is topology.conf beside slurm.conf: Conf's directory, or
// the one scontrol show config names.
func (s *Slurm) TopologyFile(ctx context.Context) (string, error) {
	if s.Conf != "" {
		return filepath.Join(filepath.Dir(s.Conf), "topology.conf"), nil
	}
	out, err := s.Scontrol(ctx, "show", "config")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "SLURM_CONF" {
			return filepath.Join(filepath.Dir(strings.TrimSpace(v)), "topology.conf"), nil
		}
	}
	return "", errors.New("scontrol show config names no SLURM_CONF: give slurm.conf's path")
}

// Reconfigure runs scontrol reconfigure: slurmctld reads its files again.
func (s *Slurm) Reconfigure(ctx context.Context) error {
	_, err := s.Scontrol(ctx, "reconfigure")
	return err
}

// Up runs scontrol ping.
func (s *Slurm) Up(ctx context.Context) error {
	out, err := s.Scontrol(ctx, "ping")
	if err != nil {
		return fmt.Errorf("slurmctld does not answer: %w", err)
	}
	if !bytes.Contains(out, []byte("is UP")) {
		return fmt.Errorf("slurmctld does not answer: scontrol ping: %s", strings.TrimSpace(string(out)))
	}
	return nil
}

// SlurmHint is what to do when no slurmctld answers, for the commands
// that take --slurm-conf.
const SlurmHint = "point at a running Slurm's slurm.conf with --slurm-conf or SLURM_CONF"

// Reachable checks that a slurmctld answers, with one scontrol ping
// through the client's slurm.conf (Conf, else SLURM_CONF from the
// environment); a slurm.conf that does not exist is not pinged (scontrol
// would retry it for a minute). Its error is an *UnreachableError: one
// line saying what was tried, what came back and what to do (SlurmHint;
// callers may add theirs).
func (s *Slurm) Reachable(ctx context.Context) error {
	conf := s.Conf
	if conf == "" {
		conf = os.Getenv("SLURM_CONF")
	}
	if conf != "" {
		if _, err := os.Stat(conf); err != nil {
			said := err.Error()
			if errors.Is(err, fs.ErrNotExist) {
				said = "no such file"
			}
			return &UnreachableError{Conf: conf, Said: said, Hint: SlurmHint, Err: err}
		}
	}
	out, err := s.Scontrol(ctx, "ping")
	if bytes.Contains(out, []byte("is UP")) {
		return nil
	}
	return &UnreachableError{Conf: conf, Said: "scontrol ping: " + pingSaid(out, err), Hint: SlurmHint, Err: err}
}

// UnreachableError is a Slurm whose controller does not answer.
type UnreachableError struct {
	Conf string // the slurm.conf tried; "" Slurm's default
	Said string // what came back, in one line
	Hint string // what to do
	Err  error  // scontrol's error, if it failed
}

func (e *UnreachableError) Error() string {
	conf := "SLURM_CONF=" + e.Conf
	if e.Conf == "" {
		conf = "SLURM_CONF unset"
	}
	return fmt.Sprintf("no slurmctld reachable with %s (%s): %s", conf, e.Said, e.Hint)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// pingSaid is the line of scontrol ping's answer that says why no
// slurmctld answered: Debian's scontrol writes several lines of errors,
// or a banner of asterisks around "Slurmctld(primary) at HOST is DOWN".
func pingSaid(out []byte, err error) string {
	if errors.Is(err, exec.ErrNotFound) {
		return "scontrol not found: install Slurm's client (Debian: slurm-client)"
	}
	text := string(out)
	if err != nil {
		text += "\n" + strings.TrimPrefix(err.Error(), "scontrol ping: ")
	}
	if strings.Contains(text, "DNS SRV") {
		return "no slurm.conf at Slurm's default path, and no DNS SRV record names a slurmctld"
	}
	var first string
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if _, msg, ok := strings.Cut(l, "fatal: "); ok {
			return msg
		}
		if first == "" && strings.Trim(l, "* ") != "" {
			first = l
		}
	}
	if first == "" {
		return "no answer"
	}
	return first
}

// SlurmFiles are saved copies of scontrol show topology and sinfo
// --json (either may be "").
type SlurmFiles struct{ Topology, Sinfo string }

// Read reads the saved copies, side by side.
func (f SlurmFiles) Read(ctx context.Context) (*State, error) {
	var parts []Scheduler
	if f.Topology != "" {
		parts = append(parts, savedFile{f.Topology, "scontrol show topology", ParseTopology})
	}
	if f.Sinfo != "" {
		parts = append(parts, savedFile{f.Sinfo, "sinfo --json", ParseSinfo})
	}
	if len(parts) == 0 {
		return nil, errors.New("no saved Slurm output given")
	}
	states, err := ReadAll(ctx, parts...)
	if err != nil {
		return nil, err
	}
	return Merge(states...), nil
}

// savedFile is one command's saved output.
type savedFile struct {
	path, what string
	parse      func(string, []byte) (*State, error)
}

func (s savedFile) Read(context.Context) (*State, error) {
	b, err := os.ReadFile(s.path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.what, err)
	}
	return s.parse(s.path, b)
}
