package satcmd

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/sim"
)

// fwSite is the simulated site in this process, stepped (its time moves
// only as the rollout advances it), with the binding sat sim writes, a
// baseline like the example's whose images are simulated ones (in
// images/), and a plan of module ma made from a real discovery.
type fwSite struct {
	o                      *sim.Opened
	site, baseline, images string
	plan, allowed          string
	p                      *firmware.Plan
}

func newFWSite(t *testing.T) *fwSite {
	t.Helper()
	o, control := startSlowSim(t)
	s := &fwSite{o: o, site: t.TempDir(), baseline: t.TempDir(), images: t.TempDir()}
	require.NoError(t, o.WriteBinding(s.site, control, 1, true, func(string) (string, bool) { return "", false }))
	s.writeBaseline(t)
	var racks []string
	for i := 1; i <= 16; i++ {
		racks = append(racks, fmt.Sprintf("ma/r%02d", i))
	}
	code, disc, stderr := sat(t, "discover", "--site", s.site, "--racks", strings.Join(racks, ","), "--format", "json")
	require.Equal(t, 0, code, stderr)
	discFile := filepath.Join(t.TempDir(), "discovery.json")
	require.NoError(t, os.WriteFile(discFile, []byte(disc), 0o644))
	s.plan = filepath.Join(t.TempDir(), "plan.json")
	code, _, stderr = sat(t, "firmware", "plan", "--contracts", exampleDir, "--baseline", s.baseline, "--discovery", discFile,
		"--module", "ma", "--format", "json", "-o", s.plan)
	require.Equal(t, 0, code, stderr)
	var err error
	s.p, _, err = firmware.ReadPlan(s.plan)
	require.NoError(t, err)

	// the baseline's policy names GPUWorks: unsigned, it is refused
	key, pub := sshKey(t)
	text, err := os.ReadFile(pub)
	require.NoError(t, err)
	s.allowed = filepath.Join(t.TempDir(), "allowed_signers")
	require.NoError(t, os.WriteFile(s.allowed, []byte(`GPUWorks namespaces="seam-contract" `+string(text)), 0o644))
	code, stdout, stderr := s.apply(t, "--stages", "1", "--dry-run")
	require.Equal(t, 1, code, stdout+stderr)
	assert.Contains(t, stderr, "is not signed as its policy requires, so nothing is applied:\n  GPUWorks: missing (no "+filepath.Join(s.baseline, "signatures", "GPUWorks.json")+": sat firmware sign --party GPUWorks)")
	code, stdout, stderr = sat(t, "firmware", "sign", "--contracts", exampleDir, "--baseline", s.baseline, "--party", "GPUWorks", "--key", key, "--allowed-signers", s.allowed)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "signed the firmware baseline "+s.baseline)
	return s
}

// startSlowSim is startSim with the site's physics stepped at 10 Hz,
// not 100: a rollout only waits on BMCs, and each stage advances the
// whole site by minutes of its time.
func startSlowSim(t *testing.T) (*sim.Opened, string) {
	t.Helper()
	dir := simConfig(t, `rate: "100 Hz"`, `rate: "10 Hz"`)
	o, diags, err := sim.Open(sim.Paths{Contracts: exampleDir, Fixtures: fixturesDir, Config: dir}, "", sim.SecretsFrom(func(string) (string, bool) { return "", false }), time.Time{}, nil)
	require.NoError(t, err)
	require.Empty(t, diags)
	require.NoError(t, o.Start())
	t.Cleanup(o.Close)
	cs, err := o.ServeControl("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return o, cs.URL()
}

// writeBaseline writes the example's baseline with each image made a
// simulated one (its component and version), and the NVLink switch
// trays' BIOS applied at their BMC's reset (the simulated switch tray
// has no host to reset).
func (s *fwSite) writeBaseline(t *testing.T) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(exampleDir, "firmware", "baseline.cue"))
	require.NoError(t, err)
	text := string(src)
	i := strings.Index(text, `"NVLink switch tray"`)
	j := strings.Index(text, `"33 kW power shelf"`)
	text = text[:i] + strings.ReplaceAll(text[i:j], `reset:      "system"`, `reset:      "manager"`) + text[j:]
	n := 0
	re := regexp.MustCompile(`image: \{uri: "[^"]*/([^/"]+)", sha256: "[0-9a-f]{64}"\}`)
	text = re.ReplaceAllStringFunc(text, func(m string) string {
		name := re.FindStringSubmatch(m)[1]
		comp, version := "bmc", ""
		switch {
		case strings.Contains(name, "bios"):
			comp, version = "bios", "1.5.0"
		case strings.Contains(name, "shelf"):
			comp, version = "shelf", "2.1.0"
		case strings.Contains(name, "switch"):
			version = "25.09-1"
		default:
			version = "25.09-2"
		}
		n++
		data := bmc.MakeImage(comp, version, 16<<10+n) // each image its own digest
		sum := sha256.Sum256(data)
		file := filepath.Join(s.images, strings.TrimSuffix(name, filepath.Ext(name))+"-"+strings.Repeat("x", n)+filepath.Ext(name))
		require.NoError(t, os.WriteFile(file, data, 0o644))
		return strings.Replace(m, m[strings.Index(m, `sha256: "`):], `sha256: "`+hex.EncodeToString(sum[:])+`"}`, 1)
	})
	require.Equal(t, 5, n)
	require.NoError(t, os.WriteFile(filepath.Join(s.baseline, "baseline.cue"), []byte(text), 0o644))
}

// apply runs sat firmware apply with args after the common ones.
func (s *fwSite) apply(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return sat(t, append([]string{"firmware", "apply", "--contracts", exampleDir, "--baseline", s.baseline, "--plan", s.plan,
		"--site", s.site, "--images", s.images, "--allowed-signers", s.allowed}, args...)...)
}

// updates are the stages' trays' update counts, by tray and component.
func (s *fwSite) updates(stages ...int) map[string]int {
	out := map[string]int{}
	for _, st := range s.p.Stages {
		for _, want := range stages {
			if st.Number != want {
				continue
			}
			for _, tp := range st.Trays {
				for m, n := range s.bmc(tp.Key).Updates() {
					out[tp.Key+" "+m[strings.LastIndexByte(m, '-')+1:]] += n
				}
			}
		}
	}
	return out
}

// bmc is the simulated BMC of a tray.
func (s *fwSite) bmc(tray string) *bmc.BMC {
	for _, e := range s.o.BMCs() {
		if e.Key == tray {
			return s.o.BMC(e.Name)
		}
	}
	return nil
}

// once is each of the stages' planned updates sent exactly once.
func (s *fwSite) once(stages ...int) map[string]int {
	out := map[string]int{}
	for _, st := range s.p.Stages {
		for _, want := range stages {
			if st.Number == want {
				for _, tp := range st.Trays {
					for _, u := range tp.Updates {
						out[tp.Key+" "+u.Component] = 1
					}
				}
			}
		}
	}
	return out
}

// The rollout of new BMC and host firmware to module ma on the simulated
// site (one site for the three parts: a simulated site and a discovery
// of 560 BMCs take seconds).
func TestFirmwareApplyOnTheSimulatedSite(t *testing.T) {
	s := newFWSite(t)
	key, trust := sshKey(t)
	t.Run("stage by stage", func(t *testing.T) { fwStageByStage(t, s, key, trust) })
	t.Run("a failed update stops the rollout", func(t *testing.T) { fwFailedStage(t, s, key, trust) })
	t.Run("kill -9 at random moments", func(t *testing.T) { fwKilled(t, s, key, trust) })
	t.Run("through Slurm", func(t *testing.T) { fwThroughSlurm(t, s, key) })
}

// Stage 16 (cut to three compute trays and a switch tray) through a real
// Slurm, a slurmd for each of its nodes: a job runs on one of them. The
// stage drains its nodes, waits for the job to end (it is not killed),
// updates the trays, and leaves its nodes drained by the burn-in hold,
// the reason naming it.
func fwThroughSlurm(t *testing.T, s *fwSite, key string) {
	plan, cut := s.cut(t, []int{16}, 3)
	var nodes []slurmtest.Node
	var names []string
	for _, n := range cut.p.Stages[15].Nodes {
		nodes = append(nodes, slurmtest.Node{Name: n.Name, Run: true})
		names = append(names, n.Name)
	}
	require.Len(t, nodes, 3)
	cl := slurmtest.Start(t, slurmtest.Config{Nodes: nodes})
	// srun allocates at once (sbatch waits for the scheduler's next pass)
	srun := exec.Command(peer.Need(t, "srun"), "-w", names[0], "sleep", "5")
	srun.Env = append(os.Environ(), cl.Env()...)
	require.NoError(t, srun.Start())
	t.Cleanup(func() { _ = srun.Wait() })
	var job string
	require.Eventually(t, func() bool {
		job = strings.TrimSpace(cl.Must("squeue", "-h", "-t", "R", "-w", names[0], "-o", "%i"))
		return job != ""
	}, time.Minute, 50*time.Millisecond, "srun's job runs on %s", names[0])
	code, stdout, stderr := sat(t, "firmware", "apply", "--contracts", exampleDir, "--baseline", s.baseline, "--plan", plan, "--site", s.site,
		"--images", s.images, "--allowed-signers", s.allowed, "--stages", "16", "--evidence", filepath.Join(t.TempDir(), "ev"), "--sign-key", key,
		"--scheduler", "slurm", "--slurm-conf", cl.Conf, "--jobs-deadline", "24h")
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "stage 16: firmware:"+s.p.Rollout+"-s16 holds 3 node(s) (3 drained, 0 drained already)")
	assert.Regexp(t, `stage 16: waiting up to 24h0m0s for 1 job\(s\) to leave its drained nodes: `+job+`@`+names[0], stdout)
	assert.Contains(t, stdout, "stage 16: the jobs have left its nodes after ")
	assert.Equal(t, cut.once(16), cut.updates(16))
	assert.Empty(t, strings.TrimSpace(cl.Must("squeue", "-h", "-j", job, "-o", "%T")), "the job ended by itself")
	for _, n := range names {
		show := cl.Must("scontrol", "show", "node", n)
		assert.Contains(t, show, "DRAIN", n)
		assert.Contains(t, show, "burnin:"+s.p.Rollout, "%s: its reason names the hold", n)
	}
}

// Stage 1 (the canary rack), the ledger kept in the lifecycle store and
// read all along: no moment holds more than the policy's one rack (18
// nodes) for a firmware stage, every updated node waits in the burn-in
// hold (a passing burn-in releases it: burnin/recorded's test of the
// gate), the versions read back are the baseline's, the evidence
// verifies. A dry run before writes nothing.
func fwStageByStage(t *testing.T, s *fwSite, key, trust string) {
	store, ops := importedStore(t)
	ev := filepath.Join(t.TempDir(), "ev")
	// the dry run: nothing written anywhere
	before, err := os.ReadFile(store)
	require.NoError(t, err)
	code, stdout, stderr := s.apply(t, "--stages", "1", "--dry-run", "--lifecycle", store)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "would POST ")
	assert.Contains(t, stdout, "would write to the ledger: hold firmware:"+s.p.Rollout+"-s01 on 18 node(s)")
	assert.Contains(t, stdout, "dry run: nothing was written")
	assert.Regexp(t, `baseline signed by GPUWorks \(key SHA256:\S+, 20\d\d-`, stdout)
	after, err := os.ReadFile(store)
	require.NoError(t, err)
	assert.Equal(t, before, after, "a dry run writes nothing to the store")
	assert.Empty(t, s.updates(1), "a dry run updates nothing")

	// the ledger read all along
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var worst int
	var seen []string
	wg.Go(func() {
		for ctx.Err() == nil {
			// opened anew each time: a read-only store reads what it opened
			var hs []lifecycle.Hold
			st, err := lifecycle.Open(ctx, lifecycle.Config{Store: store, LookupEnv: func(string) (string, bool) { return "", false }, DryRun: dryrun.New(nil, nil)})
			if err == nil {
				hs, err = st.Holds(ctx, "")
				st.Close()
			}
			if err != nil && ctx.Err() == nil {
				seen = append(seen, "read: "+err.Error())
			}
			if err == nil {
				byOwner := map[hold.Owner]int{}
				for _, h := range hs {
					if h.Owner.Kind() == hold.Firmware {
						byOwner[h.Owner]++
					}
				}
				n := 0
				for o, c := range byOwner {
					n += c
					seen = append(seen, string(o))
				}
				worst = max(worst, n)
				if len(byOwner) > 1 {
					worst = 1000 // two stages at once
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	code, stdout, stderr = s.apply(t, "--stages", "1", "--evidence", ev, "--sign-key", key, "--lifecycle", store, "--lifecycle-key", ops)
	cancel()
	wg.Wait()
	require.Equal(t, 0, code, stdout+stderr)
	assert.LessOrEqual(t, worst, 18, "no moment holds more than one rack's nodes for a firmware stage")
	assert.NotEmpty(t, seen, "the ledger was read while the stages held their nodes")
	for _, o := range seen {
		assert.True(t, strings.HasPrefix(o, "firmware:"+s.p.Rollout+"-s0"), o)
	}
	assert.Contains(t, stdout, "stage 1: passed: 18 node(s) updated, held burnin:"+s.p.Rollout+" until their burn-in")
	assert.Contains(t, stdout, "sat firmware apply: 1 stage(s), 27 tray(s), 54 update(s) sent; 18 node(s) wait for their burn-in")
	assert.Equal(t, s.once(1), s.updates(1))
	code, holds, stderr := sat(t, "lifecycle", "hold", "list", "--store", store, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var hs []lifecycle.Hold
	require.NoError(t, json.Unmarshal([]byte(holds), &hs))
	require.Len(t, hs, 18)
	for _, h := range hs {
		assert.Equal(t, hold.Owner("burnin:"+s.p.Rollout), h.Owner, h.Node)
	}
	code, stdout, stderr = sat(t, "verify", ev, "--trust", trust)
	require.Equal(t, 0, code, stdout+stderr)
	code, stdout, stderr = s.apply(t, "--stages", "1", "--resume", ev, "--sign-key", key)
	require.Equal(t, 0, code, stdout+stderr)
	assert.Contains(t, stdout, "the rollout finished already: nothing to do")
	assert.Equal(t, s.once(1), s.updates(1))

	// the versions read back are the baseline's: discover again
	code, disc, stderr := sat(t, "discover", "--site", s.site, "--racks", "ma/r01", "--format", "json")
	require.Equal(t, 2, code, "the versions differ from the handover's: findings\n%s", stderr)
	d, err := firmware.ParseDiscovery("discovery", []byte(disc))
	require.NoError(t, err)
	for _, st := range s.p.Stages[:1] {
		for _, tp := range st.Trays {
			for _, u := range tp.Updates {
				assert.Equal(t, u.To, d.Drift[tp.Key][u.Component], "%s %s reads back the baseline's version", tp.Key, u.Component)
			}
		}
	}
}

// A BMC whose update fails stops the rollout after its stage (2; 3 never
// starts), naming the node, component and step; after the repair
// --resume finishes it without sending any finished update again.
func fwFailedStage(t *testing.T, s *fwSite, key, trust string) {
	whole := s.plan
	plan, cut := s.cut(t, []int{2, 3}, 3)
	s = cut
	s.plan = plan
	bad := "ma/r02/compute-02"
	b := s.bmc(bad)
	require.NoError(t, b.SetFault(bmc.FaultUpdateFails, true))
	ev := filepath.Join(t.TempDir(), "ev")
	code, stdout, stderr := s.apply(t, "--stages", "2-3", "--evidence", ev, "--sign-key", key)
	require.Equal(t, 2, code, stdout+stderr)
	assert.Contains(t, stderr, "stage 2: 1 of 4 tray(s) failed, the rollout stops after this stage")
	assert.Regexp(t, `gpu-a-r02-n02 \(bmc-a-r02-n02\): bmc 25\.09-2, step task: `, stderr)
	assert.Contains(t, stdout, "continue it with --resume "+ev)
	assert.Empty(t, s.updates(3), "stage 3 never started")
	require.NoError(t, b.SetFault(bmc.FaultUpdateFails, false))
	sent := s.updates(2)
	code, _, stderr = sat(t, "firmware", "apply", "--contracts", exampleDir, "--baseline", s.baseline, "--plan", whole, "--site", s.site,
		"--images", s.images, "--allowed-signers", s.allowed, "--stages", "2-3", "--resume", ev)
	require.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "a rollout of another plan")
	assert.Equal(t, sent, s.updates(2), "refused before any update")
	code, stdout, stderr = s.apply(t, "--stages", "2-3", "--resume", ev, "--sign-key", key)
	require.Equal(t, 0, code, stdout+stderr)
	got := s.updates(2, 3)
	want := s.once(2, 3)
	want[bad+" bmc"] = 2 // the failed update, sent again after the repair
	assert.Equal(t, want, got)
	assert.Equal(t, 1, sent[bad+" bmc"])
	code, stdout, stderr = sat(t, "verify", ev, "--trust", trust)
	require.Equal(t, 0, code, stdout+stderr)
}

// kill -9 at 20 seeded random moments (SEAM_TEST_SEED replays them): a
// chain of runs of stages 4 to 6, each cut to three compute trays and a
// switch tray (so that a run is short), the first with --evidence and
// each after with --resume of the same bundle, the ledger in the
// lifecycle store; each killed a random while (under 400 ms) after it
// says it started (a chain that finishes first is followed by the next
// three stages, its kills sooner), and a last one left to finish. Every planned update was sent exactly
// once (the simulated BMCs count them), the stages' nodes wait in the
// burn-in hold and no firmware hold is left, and the bundle verifies.
func fwKilled(t *testing.T, s *fwSite, key, trust string) {
	bin := buildSat(t)
	store, ops := importedStore(t)
	stages := make([]int, 0, 12)
	for n := 4; n <= 15; n++ {
		stages = append(stages, n)
	}
	plan, cut := s.cut(t, stages, 3)
	seed := uint64(time.Now().UnixNano())
	if v, ok := os.LookupEnv("SEAM_TEST_SEED"); ok {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (SEAM_TEST_SEED=%d replays it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 39))
	var printed strings.Builder
	// a chain is a rollout of three stages: its first run writes the
	// bundle, each after resumes it; a chain that finishes before 20
	// kills is followed by the next three stages, its kills sooner
	chain, ev := 0, ""
	next := func() {
		chain++
		ev = filepath.Join(t.TempDir(), fmt.Sprintf("ev%d", chain))
	}
	next()
	run := func(kill time.Duration) error {
		first := 1 + 3*chain
		args := []string{"firmware", "apply", "--contracts", exampleDir, "--baseline", s.baseline, "--plan", plan, "--site", s.site,
			"--images", s.images, "--allowed-signers", s.allowed, "--sign-key", key, "--lifecycle", store, "--lifecycle-key", ops, "--stages", fmt.Sprintf("%d-%d", first, first+2)}
		if _, err := os.Stat(ev); err == nil {
			args = append(args, "--resume", ev)
		} else {
			args = append(args, "--evidence", ev)
		}
		p := startSat(t, bin, "images served at ", args...)
		var err error
		select {
		case err = <-p.exited:
		case <-p.ready:
			if kill == 0 {
				err = <-p.exited
			} else {
				_, err = p.killAfter(kill)
			}
		}
		printed.WriteString(p.output())
		return err
	}
	kills, bundles, window := 0, []string{ev}, 400*time.Millisecond
	for kills < 20 {
		err := run(time.Duration(1 + rng.Int64N(int64(window))))
		if err == nil { // finished before its kill: the next chain
			require.Less(t, chain, 4, "seed %d: four chains finished before 20 kills", seed)
			next()
			bundles = append(bundles, ev)
			window = window * 2 / 3
			continue
		}
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, printed.String())
		require.Equal(t, -1, ee.ExitCode(), "killed, not failed (seed %d):\n%s", seed, printed.String())
		kills++
	}
	require.NoError(t, run(0), "seed %d:\n%s", seed, printed.String())
	t.Logf("%d kills over %d chain(s)", kills, chain)
	done := stages[:3*chain]
	assert.Equal(t, cut.once(done...), cut.updates(done...), "every update sent exactly once (seed %d)\n%s", seed, printed.String())
	code, holds, stderr := sat(t, "lifecycle", "hold", "list", "--store", store, "--format", "json")
	require.Equal(t, 0, code, stderr)
	var hs []lifecycle.Hold
	require.NoError(t, json.Unmarshal([]byte(holds), &hs))
	for _, h := range hs {
		assert.Equal(t, hold.Owner("burnin:"+s.p.Rollout), h.Owner, h.Node)
	}
	assert.Len(t, hs, len(done)*3, "each stage's three nodes wait for their burn-in")
	for _, b := range bundles {
		code, stdout, stderr := sat(t, "verify", b, "--trust", trust)
		require.Equal(t, 0, code, stdout+stderr)
	}
}

// cut writes the plan with only the stages given, each cut to its first
// n compute trays and first switch tray (their nodes and holds with
// them).
func (s *fwSite) cut(t *testing.T, stages []int, n int) (string, *fwSite) {
	t.Helper()
	p, _, err := firmware.ReadPlan(s.plan)
	require.NoError(t, err)
	for _, st := range p.Stages {
		if !slices.Contains(stages, st.Number) {
			continue
		}
		var trays []*firmware.TrayPlan
		keep := map[string]bool{}
		compute, sw := 0, 0
		for _, tp := range st.Trays {
			switch {
			case tp.Kind == "compute" && compute < n:
				compute++
			case tp.Kind != "compute" && sw < 1:
				sw++
			default:
				continue
			}
			trays = append(trays, tp)
			keep[tp.Key] = true
		}
		st.Trays = trays
		st.Nodes = slices.DeleteFunc(st.Nodes, func(sn firmware.StageNode) bool { return !keep[sn.Key] })
		for i := range st.Holds {
			st.Holds[i].Nodes = slices.DeleteFunc(st.Holds[i].Nodes, func(k string) bool { return !keep[k] })
		}
	}
	file := filepath.Join(t.TempDir(), "cut.json")
	f, err := os.Create(file)
	require.NoError(t, err)
	require.NoError(t, p.WriteJSON(f))
	require.NoError(t, f.Close())
	c := *s
	c.p = p
	return file, &c
}

// Bad flags are refused before anything is read, each naming what to
// give instead.
func TestFirmwareApplyBadFlags(t *testing.T) {
	base := []string{"firmware", "apply", "--contracts", exampleDir}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--site", "s", "--images", "i", "--evidence", "e"}, "--plan is required"},
		{[]string{"--plan", "p", "--images", "i", "--evidence", "e"}, "--site is required"},
		{[]string{"--plan", "p", "--site", "s", "--evidence", "e"}, "--images DIR is required"},
		{[]string{"--plan", "p", "--site", "s", "--images", "i"}, "give --evidence DIR (a new rollout) or --resume DIR"},
		{[]string{"--plan", "p", "--site", "s", "--images", "i", "--evidence", "e", "--resume", "e"}, "give --evidence DIR (a new rollout) or --resume DIR"},
		{[]string{"--plan", "p", "--site", "s", "--dry-run", "--evidence", "e"}, "--dry-run writes no evidence"},
		{[]string{"--plan", "p", "--site", "s", "--images", "i", "--evidence", "e", "--lifecycle", "x.db"}, "--lifecycle needs --lifecycle-key"},
		{[]string{"--plan", "p", "--site", "s", "--images", "i", "--evidence", "e", "--scheduler", "pbs"}, `--scheduler "pbs": slurm, kubernetes or none`},
		{[]string{"--plan", "p", "--site", "s", "--images", "i", "--evidence", "e", "--tls-cert", "c.pem"}, "give both --tls-cert and --tls-key"},
		{[]string{"--plan", "p", "--site", "s", "--images", "i", "--evidence", "e", "--stages", "3-1"}, `--stages: "3-1" is not a stage number or range`},
	} {
		code, _, stderr := sat(t, append(base, tc.args...)...)
		assert.Equal(t, 1, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

// What apply checks before it reads a BMC: a baseline changed since the
// plan, a baseline not signed as it is, an image missing from --images.
// Each is refused (exit 1), naming what to do; nothing is started.
func TestFirmwareApplyRefusesBeforeStarting(t *testing.T) {
	baseline := t.TempDir()
	src, err := os.ReadFile(filepath.Join(exampleDir, "firmware", "baseline.cue"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(baseline, "baseline.cue"), src, 0o644))
	key, pub := sshKey(t)
	text, err := os.ReadFile(pub)
	require.NoError(t, err)
	allowed := filepath.Join(t.TempDir(), "allowed_signers")
	require.NoError(t, os.WriteFile(allowed, []byte(`GPUWorks namespaces="seam-contract" `+string(text)), 0o644))
	plan := filepath.Join(t.TempDir(), "plan.json")
	code, _, stderr := sat(t, "firmware", "plan", "--contracts", exampleDir, "--baseline", baseline, "--discovery", exampleDiscovery(t, "", nil),
		"--module", "ma", "--format", "json", "-o", plan)
	require.Equal(t, 0, code, stderr)
	apply := func(extra ...string) (int, string) {
		code, _, stderr := sat(t, append([]string{"firmware", "apply", "--contracts", exampleDir, "--baseline", baseline, "--plan", plan,
			"--site", t.TempDir(), "--images", t.TempDir(), "--allowed-signers", allowed, "--evidence", filepath.Join(t.TempDir(), "ev")}, extra...)...)
		return code, stderr
	}

	code, stderr = apply()
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is not signed as its policy requires, so nothing is applied:\n  GPUWorks: missing")

	code, _, stderr = sat(t, "firmware", "sign", "--contracts", exampleDir, "--baseline", baseline, "--party", "GPUWorks", "--key", key, "--allowed-signers", allowed)
	require.Equal(t, 0, code, stderr)
	code, stderr = apply()
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "holds no file with the digest of 4 image(s) the plan needs: bmc 25.09-2 (sha256:9f8f3a9f")
	assert.Contains(t, stderr, "put the vendor's images there")

	// the baseline changed since the plan
	require.NoError(t, os.WriteFile(filepath.Join(baseline, "baseline.cue"), []byte(strings.Replace(string(src), `"2.1.0"`, `"2.1.1"`, 1)), 0o644))
	code, stderr = apply()
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the baseline changed since; make the plan again (sat firmware plan)")
}
