package alarm_test

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/inventory"
)

const example = "../../contracts/examples/threemodule"

func exampleIndex(t testing.TB) (*inventory.Graph, *alarm.Index) {
	t.Helper()
	c, diags, err := contract.Load(example)
	require.NoError(t, err)
	require.Empty(t, diags)
	hd, err := c.ReadInventory(nil)
	require.NoError(t, err)
	require.Empty(t, hd)
	g, gd := c.Graph()
	require.Empty(t, gd)
	return g, alarm.NewIndex(g)
}

// Every failure event of the schema's #Event maps to exactly one alarm
// type, and the design brief's severe set is the table's.
func TestVocabularyCoversTheSchema(t *testing.T) {
	src := string(schema.Files()["schema.cue"])
	m := regexp.MustCompile(`#Event:((?:\s*\|?\s*"[a-z_]+")+)`).FindStringSubmatch(src)
	require.NotNil(t, m, "#Event not found in the schema")
	events := regexp.MustCompile(`"([a-z_]+)"`).FindAllStringSubmatch(m[1], -1)
	require.GreaterOrEqual(t, len(events), 7)
	for _, e := range events {
		n := 0
		for _, d := range alarm.Defs {
			if slices.Contains(d.Events, e[1]) {
				n++
			}
		}
		assert.Equal(t, 1, n, "event %s must map to exactly one alarm type", e[1])
	}
	var severe []string
	for _, s := range alarm.SevereTypes() {
		severe = append(severe, string(s))
	}
	sort.Strings(severe)
	assert.Equal(t, []string{"cooling_redundancy_lost", "leak_detected", "ups_on_battery"}, severe)
	// every type has one Prometheus alert name, and every point name
	// maps to one type
	names, points := map[string]bool{}, map[string]bool{}
	for _, d := range alarm.Defs {
		require.NotEmpty(t, d.Alertname, d.Type)
		require.False(t, names[d.Alertname], "alertname %s twice", d.Alertname)
		names[d.Alertname] = true
		for _, p := range d.Points {
			require.False(t, points[p], "point %s twice", p)
			points[p] = true
		}
	}
	d, ok := alarm.ForPoint("l2/mb/alarm/redundancy-lost")
	require.True(t, ok)
	assert.Equal(t, alarm.CoolingRedundancyLost, d.Type)
	d, ok = alarm.ForEvent("pump_trip")
	require.True(t, ok)
	assert.Equal(t, alarm.PumpFault, d.Precursor)
}

func TestDomainSyntax(t *testing.T) {
	for in, want := range map[string]string{
		"cooling_loop=l2": "cooling_loop=l2", " loop = l2 ": "cooling_loop=l2", "block=p1": "power_block=p1", "feed=p1/a": "feed=p1/a",
	} {
		d, err := alarm.ParseDomain(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, d.String())
	}
	for _, bad := range []string{"l2", "pool=l2", "cooling_loop=", "cooling_loop=l 2", `module=mb"`} {
		_, err := alarm.ParseDomain(bad)
		assert.Error(t, err, bad)
	}
}

// Domains resolve to the nodes the inventory says they serve: a loop is
// every node cooled through its CDUs — the same nodes as inventory's
// own grouping by loop, block and feed.
func TestDomainNodes(t *testing.T) {
	g, ix := exampleIndex(t)
	assert.Equal(t, 864, ix.FleetSize())
	assert.Equal(t, 288, ix.LargestModule())
	l2, err := ix.Resolve("cooling_loop=l2")
	require.NoError(t, err)
	nodes := ix.Nodes(l2)
	require.Len(t, nodes, 288)
	assert.Equal(t, "gpu-b-r01-n01", nodes[0])
	assert.Equal(t, "gpu-b-r16-n18", nodes[287])
	for spelling, canon := range map[string]string{
		"cooling_loop=l2/loop": "cooling_loop=l2", "l2/loop": "cooling_loop=l2", "power_block=p1/block": "power_block=p1",
		"p1/block/a": "feed=p1/a", "cdu=l2/loop/cdu-1": "cdu=l2/cdu-1", "mb/r03": "rack=mb/r03", "module=mb": "module=mb",
	} {
		d, err := ix.Resolve(spelling)
		require.NoError(t, err, spelling)
		assert.Equal(t, canon, d.String(), spelling)
	}
	count := func(s string) int {
		d, err := ix.Resolve(s)
		require.NoError(t, err, s)
		return len(ix.Nodes(d))
	}
	assert.Equal(t, 288, count("module=mb"))
	assert.Equal(t, 288, count("module=l2"), "a cooling module: every node its loops cool")
	assert.Equal(t, 288, count("power_block=p2"))
	assert.Equal(t, 288, count("feed=p2/a"), "every rack is dual-corded: each feed reaches every node")
	assert.Equal(t, 288, count("cdu=l2/cdu-1"), "each CDU feeds every manifold of its loop")
	assert.Equal(t, 18, count("rack=mb/r03"))
	assert.Equal(t, 864, count("site=threemodule"))

	// the same as the inventory's own grouping
	for by, kind := range map[string]string{inventory.ByLoop: "cooling_loop", inventory.ByBlock: "power_block", inventory.ByFeed: "feed", inventory.ByRack: "rack"} {
		groups, err := inventory.NodesBy(g, by)
		require.NoError(t, err)
		for _, gr := range groups {
			d, err := ix.Resolve(kind + "=" + gr.Key)
			require.NoError(t, err, gr.Key)
			var names []string
			for _, id := range gr.Nodes {
				names = append(names, g.El(id).Names.Slurm)
			}
			sort.Strings(names)
			assert.Equal(t, names, ix.Nodes(d), "%s %s", by, gr.Key)
		}
	}
	_, err = ix.Resolve("cooling_loop=l9")
	require.ErrorContains(t, err, "unknown domain cooling_loop=l9: the inventory has no such cooling_loop (for example cooling_loop=l1, cooling_loop=l2, cooling_loop=l3)")
	_, err = ix.Resolve("ma/r01/compute-03")
	require.ErrorContains(t, err, "is a compute, not a domain")
	d, ok := ix.OfElement("l2/loop")
	require.True(t, ok)
	assert.Equal(t, "cooling_loop=l2", d.String())
}

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

func obs(src string, active bool, at time.Duration) alarm.Observation {
	return alarm.Observation{Type: alarm.CoolingRedundancyLost, Domain: alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}, Active: active,
		Kind: alarm.FromDevice, Source: src, At: t0.Add(at)}
}

// A storm of Alertmanager alerts for one alarm lists at most
// MaxAlertSources of them and counts the rest, in time linear in the
// alerts: the alarm stays active until the last alert resolves, and a
// device that says active keeps it so whatever the alerts say.
func TestStreamBoundsAlertSources(t *testing.T) {
	s := alarm.NewStream()
	alert := func(i int, active bool) alarm.Observation {
		o := obs(fmt.Sprintf("fp-%05d", i), active, time.Duration(i)*time.Millisecond)
		o.Kind = alarm.FromAlertmanager
		return o
	}
	const n = 20000
	for i := range n {
		ev := s.Observe(alert(i, true))
		if i == 0 {
			require.Equal(t, alarm.Raised, ev.Change)
		}
	}
	a, _ := s.Get(alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	assert.Len(t, a.Sources, alarm.MaxAlertSources)
	assert.Equal(t, n-alarm.MaxAlertSources, a.SourcesMore)
	require.Equal(t, alarm.Seen, s.Observe(obs("cdu-l2/redundancy-lost", true, time.Hour)).Change, "a device too")
	a, _ = s.Get(alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	assert.Contains(t, a.Sources, "device:cdu-l2/redundancy-lost", "a device is always listed")
	for i := range n {
		require.Equal(t, alarm.Seen, s.Observe(alert(n-1-i, false)).Change, "resolve %d of %d: the device still says active", i+1, n)
	}
	a, _ = s.Get(alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	assert.Equal(t, []string{"device:cdu-l2/redundancy-lost"}, a.Sources)
	assert.Zero(t, a.SourcesMore)
	assert.Equal(t, alarm.Cleared, s.Observe(obs("cdu-l2/redundancy-lost", false, 2*time.Hour)).Change)

	// alerts only: active until the last one resolves, whichever order
	for i := range n {
		s.Observe(alert(i, true))
	}
	for i := range n - 1 {
		require.Equal(t, alarm.Seen, s.Observe(alert(i, false)).Change, "resolve %d", i)
	}
	assert.Equal(t, alarm.Cleared, s.Observe(alert(n-1, false)).Change)
	// restored after a restart: listed and counted alike
	for i := range 100 {
		s.Observe(alert(i, true))
	}
	r := alarm.NewStream()
	r.Restore(s.Snapshot())
	for i := range 99 {
		require.Equal(t, alarm.Seen, r.Observe(alert(i, false)).Change)
	}
	assert.Equal(t, alarm.Cleared, r.Observe(alert(99, false)).Change)
}

// One alarm per (domain, type) over every source: active while any
// source says so, cleared when all have cleared; repeats change nothing.
func TestStreamDeduplicates(t *testing.T) {
	s := alarm.NewStream()
	assert.Equal(t, alarm.Seen, s.Observe(obs("cdu-l2/redundancy-lost", false, 0)).Change, "a clear of an alarm never seen")
	assert.Equal(t, alarm.Raised, s.Observe(obs("cdu-l2/redundancy-lost", true, time.Second)).Change)
	assert.Equal(t, alarm.Seen, s.Observe(obs("cdu-l2/redundancy-lost", true, 2*time.Second)).Change, "a repeat")
	tr := obs("10.0.0.5/1.3.6", true, 3*time.Second)
	tr.Kind = alarm.FromTrap
	assert.Equal(t, alarm.Seen, s.Observe(tr).Change, "another source of an active alarm")
	ev := s.Observe(obs("cdu-l2/redundancy-lost", false, 4*time.Second))
	assert.Equal(t, alarm.Seen, ev.Change, "the trap still says active")
	assert.Equal(t, []string{"trap:10.0.0.5/1.3.6"}, ev.Alarm.Sources)
	tr.Active, tr.At = false, t0.Add(5*time.Second)
	ev = s.Observe(tr)
	assert.Equal(t, alarm.Cleared, ev.Change)
	assert.Equal(t, t0.Add(5*time.Second), ev.Alarm.Cleared)
	assert.Equal(t, t0.Add(time.Second), ev.Alarm.FirstSeen)
	assert.Equal(t, t0.Add(3*time.Second), ev.Alarm.LastSeen)
	assert.Equal(t, alarm.Raised, s.Observe(obs("cdu-l2/redundancy-lost", true, 6*time.Second)).Change)
	a, ok := s.Get(alarm.CoolingRedundancyLost, alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"})
	require.True(t, ok)
	assert.Len(t, a.Raises, 2)
	assert.Equal(t, alarm.Severe, a.Severity)

	// restored after a restart, an alarm stays active until its source
	// says clear
	r := alarm.NewStream()
	r.Restore(s.Snapshot())
	assert.Equal(t, alarm.Seen, r.Observe(obs("cdu-l2/redundancy-lost", true, 7*time.Second)).Change)
	assert.Equal(t, alarm.Cleared, r.Observe(obs("cdu-l2/redundancy-lost", false, 8*time.Second)).Change)
}

// A heartbeat not heard within its timeout raises its alarm once;
// heard again, it clears. One never heard falls silent too.
func TestBeats(t *testing.T) {
	var got []alarm.Observation
	b := alarm.NewBeats(func(o alarm.Observation) { got = append(got, o) })
	mb := alarm.Domain{Kind: alarm.Module, Value: "mb"}
	require.NoError(t, b.Add(alarm.Heartbeat{Name: "ctl-mb", Type: alarm.ControllerSilent, Domain: mb, Timeout: 5 * time.Second}, t0))
	require.Error(t, b.Add(alarm.Heartbeat{Name: "ctl-mb", Type: alarm.ControllerSilent, Domain: mb, Timeout: time.Second}, t0))
	b.Check(t0.Add(4 * time.Second))
	assert.Empty(t, got)
	assert.False(t, b.Alive("ctl-mb"), "never heard is not alive")
	b.Check(t0.Add(6 * time.Second))
	require.Len(t, got, 1)
	assert.True(t, got[0].Active)
	assert.Contains(t, got[0].Detail, "never heard")
	b.Check(t0.Add(7 * time.Second))
	assert.Len(t, got, 1, "raised once")
	require.NoError(t, b.Beat("ctl-mb", t0.Add(8*time.Second)))
	require.Len(t, got, 2)
	assert.False(t, got[1].Active)
	assert.True(t, b.Alive("ctl-mb"))
	b.Check(t0.Add(14 * time.Second))
	require.Len(t, got, 3)
	assert.Contains(t, got[2].Detail, "not heard for 6s")
	require.ErrorContains(t, b.Beat("ctl-mx", t0), `unknown heartbeat "ctl-mx"`)
}

// A contract's alarm_within is a deadline: the precursor (a pump fault)
// without its alarm in time raises alarm_late; the alarm arriving late
// clears it; in time, nothing is raised.
func TestDeadlines(t *testing.T) {
	l2 := alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}
	s := alarm.NewStream()
	var late []alarm.Observation
	d := alarm.NewDeadlines([]alarm.Expectation{{Clause: `boundaries."l2-mb".failure."pump-trip"`, Event: "pump_trip", Precursor: alarm.PumpFault,
		Expect: alarm.CoolingRedundancyLost, Domain: l2, Within: 5 * time.Second}},
		func(t alarm.Type, dm alarm.Domain) bool { a, ok := s.Get(t, dm); return ok && a.Active },
		func(o alarm.Observation) { late = append(late, o) })
	feed := func(o alarm.Observation) { d.Observe(s.Observe(o)) }
	pump := func(active bool, at time.Duration) alarm.Observation {
		o := obs("cdu-l2/pump-fault", active, at)
		o.Type = alarm.PumpFault
		return o
	}
	// in time
	feed(pump(true, 0))
	feed(obs("cdu-l2/redundancy-lost", true, 2*time.Second))
	d.Check(t0.Add(10 * time.Second))
	assert.Empty(t, late)
	feed(pump(false, 11*time.Second))
	feed(obs("cdu-l2/redundancy-lost", false, 11*time.Second))
	// late
	feed(pump(true, 20*time.Second))
	d.Check(t0.Add(24 * time.Second))
	assert.Empty(t, late)
	d.Check(t0.Add(26 * time.Second))
	require.Len(t, late, 1)
	assert.Equal(t, alarm.AlarmLate, late[0].Type)
	assert.True(t, late[0].Active)
	assert.Contains(t, late[0].Detail, `no cooling_redundancy_lost yet: boundaries."l2-mb".failure."pump-trip" promises it within 5s`)
	feed(obs("cdu-l2/redundancy-lost", true, 30*time.Second))
	require.Len(t, late, 2)
	assert.False(t, late[1].Active)
}
