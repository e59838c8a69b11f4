package satcmd

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/fwimage"
	"github.com/seamdc/seam/internal/fwrollout"
	"github.com/seamdc/seam/internal/fwupdate"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
	"github.com/seamdc/seam/internal/runner"
	"github.com/seamdc/seam/internal/scheduler"
	kube "github.com/seamdc/seam/internal/scheduler/kubernetes"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/version"
)

// applyFlags are sat firmware apply's.
type applyFlags struct {
	plan, contracts, baseline, site, images, evidence, resume, by string
	stages                                                        string
	store, sched, slurmConf, kubeconfig                           string
	listen, advertise, tlsCert, tlsKey                            string
	jobsDeadline                                                  time.Duration
	dryRun, push                                                  bool
	keys, storeKey                                                keyFlags
	bmc                                                           bmcFlags
}

func (f *applyFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.plan, "plan", "", "the rollout: sat firmware plan --format json's output (required)")
	fs.StringVar(&f.site, "site", "", "the site binding directory, with its bmcs section (required)")
	fs.StringVar(&f.images, "images", "", "the directory of the baseline's image files, found by their sha256 (required unless --dry-run)")
	fs.StringVar(&f.evidence, "evidence", "", "the evidence bundle to write, a new directory (or --resume one)")
	fs.StringVar(&f.resume, "resume", "", "continue the interrupted rollout whose evidence bundle this is: nothing it finished is done again")
	fs.StringVar(&f.stages, "stages", "", "apply only these stages, comma-separated numbers or ranges (1,3-5; default: every one)")
	fs.StringVar(&f.store, "lifecycle", "", "the lifecycle store that holds the ledger of holds (a SQLite file or a postgres:// URL; its password from $"+lifecyclecmd.EnvPassword+"); without it the holds live in this process only")
	fs.StringVar(&f.storeKey.key, "lifecycle-key", "", "with --lifecycle: the SSH key that signs the ledger's changes (a member of the store)")
	fs.StringVar(&f.sched, "scheduler", "none", "drain the stages' nodes through this scheduler: slurm, kubernetes, or none (facilityd's reconcile applies the holds)")
	fs.StringVar(&f.slurmConf, "slurm-conf", "", "with --scheduler slurm: slurm.conf (default $SLURM_CONF, or Slurm's own)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "with --scheduler kubernetes: the kubeconfig (default $KUBECONFIG)")
	fs.DurationVar(&f.jobsDeadline, "jobs-deadline", time.Hour, "how long a stage waits for the jobs on its drained nodes to end before it stops (jobs are never killed)")
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "where the image server listens (beyond loopback: --tls-cert and --tls-key)")
	fs.StringVar(&f.advertise, "advertise", "", "the host BMCs reach the image server by (default: the listening address)")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "the image server's certificate (PEM)")
	fs.StringVar(&f.tlsKey, "tls-key", "", "the image server's private key (PEM)")
	fs.BoolVar(&f.push, "push", false, "send each image in a multipart push where the BMC offers one, instead of SimpleUpdate")
	fs.BoolVar(&f.dryRun, "dry-run", false, "read the BMCs, the ledger and the scheduler; print every write it would make; write nothing (no BMC, ledger, scheduler or evidence)")
	fs.StringVar(&f.by, "by", "", "who applies the rollout, for the holds and the evidence (default: $USER, or the lifecycle key's member)")
	fs.StringVar(&f.keys.key, "sign-key", "", "sign the evidence with this SSH key (a private key, or a public key whose private key ssh-agent holds)")
	fs.StringVar(&f.keys.passEnv, "passphrase-env", "", "the environment variable holding the signing keys' passphrase")
	f.bmc.add(fs, "trays updated at once", "log each BMC request to stderr")
}

func (f *applyFlags) check() error {
	switch {
	case f.plan == "":
		return cli.Usagef("--plan is required: sat firmware plan --format json's output")
	case f.site == "":
		return cli.Usagef("--site is required: the binding whose bmcs section reaches the BMCs")
	case f.images == "" && !f.dryRun:
		return cli.Usagef("--images DIR is required: the image files the image server serves")
	case f.dryRun && (f.evidence != "" || f.resume != ""):
		return cli.Usagef("--dry-run writes no evidence: drop --evidence and --resume")
	case !f.dryRun && (f.evidence == "") == (f.resume == ""):
		return cli.Usagef("give --evidence DIR (a new rollout) or --resume DIR (an interrupted one): every rollout is recorded")
	case f.store != "" && f.storeKey.key == "" && !f.dryRun:
		return cli.Usagef("--lifecycle needs --lifecycle-key: the ledger's changes are signed")
	case !slices.Contains([]string{"none", "slurm", "kubernetes"}, f.sched):
		return cli.Usagef("--scheduler %q: slurm, kubernetes or none", f.sched)
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return cli.Usagef("give both --tls-cert and --tls-key, or neither")
	}
	if _, err := parseStages(f.stages); err != nil {
		return cli.Usagef("--stages: %v", err)
	}
	return f.bmc.check()
}

// parseStages reads 1,3-5 (nil: every stage).
func parseStages(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 1 || b < a {
			return nil, fmt.Errorf("%q is not a stage number or range (1,3-5)", part)
		}
		for n := a; n <= b; n++ {
			out = append(out, n)
		}
	}
	return out, nil
}

func firmwareApply(f firmwareFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	a := f.apply
	if a.by == "" {
		a.by, _ = lookupEnv("USER")
	}
	a.by = cmp.Or(a.by, "unknown")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := applyRollout(ctx, f, a, stdout, stderr, lookupEnv)
	var stopped *stoppedError
	switch {
	case errors.Is(err, errFinished):
		fmt.Fprintf(stdout, "%s: nothing to do (sat verify %s)\n", err, a.resume)
		return cli.ExitOK
	case errors.As(err, &stopped):
		fmt.Fprintf(stderr, "sat firmware apply: %v\n", stopped.err)
		fmt.Fprintf(stdout, "the rollout stopped; its evidence %s is kept: once the cause is dealt with, continue it with --resume %s\n", stopped.dir, stopped.dir)
		return cli.ExitFindings
	case err != nil:
		fmt.Fprintf(stderr, "sat firmware apply: %v\n", err)
		return cli.ExitTool
	}
	writeApplied(stdout, res, a)
	return cli.ExitOK
}

// errFinished is a resumed rollout that had finished.
var errFinished = errors.New("the rollout finished already")

// stoppedError is a rollout stopped by a stage (a failed update, jobs
// that did not leave): its bundle stays open, to be resumed.
type stoppedError struct {
	dir string
	err error
}

func (e *stoppedError) Error() string { return e.err.Error() }

// applyRollout checks the plan against the baseline and the images,
// finds the BMCs, opens the ledger, the image server and the evidence,
// and runs the rollout under the site's clock.
func applyRollout(ctx context.Context, f firmwareFlags, a applyFlags, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) (*fwrollout.Result, error) {
	p, planDigest, err := firmware.ReadPlan(a.plan)
	if err != nil {
		return nil, err
	}
	stages, _ := parseStages(a.stages)
	sigs, err := checkBaseline(p, f)
	if err != nil {
		return nil, err
	}
	var rec *dryrun.Recorder
	if a.dryRun {
		rec = dryrun.New(stdout, nil)
	}
	var images map[string]string
	if a.images != "" {
		if images, err = findImages(a.images, p, stages); err != nil {
			return nil, err
		}
	}
	sb, err := loadSiteBMCs(ctx, a.site, f.contracts, nil, nil, stderr, lookupEnv)
	if err != nil {
		return nil, err
	}
	a.bmc.apply(&sb.access, stderr)
	clk, closeClock, err := siteClock(ctx, a.site, a.dryRun)
	if err != nil {
		return nil, err
	}
	defer closeClock()
	sb.access.Clock = clk
	gate, err := openFirmwareLedger(ctx, a, rec, lookupEnv)
	if err != nil {
		return nil, err
	}
	defer gate.close()
	if gate.by != "" {
		a.by = gate.by // the store's member who signs the holds
	}
	cfg := fwrollout.Config{Plan: p, PlanDigest: planDigest, Signatures: sigs, Stages: stages, Ledger: gate.ledger, Clock: clk, By: a.by,
		Parallel: sb.access.WithDefaults().Parallel, JobsDeadline: a.jobsDeadline, DryRun: a.dryRun,
		Update: fwupdate.Options{Writable: sb.bmcs.Writable, DryRun: rec, Push: a.push}, ImageFiles: images,
		Progress: func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }}
	cfg.Target, err = rolloutTargets(sb, p, stages)
	if err != nil {
		return nil, err
	}
	var srv *fwimage.Server
	if !a.dryRun {
		if srv, err = imageServer(a, images, clk); err != nil {
			return nil, err
		}
		defer srv.Close()
	}
	cfg.Grant = grants(srv)
	var b *evidence.Bundle
	dir := cmp.Or(a.resume, a.evidence)
	if !a.dryRun {
		if b, cfg.State, err = rolloutBundle(a, p, planDigest, clk, lookupEnv); err != nil {
			return nil, err
		}
		cfg.Journal = rolloutJournal{b}
	}
	verb := "applying"
	if a.dryRun {
		verb = "dry run of"
	} else if a.resume != "" {
		verb = fmt.Sprintf("resuming (%d stage(s) and %d tray(s) finished)", len(cfg.State.StagesDone), len(cfg.State.Trays))
	}
	fmt.Fprintf(stdout, "%s rollout %s of %s: %d stage(s), %d at once; ledger: %s\n", verb, p.Rollout, p.Site, countStages(p, stages), cfg.Parallel, gate.where)
	fmt.Fprintln(stdout, signedLine(sigs))
	if srv != nil {
		fmt.Fprintf(stdout, "images served at %s, one-time URLs\n", srv.URL())
	}
	res, err := runUnder(ctx, clk, cfg)
	return res, endRollout(b, dir, planDigest, err, stdout)
}

// grants gives each update its image URL: a one-time grant of srv's, or
// in a dry run (srv nil) a stand-in.
func grants(srv *fwimage.Server) func(tray, bmc string, u firmware.Update) (string, error) {
	if srv == nil {
		return func(_, _ string, u firmware.Update) (string, error) {
			return "https://image-server/images/TOKEN/" + u.Component + "-" + u.To, nil
		}
	}
	return func(_, bmc string, u firmware.Update) (string, error) { return srv.Grant("sha256:"+u.SHA256, bmc) }
}

// endRollout ends the evidence (b nil: a dry run, none): finished when
// every stage passed, else sealed and left to be resumed.
func endRollout(b *evidence.Bundle, dir, planDigest string, runErr error, stdout io.Writer) error {
	switch {
	case b == nil && runErr == nil:
		fmt.Fprintln(stdout, "dry run: nothing was written (no BMC, ledger, scheduler or evidence)")
		return nil
	case b == nil:
		return runErr
	case runErr != nil:
		if err := b.Close(); err != nil {
			return errors.Join(runErr, fmt.Errorf("evidence: %w", err))
		}
		return &stoppedError{dir: dir, err: runErr}
	}
	if _, err := b.Finish(evidence.Meta{ToolVersion: "sat firmware apply " + version.Version, PlanDigest: planDigest, Outcome: "passed"}); err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	fmt.Fprintf(stdout, "evidence %s\n", dir)
	return nil
}

func countStages(p *firmware.Plan, only []int) int {
	if only == nil {
		return len(p.Stages)
	}
	n := 0
	for _, st := range p.Stages {
		if slices.Contains(only, st.Number) {
			n++
		}
	}
	return n
}

// checkBaseline refuses a baseline changed since the plan was made, or
// not signed as it is by every party its policy names; it returns the
// signatures.
func checkBaseline(p *firmware.Plan, f firmwareFlags) ([]firmware.Signature, error) {
	dir := f.baseline
	set, diags, err := firmware.Load(dir)
	if err != nil {
		return nil, err
	}
	if n := diags.Count(diag.Error); n > 0 || set == nil {
		return nil, fmt.Errorf("the firmware baseline in %s has %d error(s): sat firmware vet says which", dir, n)
	}
	if set.Digest != p.Baseline.Digest {
		return nil, fmt.Errorf("the firmware baseline in %s is %s, the plan %s was made from %s: the baseline changed since; make the plan again (sat firmware plan)",
			dir, set.Digest, p.Rollout, p.Baseline.Digest)
	}
	if len(set.Policy.SignedBy) == 0 {
		return nil, nil // FW010 warns of it
	}
	allowed, file, err := allowedSigners(f, true)
	if err != nil {
		return nil, fmt.Errorf("the baseline's policy names signers (%s), whose keys %s must list: %w", strings.Join(set.Policy.SignedBy, ", "), file, err)
	}
	sigs := firmware.Signatures(set, allowed, time.Now())
	var bad []string
	for _, s := range sigs {
		if s.State != firmware.Signed {
			bad = append(bad, fmt.Sprintf("%s: %s (%s)", s.Party, s.State, s.Why))
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("the firmware baseline in %s (%s) is not signed as its policy requires, so nothing is applied:\n  %s\nthe party signs it with sat firmware sign --party NAME",
			dir, set.Digest, strings.Join(bad, "\n  "))
	}
	return sigs, nil
}

// findImages reads the directory's files' digests, and finds each
// update's image among them (by sha256) for the stages applied.
func findImages(dir string, p *firmware.Plan, only []int) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("--images: %w", err)
	}
	byDigest := map[string]string{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--images: %w", err)
		}
		sum := sha256.Sum256(data)
		byDigest[hex.EncodeToString(sum[:])] = path
	}
	out := map[string]string{}
	var missing []string
	seen := map[string]bool{}
	for _, st := range p.Stages {
		if only != nil && !slices.Contains(only, st.Number) {
			continue
		}
		for _, t := range st.Trays {
			for _, u := range t.Updates {
				path, ok := byDigest[u.SHA256]
				switch {
				case ok:
					out[u.SHA256] = path
				case !seen[u.SHA256]:
					seen[u.SHA256] = true
					missing = append(missing, fmt.Sprintf("%s %s (sha256:%s, %s)", u.Component, u.To, u.SHA256, cmp.Or(u.URI, "no URI in the baseline")))
				}
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("--images %s holds no file with the digest of %d image(s) the plan needs: %s; put the vendor's images there (their sha256 must be the baseline's)",
			dir, len(missing), strings.Join(missing, "; "))
	}
	return out, nil
}

// imageServer serves the plan's images: on loopback over HTTP, beyond
// it only over TLS.
func imageServer(a applyFlags, images map[string]string, clk clock.Clock) (*fwimage.Server, error) {
	opt := fwimage.Options{Listen: a.listen, Advertise: a.advertise, TTL: 2 * time.Hour, Clock: clk}
	if a.tlsCert != "" {
		pair, err := tls.LoadX509KeyPair(a.tlsCert, a.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		opt.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	var ims []fwimage.Image
	for sum, path := range images {
		ims = append(ims, fwimage.Image{Digest: "sha256:" + sum, Path: path, Name: filepath.Base(path)})
	}
	srv, err := fwimage.New(ims, opt)
	if err != nil {
		return nil, err
	}
	srv.Serve()
	return srv, nil
}

// rolloutTargets maps each tray of the stages applied to its BMC (the
// one the site says manages it); a tray without one is refused before
// anything starts.
func rolloutTargets(sb *siteBMCs, p *firmware.Plan, only []int) (func(string) (fwrollout.Target, error), error) {
	byTray := map[string]fwrollout.Target{}
	client, _ := sb.access.Client(nil)
	for _, t := range sb.targets {
		if t.Expect == "" {
			continue
		}
		byTray[t.Expect] = fwrollout.Target{BMC: t.Name, URL: t.URL, Login: func(ctx context.Context) (*gofish.APIClient, error) {
			c, err := sb.access.Connect(ctx, client, t.Name, t.URL)
			if err != nil && bmchttp.SessionsFull(err) && !sb.access.Basic {
				// the sessions of a run that was killed hold every slot
				// until they time out: basic authentication opens none
				sb.access.WithDefaults().Log.Warn("BMC holds as many sessions as it allows: logging in with basic authentication", "bmc", t.Name)
				basic := sb.access
				basic.Basic = true
				c, err = basic.Connect(ctx, client, t.Name, t.URL)
			}
			return c, err
		}}
	}
	var missing []string
	for _, st := range p.Stages {
		if only != nil && !slices.Contains(only, st.Number) {
			continue
		}
		for _, t := range st.Trays {
			if _, ok := byTray[t.Key]; !ok {
				missing = append(missing, t.Key)
			}
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("the site's BMCs manage none of %d tray(s) of the plan: %s; check the binding's bmcs section (sat discover finds them)", len(missing), strings.Join(missing[:min(5, len(missing))], ", "))
	}
	return func(tray string) (fwrollout.Target, error) { return byTray[tray], nil }, nil
}

// siteClock is the site's time: a simulated site stepped from outside
// moves in lockstep with the rollout (advanced through its control
// interface when every update waits), one running on its own clock at
// its time scale; a real site's is the wall clock. A dry run never
// advances the simulator.
func siteClock(ctx context.Context, site string, dry bool) (clock.Clock, func(), error) {
	b, diags, err := binding.Load(site)
	if err == nil && diags.Count(diag.Error) > 0 {
		err = fmt.Errorf("the binding in %s has %d error(s)", site, diags.Count(diag.Error))
	}
	if err != nil {
		return nil, nil, err
	}
	if b.Simulator == nil {
		return clock.Real{}, func() {}, nil
	}
	client := &sim.Client{URL: strings.TrimRight(b.Simulator.Control, "/")}
	st, err := client.Status(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("the simulator at %s: %w", client.URL, err)
	}
	if !st.Stepped {
		return runner.NewScaled(st.Time, max(b.Simulator.TimeScale, 1)), func() {}, nil
	}
	var w clock.World
	if !dry {
		w = &remoteSite{client: client, at: st.Time}
	}
	lk := clock.NewLockstep(st.Time, w, 0, nil)
	return lk, lk.Close, nil
}

// remoteSite is a stepped simulator as a Lockstep's world: its time is
// advanced through its control interface, a few seconds a request.
type remoteSite struct {
	client *sim.Client
	at     time.Time
}

func (w *remoteSite) AdvanceTo(t time.Time) {
	for w.at.Before(t) {
		d := min(t.Sub(w.at), advanceStep)
		if _, err := w.client.Advance(context.Background(), d); err != nil {
			return // the BMCs' next answer says what is wrong
		}
		w.at = w.at.Add(d)
	}
}

// runUnder runs the rollout as a participant of a Lockstep clock.
func runUnder(ctx context.Context, clk clock.Clock, cfg fwrollout.Config) (*fwrollout.Result, error) {
	var res *fwrollout.Result
	var err error
	var wg sync.WaitGroup
	wg.Add(1)
	clock.Go(clk, func() {
		defer wg.Done()
		res, err = fwrollout.Run(ctx, cfg)
	})
	wg.Wait()
	return res, err
}

// firmwareLedger is where the rollout's holds go.
type firmwareLedger struct {
	ledger *ledger.Ledger
	store  *lifecycle.Store
	where  string
	by     string
}

func (g *firmwareLedger) close() {
	if g.store != nil {
		g.store.Close()
	}
}

// openFirmwareLedger opens the ledger: the lifecycle store's with
// --lifecycle, else one in this process only; the scheduler of
// --scheduler drains. A dry run reads both and records every write.
func openFirmwareLedger(ctx context.Context, a applyFlags, rec *dryrun.Recorder, lookupEnv func(string) (string, bool)) (*firmwareLedger, error) {
	g := &firmwareLedger{ledger: &ledger.Ledger{DryRun: rec.Active()}, where: "this rollout's own, not kept (give --lifecycle)"}
	var sched scheduler.Drainer
	peer := dryrun.Scheduler
	system := "slurm"
	switch a.sched {
	case "slurm":
		sched = &scheduler.Slurm{Conf: a.slurmConf, Command: scheduler.Command{Timeout: 30 * time.Second}}
	case "kubernetes":
		cs, err := kube.Client(a.kubeconfig, lookupEnv, 100, 600)
		if err != nil {
			return nil, err
		}
		sched, peer, system = &kube.Drainer{Client: cs, Component: "sat-firmware"}, dryrun.Kubernetes, "kubernetes"
	}
	var backend hold.Backend = hold.NewMemory(&hold.Book{}, nil, nil)
	if a.store != "" {
		password, _ := lookupEnv(lifecyclecmd.EnvPassword)
		st, err := lifecycle.Open(ctx, lifecycle.Config{Store: a.store, Password: password, LookupEnv: lookupEnv, DryRun: rec})
		if err != nil {
			return nil, fmt.Errorf("--lifecycle %s: %w", a.store, err)
		}
		g.store, g.where = st, "the lifecycle store "+a.store
		auth := lifecycle.Auth{}
		if a.storeKey.key != "" {
			a.storeKey.passEnv = a.keys.passEnv
			signer, err := loadSSHSigner(a.storeKey, lookupEnv)
			if err != nil {
				g.close()
				return nil, fmt.Errorf("--lifecycle-key: %w", err)
			}
			auth = lifecycle.KeyAuth(signer, "")
			if g.by, err = st.Actor(ctx, auth); err != nil {
				g.close()
				return nil, fmt.Errorf("--lifecycle-key: %w", err)
			}
		}
		backend = st.Ledger(auth, system)
	}
	var err error
	if g.ledger.Backend, g.ledger.Sched, err = recording(ctx, backend, sched, rec, peer); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

// rolloutJournal is the evidence bundle as the rollout's journal.
type rolloutJournal struct{ b *evidence.Bundle }

func (j rolloutJournal) Append(kind string, data any) error {
	_, err := j.b.Append(kind, "", data)
	return err
}
func (j rolloutJournal) Seal() error { return j.b.Seal() }

// rolloutBundle starts the rollout's evidence, or reopens an
// interrupted one's (the same rollout and plan only) with what it
// finished.
func rolloutBundle(a applyFlags, p *firmware.Plan, planDigest string, clk clock.Clock, lookupEnv func(string) (string, bool)) (*evidence.Bundle, *fwrollout.State, error) {
	sg, fp, err := capSigner(a.keys, lookupEnv)
	if err != nil {
		return nil, nil, err
	}
	by := a.by
	if fp != "" {
		by += " (" + fp + ")"
	}
	opt := evidence.Options{Signer: sg, By: by}
	if a.resume == "" {
		b, err := evidence.Create(a.evidence, clk, opt)
		return b, nil, err
	}
	before, err := fwrollout.ReadState(a.resume)
	if err != nil {
		return nil, nil, fmt.Errorf("--resume: %w", err)
	}
	// a run stopped before it recorded its start did nothing yet
	if s := before.Start; s != nil && (s.Rollout != p.Rollout || s.Plan != planDigest) {
		return nil, nil, fmt.Errorf("--resume %s: a rollout of another plan (%s, %s), not of %s (%s, %s): resume it with the plan it began with",
			a.resume, s.Rollout, s.Plan, a.plan, p.Rollout, planDigest)
	}
	b, _, err := evidence.Resume(a.resume, clk, opt, nil)
	if err != nil {
		// a run stopped while it wrote its end: the end is kept
		if rep, aerr := evidence.Audit(a.resume, evidence.AuditOptions{}); aerr == nil && rep.Complete && rep.OK() && before.Ended {
			return nil, nil, errFinished
		}
		return nil, nil, err
	}
	st, err := fwrollout.ReadState(a.resume)
	if err != nil {
		_ = b.Close()
		return nil, nil, fmt.Errorf("--resume: %w", err)
	}
	return b, st, nil
}

// writeApplied says what the rollout did.
func writeApplied(w io.Writer, res *fwrollout.Result, a applyFlags) {
	updates, trays, nodes := 0, 0, 0
	for _, st := range res.Stages {
		for _, t := range st.Trays {
			trays++
			for _, r := range t.Results {
				if r.Sent {
					updates++
				}
			}
		}
		nodes += len(st.Updated)
	}
	if a.dryRun {
		fmt.Fprintf(w, "sat firmware apply (dry run): %d stage(s), %d tray(s)\n", len(res.Stages), trays)
		return
	}
	fmt.Fprintf(w, "sat firmware apply: %d stage(s), %d tray(s), %d update(s) sent; %d node(s) wait for their burn-in\n", len(res.Stages), trays, updates, nodes)
}

// signedLine says who signed the baseline.
func signedLine(sigs []firmware.Signature) string {
	if len(sigs) == 0 {
		return "baseline: unsigned (its policy names no signer: FW010)"
	}
	parts := make([]string, len(sigs))
	for i, s := range sigs {
		parts[i] = fmt.Sprintf("%s (key %s, %s)", s.Party, s.Key, s.SignedAt)
	}
	return "baseline signed by " + strings.Join(parts, ", ")
}
