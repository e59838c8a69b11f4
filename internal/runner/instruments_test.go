package runner

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/results"
)

// The binding's instruments go into the results with their calibration
// on the run's day: one overdue is marked, not refused.
func TestInstrumentsAreRecorded(t *testing.T) { synctest.Test(t, testInstruments) }

func testInstruments(t *testing.T) {
	g := newRig(t)
	g.site.Binding.Devices[2].Instrument = &binding.Instrument{Make: "Fluke", Model: "1738", Serial: "FL-1738-0042", Calibrated: "1999-03-01", Due: "1999-12-31", Certificate: "cal/fl-0042.pdf"}
	g.site.Binding.Devices[1].Instrument = &binding.Instrument{Serial: "LB-0007", Calibrated: "1999-06-01", Due: "2000-06-01"}
	res, err := g.run(g.config())
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res.Outcome)
	assert.Equal(t, []results.Instrument{
		{Device: "lb-ma", Serial: "LB-0007", Calibrated: "1999-06-01", Due: "2000-06-01"},
		{Device: "pdu-p1", Make: "Fluke", Model: "1738", Serial: "FL-1738-0042", Calibrated: "1999-03-01", Due: "1999-12-31", Certificate: "cal/fl-0042.pdf", Overdue: true},
	}, res.Run.Instruments, "the rig's clock starts on 2000-01-01")
	back, err := results.Read(g.dir + "/results.json")
	require.NoError(t, err)
	assert.Equal(t, res.Run.Instruments, back.Run.Instruments, "results.json keeps them, schema-valid")
}

// The binding's ambient channels are read at every case's start; one
// that cannot be read says why, and the run goes on.
func TestAmbientIsReadAtEveryCase(t *testing.T) { synctest.Test(t, testAmbient) }

func testAmbient(t *testing.T) {
	g := newRig(t)
	g.site.Devices["amb"] = newMeter("amb", g.w, map[string]func() float64{"air-temp": func() float64 { return 23.5 }})
	b := g.site.Binding
	b.Devices = append([]*binding.Device{{Name: "amb"}}, b.Devices...)
	b.Channels = append(b.Channels, &binding.Channel{Name: "site/air-temp", DeviceName: "amb", PointName: "air-temp"})
	b.Ambient = []string{"site/air-temp", "site/humidity"}
	res, err := g.run(g.config())
	require.NoError(t, err)
	assert.Equal(t, results.Passed, res.Outcome)
	for _, c := range res.Cases {
		require.Len(t, c.Ambient, 2, c.ID)
		require.NotNil(t, c.Ambient[0].Value, c.ID)
		assert.Equal(t, 23.5, *c.Ambient[0].Value)
		assert.Equal(t, "site/humidity", c.Ambient[1].Channel)
		assert.Nil(t, c.Ambient[1].Value)
		assert.Contains(t, c.Ambient[1].Problem, "channel site/humidity is not bound")
	}
	rep, err := evidence.Verify(g.dir, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK(), rep.All())
}
