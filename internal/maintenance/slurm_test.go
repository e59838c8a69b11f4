package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/peer/slurmtest"
	"github.com/seamdc/seam/internal/scheduler"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

// fakeSlurm keeps reservations as scontrol would, and a list of jobs;
// it records every command. mangle, when set, changes what a create or
// update stores (a controller that does not do what it was told).
type fakeSlurm struct {
	res    map[string]string // name → scontrol -o show reservation line
	jobs   []string
	ran    [][]string
	mangle func(kv map[string]string)
}

func (f *fakeSlurm) Scontrol(_ context.Context, args ...string) ([]byte, error) {
	f.ran = append(f.ran, args)
	switch {
	case slices.Equal(args, []string{"-o", "show", "reservation"}):
		if len(f.res) == 0 {
			return []byte("No reservations in the system\n"), nil
		}
		var lines []string
		for _, name := range sortedKeys(f.res) {
			lines = append(lines, f.res[name])
		}
		return []byte(strings.Join(lines, "\n") + "\n"), nil
	case slices.Equal(args, []string{"-o", "show", "jobs"}):
		if len(f.jobs) == 0 {
			return []byte("No jobs in the system\n"), nil
		}
		return []byte(strings.Join(f.jobs, "\n") + "\n"), nil
	case len(args) > 2 && args[0] == "create" && args[1] == "reservation":
		f.store(args[2:], "")
		return []byte("Reservation created: x\n"), nil
	case len(args) > 1 && args[0] == "update":
		f.store(args[1:], "update")
		return []byte("Reservation updated.\n"), nil
	}
	return nil, fmt.Errorf("fake scontrol: %v", args)
}

func (f *fakeSlurm) store(args []string, how string) {
	kv := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		kv[k] = v
	}
	if f.mangle != nil {
		f.mangle(kv)
	}
	start, _ := time.ParseInLocation(slurmTime, kv["starttime"], time.UTC)
	var minutes int
	fmt.Sscan(kv["duration"], &minutes)
	flags := strings.ToUpper(kv["flags"])
	if how == "update" {
		line, _ := scheduler.ParseKV(f.res[kv["reservationname"]])
		flags = line.Get("Flags")
	}
	f.res[kv["reservationname"]] = fmt.Sprintf("ReservationName=%s StartTime=%s EndTime=%s Duration=x Nodes=%s NodeCnt=1 Flags=%s,SPEC_NODES State=INACTIVE",
		kv["reservationname"], start.Format(slurmTime), start.Add(time.Duration(minutes)*time.Minute).Format(slurmTime), kv["nodes"], flags)
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func examplePlan(t *testing.T) Plan {
	t.Helper()
	g, windows := exampleSite(t)
	p, err := Build(g, windows)
	require.NoError(t, err)
	return p
}

// Apply creates what is missing, leaves what matches, updates what
// differs, skips what is over, names seam's reservations no window
// plans, and lists the running jobs that cross a window.
func TestApplyAgainstAFake(t *testing.T) {
	p := examplePlan(t)
	now := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSlurm{res: map[string]string{
		"seam-old": "ReservationName=seam-old StartTime=2027-01-01T00:00:00 EndTime=2027-01-01T01:00:00 Nodes=gpu-a-r01-n01 Flags=MAINT State=INACTIVE",
		"theirs":   "ReservationName=theirs StartTime=2027-01-01T00:00:00 EndTime=2027-01-01T01:00:00 Nodes=gpu-a-r01-n01 Flags=MAINT State=INACTIVE",
	}, jobs: []string{
		"JobId=7 JobName=pretrain UserId=alice(1000) JobState=RUNNING EndTime=2027-03-14T09:00:00 NodeList=gpu-b-r03-n[01-18]",
		"JobId=8 JobName=short UserId=bob(1001) JobState=RUNNING EndTime=2027-03-14T05:00:00 NodeList=gpu-b-r04-n01",
		"JobId=9 JobName=elsewhere UserId=bob(1001) JobState=RUNNING EndTime=2027-03-14T09:00:00 NodeList=gpu-a-r04-n01",
		"JobId=10 JobName=queued UserId=bob(1001) JobState=PENDING EndTime=Unknown NodeList=(null)",
	}}
	o := ApplyOptions{Now: now, Location: time.UTC}
	res, err := Apply(context.Background(), f, p, o)
	require.NoError(t, err)
	require.Len(t, res.Applied, 1, "the UPS window reserves nothing")
	a := res.Applied[0]
	assert.Equal(t, Created, a.Action)
	require.NotNil(t, a.Slurm)
	assert.Len(t, a.Slurm.Nodes, 288)
	assert.Equal(t, time.Date(2027, 3, 14, 5, 30, 0, 0, time.UTC), a.Slurm.Start)
	require.Len(t, a.Crossing, 1, "job 8 ends before 05:30, job 9 is in ma, job 10 is not running")
	assert.Equal(t, "7", a.Crossing[0].ID)
	assert.Equal(t, []string{"seam-old"}, res.Stale)
	assert.Equal(t, 1, res.Crossing())

	// again: nothing to do
	f.ran = nil
	res, err = Apply(context.Background(), f, p, o)
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res.Applied[0].Action)
	for _, c := range f.ran {
		assert.Equal(t, "show", c[1], "only reads: %v", c)
	}

	// the window grows by an hour: updated, and read back so
	p.Windows[0].Reservation.Minutes += 60
	p.Windows[0].Reservation.Duration += time.Hour
	res, err = Apply(context.Background(), f, p, o)
	require.NoError(t, err)
	assert.Equal(t, Updated, res.Applied[0].Action)
	assert.Equal(t, time.Date(2027, 3, 14, 15, 0, 0, 0, time.UTC), res.Applied[0].Slurm.End)

	// a dry run says what it would do and does nothing
	p.Windows[0].Reservation.Minutes -= 60
	p.Windows[0].Reservation.Duration -= time.Hour
	f.ran = nil
	dry := o
	dry.DryRun = true
	res, err = Apply(context.Background(), f, p, dry)
	require.NoError(t, err)
	assert.Equal(t, WouldEdit, res.Applied[0].Action)
	assert.Len(t, f.ran, 2, "two reads")

	// after the window: past, nothing run
	res, err = Apply(context.Background(), f, p, ApplyOptions{Now: now.AddDate(0, 1, 0), Location: time.UTC})
	require.NoError(t, err)
	assert.Equal(t, Past, res.Applied[0].Action)
}

// A controller that stores something else than it was told is caught
// on read-back, with what it holds.
func TestApplyChecksTheReadBack(t *testing.T) {
	p := examplePlan(t)
	f := &fakeSlurm{res: map[string]string{}, mangle: func(kv map[string]string) { kv["nodes"] = "gpu-b-r01-n01" }}
	_, err := Apply(context.Background(), f, p, ApplyOptions{Now: time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC), Location: time.UTC})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reservation seam-l2-cdu-service for window l2-cdu-service: Slurm reads back nodes gpu-b-r01-n01, not gpu-b-r01-n[01-18],")
	assert.Contains(t, err.Error(), "scontrol delete reservation seam-l2-cdu-service")
}

type failing struct{}

func (failing) Scontrol(context.Context, ...string) ([]byte, error) {
	return nil, errors.New("scontrol -o show reservation: exit status 1: slurm_load_reservations error: Unable to contact slurm controller (connect failure)")
}

func TestApplyNamesTheController(t *testing.T) {
	_, err := Apply(context.Background(), failing{}, examplePlan(t), ApplyOptions{})
	require.Error(t, err)
	assert.Equal(t, "reading Slurm's reservations: scontrol -o show reservation: exit status 1: slurm_load_reservations error: Unable to contact slurm controller (connect failure)", err.Error())
}

// The real Slurm (22.05 here): the example's 864 nodes, slurmds for one
// node of mb and one of mc. A window on loop l2 starts 40 min from now
// with 10 min drained ahead: seam makes the maintenance reservation of
// mb's 288 nodes while a job already runs on one of them past its start
// (flags ignore_jobs), lists that job, and scontrol show reservation
// reads back what was planned; applying again changes nothing. With the
// job gone: a job that may run anywhere lands in mc although mb's node
// comes first; a job on mb's node that would run into the window is
// held; one that ends before it runs (backfill).
func TestSlurmMaintenanceReservation(t *testing.T) {
	g, _ := exampleSite(t)
	run := map[string]bool{"gpu-b-r01-n01": true, "gpu-c-r01-n01": true}
	var nodes []slurmtest.Node
	for _, n := range g.OfKind(inventory.KindCompute) {
		name := g.El(n).Names.Slurm
		nodes = append(nodes, slurmtest.Node{Name: name, Run: run[name]})
	}
	c := slurmtest.Start(t, slurmtest.Config{Nodes: nodes, Extra: []string{"SchedulerParameters=bf_interval=1"}})
	s := c.Slurm()

	crossing := sbatch(t, c, "-w", "gpu-b-r01-n01", "--time=120")
	waitJob(t, c, crossing, "RUNNING", "")

	start := time.Now().Add(40 * time.Minute).Truncate(time.Minute)
	p, err := Build(g, []Window{{ID: "l2-test", Target: "l2", Start: start, Duration: 2 * time.Hour, DrainAhead: 10 * time.Minute}})
	require.NoError(t, err)
	o := ApplyOptions{Location: time.Local}
	res, err := Apply(context.Background(), s, p, o)
	require.NoError(t, err)
	require.Len(t, res.Applied, 1)
	a := res.Applied[0]
	assert.Equal(t, Created, a.Action)
	require.Len(t, a.Crossing, 1)
	assert.Equal(t, crossing, a.Crossing[0].ID)

	show := c.Must("scontrol", "-o", "show", "reservation", "seam-l2-test")
	t.Logf("scontrol -o show reservation seam-l2-test:\n%s", show)
	f, err := scheduler.ParseKV(show)
	require.NoError(t, err)
	assert.Equal(t, "MAINT,IGNORE_JOBS,SPEC_NODES", f.Get("Flags"))
	assert.Equal(t, start.Add(-10*time.Minute).Format(slurmTime), f.Get("StartTime"))
	assert.Equal(t, start.Add(2*time.Hour).Format(slurmTime), f.Get("EndTime"))
	assert.Equal(t, "root", f.Get("Users"))
	got, err := hostlist.Expand(f.Get("Nodes"))
	require.NoError(t, err)
	slices.Sort(got)
	assert.Equal(t, p.Windows[0].Stops.Nodes, got, "mb's 288 nodes")

	res, err = Apply(context.Background(), s, p, o)
	require.NoError(t, err)
	assert.Equal(t, Unchanged, res.Applied[0].Action)

	c.Must("scancel", crossing)
	waitGone(t, c, crossing)

	anywhere := sbatch(t, c, "--nodes=1", "--time=60")
	assert.Equal(t, "gpu-c-r01-n01", waitJob(t, c, anywhere, "RUNNING", ""), "not on mb's reserved node")
	held := sbatch(t, c, "-w", "gpu-b-r01-n01", "--time=60")
	waitJob(t, c, held, "PENDING", "ReqNodeNotAvail")
	short := sbatch(t, c, "-w", "gpu-b-r01-n01", "--time=10")
	assert.Equal(t, "gpu-b-r01-n01", waitJob(t, c, short, "RUNNING", ""), "ends 20 min before the reservation: backfill runs it")
	assert.Contains(t, c.Must("squeue", "-h", "-j", held, "-o", "%T %r"), "PENDING ReqNodeNotAvail")

	// a window on already (loop l1, since 10 min): reserved from the next
	// minute to its end; the l2 window's reservation is left as it is
	now := time.Now()
	p, err = Build(g, []Window{{ID: "l2-test", Target: "l2", Start: start, Duration: 2 * time.Hour, DrainAhead: 10 * time.Minute},
		{ID: "l1-now", Target: "l1", Start: now.Add(-10 * time.Minute).Truncate(time.Minute), Duration: time.Hour}})
	require.NoError(t, err)
	res, err = Apply(context.Background(), s, p, ApplyOptions{Location: time.Local, Now: now})
	require.NoError(t, err)
	require.Len(t, res.Applied, 2)
	assert.Equal(t, "l1-now", res.Applied[0].Window)
	assert.Equal(t, Created, res.Applied[0].Action)
	assert.Equal(t, now.Truncate(time.Minute).Add(time.Minute).Format(slurmTime), res.Applied[0].Slurm.Start.Format(slurmTime))
	assert.Equal(t, p.Windows[0].End.Format(slurmTime), res.Applied[0].Slurm.End.Format(slurmTime))
	assert.Equal(t, Unchanged, res.Applied[1].Action)
}

func sbatch(t *testing.T, c *slurmtest.Cluster, args ...string) string {
	t.Helper()
	args = append([]string{"--parsable", "--output=/dev/null"}, args...)
	return strings.TrimSpace(c.Must("sbatch", append(args, "--wrap", "sleep 3600")...))
}

// waitJob waits until job is in state (with a reason containing reason)
// and returns its nodes.
func waitJob(t *testing.T, c *slurmtest.Cluster, job, state, reason string) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		last = strings.TrimSpace(c.Must("squeue", "-h", "-j", job, "-o", "%T|%N|%r"))
		f := strings.SplitN(last, "|", 3)
		if len(f) == 3 && f[0] == state && strings.Contains(f[2], reason) {
			return f[1]
		}
	}
	t.Fatalf("job %s is not %s (%s): %s", job, state, reason, last)
	return ""
}

func waitGone(t *testing.T, c *slurmtest.Cluster, job string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		out, err := c.Run("squeue", "-h", "-j", job, "-o", "%T")
		if err != nil || strings.TrimSpace(out) == "" {
			return
		}
	}
	t.Fatalf("job %s does not end", job)
}
