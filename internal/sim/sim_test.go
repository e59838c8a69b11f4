package sim

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/profile"
	"github.com/seamdc/seam/internal/sim/simconfig"
)

const (
	exampleDir  = "../../contracts/examples/threemodule"
	simDir      = "../../fixtures/sim/threemodule"
	profilesDir = "../../fixtures/profiles"
)

var (
	loadOnce sync.Once
	exC      *contract.Contracts
	exCfg    *simconfig.Config
	exSet    *profile.Set
	exErr    error
)

func loadExample() {
	var diags diag.List
	exC, diags, exErr = contract.Load(exampleDir)
	if exErr == nil && diags.Count(diag.Error) > 0 {
		exErr = errorsOf(diags)
		return
	}
	if exErr != nil {
		return
	}
	exCfg, diags, exErr = simconfig.Load(simDir)
	if exErr == nil && diags.Count(diag.Error) > 0 {
		exErr = errorsOf(diags)
		return
	}
	if exErr != nil {
		return
	}
	exSet, exErr = LoadProfiles(ProfileDirs(profilesDir, exCfg)...)
}

type diagErr diag.List

func (d diagErr) Error() string {
	s := ""
	for _, x := range d {
		s += x.Pos.String() + ": " + x.Message + "\n"
	}
	return s
}

func errorsOf(d diag.List) error { return diagErr(d) }

// exampleDevices is how many devices the example's sim config serves:
// 123 for the three cells, and the POI meter.
const exampleDevices = 123 + 1

// exampleChannels is how many channels the example's contracts have:
// 48 of the three cells, and the grid boundary's (the POI meter's
// power) once the example declares it.
func exampleChannels() int {
	n := 48
	for _, b := range exC.GridBoundaries() {
		n += len(b.Channels)
	}
	return n
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// example builds the example site with its devices (not served).
func example(t testing.TB, defect string) *Sim {
	t.Helper()
	loadOnce.Do(loadExample)
	require.NoError(t, exErr)
	s, err := New(Config{Contracts: exC, Sim: exCfg, Profiles: exSet, Defect: defect,
		Secrets: SecretsFrom(func(string) (string, bool) { return "", false }), Epoch: epoch})
	require.NoError(t, err)
	return s
}

func TestExampleSiteDevices(t *testing.T) {
	s := example(t, "")
	kinds := map[string]int{}
	for _, d := range s.Devices() {
		kinds[d.Profile().Name]++
	}
	assert.Equal(t, map[string]int{"generic-loadbank": 3, "generic-floor-pdu": 3, "ietf-ups": 6, "apc-rpdu2": 32,
		"raritan-px": 32, "servertech-sentry4": 32, "generic-loop-controller": 3, "generic-cdu-int16": 6,
		"generic-cdu-float32": 3, "generic-controls-link": 3, "generic-poi-meter": 1}, kinds)
	assert.Equal(t, exampleDevices, len(s.Devices()))
	assert.Equal(t, exampleChannels(), len(s.channels), "every channel of the three cells, and the grid's")
	assert.Len(t, s.banks, 3)
	_ = os.Getenv
}

func BenchmarkSiteStep(b *testing.B) {
	s := example(b, "")
	b.ResetTimer()
	for b.Loop() {
		s.Site.Step(100)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/sim-second")
}
