package topology

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
	"github.com/seamdc/seam/internal/version"
)

// Apply results.
const (
	ResultDryRun         = "dry-run"
	ResultUnchanged      = "unchanged"
	ResultApplied        = "applied"
	ResultRefused        = "refused"
	ResultRolledBack     = "rolled-back"
	ResultRollbackFailed = "rollback-failed"
	ResultFailed         = "failed" // Kubernetes: some nodes may be written; the error names the rest
)

// ApplyOptions shape an apply.
type ApplyOptions struct {
	DryRun bool
	// Force overwrites a topology.conf seam did not write, or that was
	// edited since.
	Force bool
	// FromFabric says the new file was merged from the network-derived
	// tree (--fabric): replacing a file seam did not write is then the
	// point.
	FromFabric bool
	// Unchecked skips the check against Slurm's nodes before writing
	// (tests use it to hand Slurm what it takes but runs otherwise).
	Unchecked bool
	// Restart starts slurmctld again when it stopped answering after a
	// failed reconfigure (it exits on some topology errors); nil: the
	// operator is told to.
	Restart func(ctx context.Context) error
	// Wait bounds how long the controller may take to answer again
	// (default 30 s).
	Wait   time.Duration
	Source string // what the topology came from, for the audit record
	Clock  clock.Clock
	Log    *slog.Logger
}

// ApplyResult is what an apply did.
type ApplyResult struct {
	File   string
	Backup string
	Audit  string
	Stamp  Stamp // of the file replaced
	Diff   EdgeDiff
	Result string
	Err    error // why it was refused, failed, or rolled back
}

// AuditRecord is one line of the audit file beside topology.conf.
type AuditRecord struct {
	Time         string `json:"time"`
	Action       string `json:"action"`
	Result       string `json:"result"`
	File         string `json:"file"`
	Backup       string `json:"backup,omitempty"`
	Source       string `json:"source,omitempty"`
	OldSHA256    string `json:"old_sha256,omitempty"`
	NewSHA256    string `json:"new_sha256"`
	EdgesAdded   int    `json:"edges_added"`
	EdgesRemoved int    `json:"edges_removed"`
	User         string `json:"user,omitempty"`
	Host         string `json:"host,omitempty"`
	Tool         string `json:"tool"`
	Error        string `json:"error,omitempty"`
}

// AuditFile is where the audit records of file are appended.
func AuditFile(file string) string { return file + ".audit.jsonl" }

type applier struct {
	s      scheduler.Reconfigurer
	o      ApplyOptions
	res    *ApplyResult
	want   []Switch
	blocks bool // want is the block plugin's
	mode   fs.FileMode
	old    []byte
	hadOld bool
	new    []byte
	before *scheduler.State
}

// ApplySlurm replaces the running Slurm's topology.conf with content:
// it reads what Slurm runs, shows the difference (DryRun stops there),
// refuses a file seam did not write unless told, checks the new tree
// against Slurm's nodes, writes it with a backup of the old one, runs
// scontrol reconfigure, reads the topology back and compares it with
// what it wrote; on any failure it puts the old file back, reconfigures
// (or restarts) and checks that Slurm runs the old topology again.
// Every apply but a dry run appends an audit record beside the file; a
// dry run writes nothing anywhere, the audit record included.
func ApplySlurm(ctx context.Context, s scheduler.Reconfigurer, content []byte, o ApplyOptions) *ApplyResult {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Wait <= 0 {
		o.Wait = 30 * time.Second
	}
	a := &applier{s: s, o: o, res: &ApplyResult{}, new: content}
	a.run(ctx)
	if !o.DryRun && a.res.File != "" { // a dry run writes nothing, refused or not
		a.audit()
	}
	return a.res
}

func (a *applier) refuse(err error) { a.res.Result, a.res.Err = ResultRefused, err }

func (a *applier) run(ctx context.Context) {
	conf, err := ParseConf("the new topology.conf", a.new)
	if err != nil {
		a.refuse(err)
		return
	}
	a.want = conf.Switches
	if len(conf.Blocks) > 0 {
		a.want, a.blocks = conf.Blocks, true
	}
	file, err := a.s.TopologyFile(ctx)
	if err != nil {
		a.refuse(fmt.Errorf("where topology.conf is: %w", err))
		return
	}
	a.res.File, a.res.Audit = file, AuditFile(file)
	if _, err := os.Stat(filepath.Join(filepath.Dir(file), "topology.yaml")); err == nil {
		a.refuse(fmt.Errorf("%s exists: Slurm 25.05 and later read it and ignore topology.conf; generate --format slurm-yaml instead", filepath.Join(filepath.Dir(file), "topology.yaml")))
		return
	}
	if a.before, err = a.s.Read(ctx); err != nil {
		a.refuse(fmt.Errorf("reading what Slurm runs now: %w", err))
		return
	}
	a.res.Diff = DiffEdges(liveSwitches(a.before), a.want)
	a.old, err = os.ReadFile(file)
	switch {
	case err == nil:
		a.hadOld = true
	case !errors.Is(err, fs.ErrNotExist):
		a.refuse(err)
		return
	}
	if err := a.checkOld(); err != nil {
		a.refuse(err)
		return
	}
	if a.o.DryRun {
		a.res.Result = ResultDryRun
		return
	}
	if a.res.Diff.Empty() && bytes.Equal(a.old, a.new) {
		a.res.Result = ResultUnchanged
		return
	}
	if !a.o.Unchecked {
		if err := a.check(a.want, a.before); err != nil {
			a.refuse(fmt.Errorf("the new topology does not fit Slurm's nodes: %w", err))
			return
		}
	}
	a.write(ctx)
}

// checkOld refuses to replace a file seam did not write, or that was
// edited by hand since.
func (a *applier) checkOld() error {
	if !a.hadOld {
		return nil
	}
	a.res.Stamp = ReadStamp(a.old)
	switch {
	case a.o.Force:
		return nil
	case !a.res.Stamp.Generated && !a.o.FromFabric:
		return fmt.Errorf("%s was not written by seam (no %q stamp): it may come from the fabric (ibnetdiscover, slurmibtopology); merge it with --fabric %s, or replace it with --force",
			a.res.File, StampLine, a.res.File)
	case a.res.Stamp.Generated && !a.res.Stamp.Intact:
		return fmt.Errorf("%s was edited by hand since seam wrote it (its digest no longer matches): look at the edit, then replace it with --force", a.res.File)
	}
	return nil
}

// check is the tree check against what Slurm runs: its nodes (sinfo),
// every one on a leaf.
func (a *applier) check(want []Switch, st *scheduler.State) error {
	var known []string
	if st.Nodes != nil {
		known = make([]string, 0, len(st.Nodes))
		for _, n := range st.Nodes {
			known = append(known, n.Name)
		}
	}
	if a.blocks {
		return checkBlocks(want, known)
	}
	return CheckTree(want, known)
}

func checkBlocks(blocks []Switch, known []string) error {
	var p problems
	on := map[string]string{}
	for _, b := range blocks {
		for _, n := range b.Nodes {
			if prev, ok := on[n]; ok {
				p.add("node %s is in blocks %s and %s", n, prev, b.Name)
			}
			on[n] = b.Name
		}
	}
	if known != nil {
		isKnown := map[string]bool{}
		for _, n := range known {
			isKnown[n] = true
		}
		for _, b := range blocks {
			for _, n := range b.Nodes {
				if !isKnown[n] {
					p.add("block %s lists node %s, which Slurm does not have", b.Name, n)
				}
			}
		}
	}
	return p.err()
}

// liveSwitches is what Slurm runs as leaves and parents: the tree, or
// the base blocks.
func liveSwitches(st *scheduler.State) []Switch {
	if st.Plugin == "block" {
		var out []Switch
		for _, b := range st.Blocks {
			if !b.Aggregated {
				out = append(out, Switch{Name: b.Name, Nodes: b.Nodes, Line: b.Line})
			}
		}
		return out
	}
	return LiveTree(st)
}

func (a *applier) write(ctx context.Context) {
	log := a.o.Log.With("file", a.res.File)
	a.mode = fs.FileMode(0o644)
	if st, err := os.Stat(a.res.File); err == nil {
		a.mode = st.Mode().Perm()
	}
	mode := a.mode
	if a.hadOld {
		a.res.Backup = a.res.File + ".seam-" + a.o.Clock.Now().UTC().Format("20060102T150405.000Z")
		if err := writeAtomic(a.res.Backup, a.old, mode); err != nil {
			a.refuse(fmt.Errorf("backing up %s: %w", a.res.File, err))
			return
		}
	}
	if err := writeAtomic(a.res.File, a.new, mode); err != nil {
		a.refuse(fmt.Errorf("writing %s: %w", a.res.File, err))
		return
	}
	log.Info("wrote topology", "backup", a.res.Backup, "edges_added", len(a.res.Diff.Added), "edges_removed", len(a.res.Diff.Removed))
	if err := a.s.Reconfigure(ctx); err != nil {
		a.rollback(ctx, fmt.Errorf("slurm rejected the new topology: %w", err))
		return
	}
	after, err := a.s.Read(ctx)
	if err != nil {
		a.rollback(ctx, fmt.Errorf("reading the topology back: %w", err))
		return
	}
	if err := a.verify(a.want, after); err != nil {
		a.rollback(ctx, fmt.Errorf("slurm runs another topology than the one written: %w", err))
		return
	}
	a.res.Result = ResultApplied
	log.Info("applied topology", "switches", len(after.Switches), "blocks", len(after.Blocks))
}

// verify compares what Slurm runs with want, edge by edge, and checks
// that Slurm knows every node on a leaf (a leaf line shows a node name
// as written even when slurm.conf has no such node).
func (a *applier) verify(want []Switch, st *scheduler.State) error {
	if d := DiffEdges(liveSwitches(st), want); !d.Empty() {
		return fmt.Errorf("%d edges differ:\n%s", len(d.Added)+len(d.Removed), FormatDiff(d, "written, not running", "running, not written"))
	}
	return a.check(liveSwitches(st), st)
}

// rollback puts the old file back and checks that Slurm runs what it
// ran before.
func (a *applier) rollback(ctx context.Context, cause error) {
	log := a.o.Log.With("file", a.res.File)
	log.Warn("rolling back", "error", cause)
	a.res.Err = cause
	a.res.Result = ResultRollbackFailed
	var err error
	if a.hadOld {
		err = writeAtomic(a.res.File, a.old, a.mode)
	} else {
		err = os.Remove(a.res.File)
	}
	if err != nil {
		a.res.Err = fmt.Errorf("%w; restoring %s failed too: %v", cause, a.res.File, err)
		return
	}
	if err := a.s.Up(ctx); err != nil {
		if a.o.Restart == nil {
			a.res.Err = fmt.Errorf("%w; the old topology.conf is back, but slurmctld stopped (%v): restart it", cause, err)
			return
		}
		log.Warn("restarting slurmctld", "error", err)
		if err := a.o.Restart(ctx); err != nil {
			a.res.Err = fmt.Errorf("%w; the old topology.conf is back, but restarting slurmctld failed: %v", cause, err)
			return
		}
		if err := a.waitUp(ctx); err != nil {
			a.res.Err = fmt.Errorf("%w; the old topology.conf is back, but slurmctld does not answer after a restart: %v", cause, err)
			return
		}
	} else if err := a.s.Reconfigure(ctx); err != nil {
		a.res.Err = fmt.Errorf("%w; the old topology.conf is back, but reconfiguring with it failed: %v", cause, err)
		return
	}
	now, err := a.s.Read(ctx)
	if err != nil {
		a.res.Err = fmt.Errorf("%w; after the rollback Slurm's topology cannot be read: %v", cause, err)
		return
	}
	if d := DiffEdges(liveSwitches(a.before), liveSwitches(now)); !d.Empty() {
		a.res.Err = fmt.Errorf("%w; after the rollback Slurm runs a topology other than before:\n%s", cause, FormatDiff(d, "now, not before", "before, not now"))
		return
	}
	a.res.Result = ResultRolledBack
	log.Info("rolled back: Slurm runs the previous topology")
}

func (a *applier) waitUp(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, a.o.Wait)
	defer cancel()
	for {
		err := a.s.Up(ctx)
		if err == nil {
			return nil
		}
		if e := a.o.Clock.Sleep(ctx, 200*time.Millisecond); e != nil {
			return fmt.Errorf("timed out after %s: %w", a.o.Wait, err)
		}
	}
}

// writeAtomic writes a file through a temporary one and a rename, so a
// crash never leaves half a topology.conf.
func writeAtomic(path string, b []byte, mode fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func (a *applier) audit() {
	rec := AuditRecord{Time: a.o.Clock.Now().UTC().Format(time.RFC3339Nano), Action: "apply", Result: a.res.Result, File: a.res.File,
		Backup: a.res.Backup, Source: a.o.Source, NewSHA256: digest(a.new), EdgesAdded: len(a.res.Diff.Added), EdgesRemoved: len(a.res.Diff.Removed),
		Tool: "seam " + version.Version}
	if a.hadOld {
		rec.OldSHA256 = digest(a.old)
	}
	if a.res.Err != nil {
		rec.Error = a.res.Err.Error()
	}
	if u, err := user.Current(); err == nil {
		rec.User = u.Username
	}
	if sudo := os.Getenv("SUDO_USER"); sudo != "" {
		rec.User = sudo + " (sudo)"
	}
	rec.Host, _ = os.Hostname()
	line, _ := json.Marshal(rec)
	f, err := os.OpenFile(a.res.Audit, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
		if serr := f.Sync(); err == nil {
			err = serr
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		a.res.Err = errors.Join(a.res.Err, fmt.Errorf("writing the audit record %s: %w", a.res.Audit, err))
	}
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FormatDiff writes an edge diff by parent: "+ " lines for added
// children, "- " for removed, children as hostlists.
func FormatDiff(d EdgeDiff, added, removed string) string {
	var b strings.Builder
	write := func(sign, what string, edges []Edge) {
		byParent := map[string][]string{}
		var parents []string
		for _, e := range edges {
			if _, ok := byParent[e.Parent]; !ok {
				parents = append(parents, e.Parent)
			}
			byParent[e.Parent] = append(byParent[e.Parent], e.Child)
		}
		slices.Sort(parents)
		for _, p := range parents {
			fmt.Fprintf(&b, "  %s %s: %s (%s)\n", sign, p, hostlist.Compress(byParent[p]), what)
		}
	}
	write("+", added, d.Added)
	write("-", removed, d.Removed)
	return b.String()
}
