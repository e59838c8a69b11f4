package hold_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/seamdc/seam/internal/hold"
)

func TestOwners(t *testing.T) {
	for _, tc := range []struct {
		in, kind, tag, err string
	}{
		{"facility:cooling_redundancy_lost:cooling_loop=l2", "facility", "facility:cooling_redundancy_lost:l2", ""},
		{"maintenance:CHG-1234", "maintenance", "maintenance:CHG-1234", ""},
		{"firmware:bmc-2.4-stage-1", "firmware", "firmware:bmc-2.4-stage-1", ""},
		{"burnin:swap", "burnin", "burnin:swap", ""},
		{"facility-alarm:x", "", "", "kind one of facility, burnin, maintenance, rma, firmware, person"},
		{"person:", "", "", "want kind:name"},
		{"person:a,b", "", "", "no spaces, commas or semicolons"},
	} {
		o, err := hold.Parse(tc.in)
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		assert.NoError(t, err, tc.in)
		assert.Equal(t, tc.kind, o.Kind())
		assert.Equal(t, tc.tag, o.Tag())
	}
}

// The reason fits Slurm's length however many holds, facility holds
// first.
func TestReasonFits(t *testing.T) {
	var owners []hold.Owner
	for i := range 40 {
		owners = append(owners, hold.Owner(fmt.Sprintf("maintenance:CHG-%04d", i)))
	}
	owners = append(owners, "facility:cooling_redundancy_lost:cooling_loop=l2")
	r := hold.Reason(owners, 256)
	assert.LessOrEqual(t, len(r), 256)
	assert.True(t, strings.HasPrefix(r, "facility:cooling_redundancy_lost:l2 maintenance:CHG-0000"), r)
	assert.Contains(t, r, "more")
}

func TestDrained(t *testing.T) {
	swap := hold.Hold{Owner: hold.Swap}
	run := hold.Hold{Owner: "burnin:seam-burnin-ma", Reservation: "seam-burnin-ma"}
	leak := hold.Hold{Owner: "facility:leak_detected:cooling_loop=l2"}
	for _, tc := range []struct {
		holds  []hold.Hold
		reason string
		drain  bool
	}{
		{nil, "", false},
		{[]hold.Hold{swap}, "burnin:swap", true},
		{[]hold.Hold{swap, run}, "", false},
		{[]hold.Hold{swap, run, leak}, "facility:leak_detected:l2 burnin:seam-burnin-ma burnin:swap", true},
	} {
		r, d := hold.Drained(tc.holds, 256)
		assert.Equal(t, tc.reason, r)
		assert.Equal(t, tc.drain, d)
	}
}
