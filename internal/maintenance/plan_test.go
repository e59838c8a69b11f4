package maintenance

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

var update = flag.Bool("update", false, "rewrite golden files")

const example = "../../contracts/examples/threemodule"

var ex struct {
	once    sync.Once
	g       *inventory.Graph
	windows []Window
	err     error
}

// exampleSite is the worked example's graph and its maintenance
// calendar (operate.cue: loop l2 serviced, a UPS of p1).
func exampleSite(t testing.TB) (*inventory.Graph, []Window) {
	t.Helper()
	ex.once.Do(func() {
		c, diags, err := contract.Load(example)
		if err == nil && len(diags) > 0 {
			err = fmt.Errorf("the example does not load: %v", diags)
		}
		if err != nil {
			ex.err = err
			return
		}
		if _, ex.err = c.ReadInventory(nil); ex.err != nil {
			return
		}
		ex.g, _ = c.Graph()
		op, _ := c.Operate()
		for _, w := range op.Maintenance {
			ex.windows = append(ex.windows, Window{ID: w.ID, Target: w.Target.To, Description: w.Description, Start: w.Start,
				Duration: time.Duration(w.Duration.Canon * float64(time.Second)), DrainAhead: time.Duration(w.DrainAhead.Canon * float64(time.Second)),
				Where: w.Pos.String()})
		}
	})
	require.NoError(t, ex.err)
	return ex.g, ex.windows
}

// The example's calendar: loop l2's service stops module mb (288 nodes,
// 1152 GPUs of fd-b), reserved from 30 min before to the end; new work
// lands in fd-a and fd-c. A UPS of p1's 2N block stops nothing.
func TestExamplePlan(t *testing.T) {
	g, windows := exampleSite(t)
	require.Len(t, windows, 2)
	p, err := Build(g, windows)
	require.NoError(t, err)
	require.Len(t, p.Windows, 2)
	l2 := p.Windows[0]
	assert.Equal(t, "l2-cdu-service", l2.ID)
	assert.Equal(t, "module", l2.TargetKind)
	assert.Len(t, l2.Stops.Nodes, 288)
	assert.Equal(t, 1152, l2.Stops.GPUs)
	assert.Equal(t, []string{"fd-b"}, l2.Stops.Domains)
	assert.Equal(t, []string{"mb"}, l2.Stops.Modules)
	r := l2.Reservation
	require.NotNil(t, r)
	assert.Equal(t, "seam-l2-cdu-service", r.Name)
	assert.Equal(t, "gpu-b-r01-n[01-18],gpu-b-r02-n[01-18],gpu-b-r03-n[01-18],gpu-b-r04-n[01-18],gpu-b-r05-n[01-18],gpu-b-r06-n[01-18],gpu-b-r07-n[01-18],gpu-b-r08-n[01-18],gpu-b-r09-n[01-18],gpu-b-r10-n[01-18],gpu-b-r11-n[01-18],gpu-b-r12-n[01-18],gpu-b-r13-n[01-18],gpu-b-r14-n[01-18],gpu-b-r15-n[01-18],gpu-b-r16-n[01-18]", r.Hostlist,
		"Slurm's own form, one range a name")
	assert.Equal(t, "gpu-b-r[01-16]-n[01-18]", grid(r.Nodes), "for people")
	assert.Equal(t, time.Date(2027, 3, 14, 5, 30, 0, 0, time.UTC), r.Start.UTC())
	assert.Equal(t, 510, r.Minutes, "30 min ahead and 8 h")
	assert.Equal(t, []Capacity{{"fd-a", 288, 1152, 288}, {"fd-b", 0, 0, 288}, {"fd-c", 288, 1152, 288}}, l2.Running)
	assert.Equal(t, []string{"create", "reservation", "reservationname=seam-l2-cdu-service", "starttime=2027-03-14T05:30:00", "duration=510",
		"nodes=" + r.Hostlist, "flags=maint,ignore_jobs", "users=root"}, r.Args(time.UTC))

	ups := p.Windows[1]
	assert.Equal(t, "p1-ups-a-batteries", ups.ID)
	assert.Empty(t, ups.Stops.Nodes)
	assert.Nil(t, ups.Reservation, "a feed of a 2N block: nothing stops, nothing is reserved")
	assert.NotEmpty(t, ups.Degraded)

	var text, cmds bytes.Buffer
	require.NoError(t, Text(&text, p, time.UTC))
	golden(t, "plan.txt", text.String())
	require.NoError(t, Commands(&cmds, p, time.UTC))
	golden(t, "commands.txt", cmds.String())
}

// Two cooling loops serviced at once: each window's new work lands only
// in the domain both leave running.
func TestOverlappingWindows(t *testing.T) {
	g, _ := exampleSite(t)
	start := time.Date(2027, 5, 1, 6, 0, 0, 0, time.UTC)
	p, err := Build(g, []Window{
		{ID: "l1", Target: "l1/loop", Start: start, Duration: 4 * time.Hour},
		{ID: "l3", Target: "l3", Start: start.Add(2 * time.Hour), Duration: 4 * time.Hour},
		{ID: "later", Target: "l2", Start: start.Add(24 * time.Hour), Duration: time.Hour},
	})
	require.NoError(t, err)
	require.Len(t, p.Windows, 3)
	assert.Equal(t, []string{"l3"}, p.Windows[0].Overlaps)
	assert.Equal(t, []string{"l1"}, p.Windows[1].Overlaps)
	assert.Empty(t, p.Windows[2].Overlaps)
	assert.Equal(t, []Capacity{{"fd-a", 0, 0, 288}, {"fd-b", 288, 1152, 288}, {"fd-c", 0, 0, 288}}, p.Windows[0].Running)
	assert.Contains(t, p.Windows[0].Steps[2], "new work lands in fd-b: 1152 GPUs (with l3 on at the same time)")
}

// A window whose target the site does not have is refused, by name and
// place.
func TestBadWindow(t *testing.T) {
	g, _ := exampleSite(t)
	start := time.Date(2027, 5, 1, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		w    Window
		want string
	}{
		{Window{ID: "x", Target: "l9", Start: start, Duration: time.Hour, Where: "operate.cue:40:3"},
			`operate.cue:40:3: window x: no module or element "l9" in site threemodule`},
		{Window{ID: "x", Target: "l1", Start: start, Where: "operate.cue:40:3"}, "operate.cue:40:3: window x lasts 0s"},
		{Window{ID: "x", Target: "l1", Duration: time.Hour}, "window x has no start"},
	} {
		_, err := Build(g, []Window{c.w})
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/maintenance -update")
	assert.Equal(t, string(want), got)
}
