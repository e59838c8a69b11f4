package facilityd

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/hold"
)

// rackNodes names n nodes in each of racks r[from..to] of module m.
func rackNodes(m string, from, to, n int) []string {
	var out []string
	for r := from; r <= to; r++ {
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("gpu-%s-r%02d-n%02d", m, r, i))
		}
	}
	return out
}

// facilityd status: one line per hold, its racks folded; a refused drain
// with the whole command that approves it; a cleared alarm said to be
// cleared, its raising detail as what it was.
func TestStatusSaysWhatIs(t *testing.T) {
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	doc := &StatusDoc{Snapshot: drain.Snapshot{Site: "threemodule", At: at, AlarmPath: "ok",
		Holds: []*hold.Hold{
			{Owner: "facility:cooling_redundancy_lost:cooling_loop=l2", Nodes: rackNodes("b", 1, 16, 18), By: "facilityd", Placed: at},
			{Owner: "maintenance:w1", Nodes: rackNodes("a", 1, 1, 4), By: "ssh:alice", Placed: at},
		},
		Refused: []*drain.Refusal{{Owner: "facility:ups_on_battery:power_block=p1", Nodes: rackNodes("c", 1, 2, 18), At: at,
			Why: "draining 36 more nodes would make 324 drained"}},
		Alarms: []alarm.Alarm{
			{Type: "leak_detected", Domain: alarm.Domain{Kind: alarm.CoolingLoop, Value: "l1"}, Active: true, Detail: "leak sensor wet"},
			{Type: "pump_fault", Domain: alarm.Domain{Kind: alarm.CoolingLoop, Value: "l2"}, Active: false, Cleared: at, Detail: "pump 1 fault active"},
		}}}
	var b bytes.Buffer
	printStatus(&b, doc)
	out := b.String()
	assert.Contains(t, out, "\n  facility:cooling_redundancy_lost:cooling_loop=l2: 288 nodes gpu-b-r[01-16]-n[01-18] (by facilityd, 2026-12-05T12:00:00Z)\n")
	assert.Contains(t, out, "\n  maintenance:w1: 4 nodes gpu-a-r01-n[01-04] (by ssh:alice, 2026-12-05T12:00:00Z)\n")
	assert.Contains(t, out, "REFUSED facility:ups_on_battery:power_block=p1 (36 nodes gpu-c-r[01-02]-n[01-18]): draining 36 more nodes would make 324 drained\n"+
		"  to drain them: facilityd approve --action drain --owner facility:ups_on_battery:power_block=p1 --by NAME --key ~/.ssh/id_ed25519 --why WHY\n")
	assert.Contains(t, out, "  ACTIVE  leak_detected")
	assert.Contains(t, out, "  cleared pump_fault")
	assert.Contains(t, out, "at 2026-12-05T12:00:00Z (was: pump 1 fault active)\n")
	// the word "clear" never stands beside a state of active
	assert.NotContains(t, out, "clear  pump_fault")
	assert.NotRegexp(t, `(?m)^  clear .*active$`, out)
}
