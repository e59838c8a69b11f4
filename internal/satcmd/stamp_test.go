package satcmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/plan"
	"github.com/seamdc/seam/internal/tsa/tsatest"
)

// stampRecords are a bundle's stamp records, by the seal they stamp,
// and its seal records' seqs.
func stampRecords(t *testing.T, dir string) (map[int64]evidence.StampData, []int64) {
	t.Helper()
	stamps, seals := map[int64]evidence.StampData{}, []int64(nil)
	for _, r := range journal(t, dir) {
		switch r.Kind {
		case evidence.KindStamp:
			var sd evidence.StampData
			require.NoError(t, json.Unmarshal(r.Data, &sd))
			stamps[sd.Seal] = sd
		case evidence.KindSeal:
			seals = append(seals, r.Seq)
		}
	}
	return stamps, seals
}

func writeRoots(t testing.TB, pem []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "roots.pem")
	require.NoError(t, os.WriteFile(path, pem, 0o644))
	return path
}

// A signed run with --time-stamp-url stamps its seals in the background
// (the last one, which ends the run, too) with a real RFC 3161 authority;
// verify checks every stamp offline against the site's roots and says
// the newest seal a stamp covers. The same bundle verified against
// another authority's roots is refused: its stamps are not from an
// authority the site trusts. Without roots, the stamps are present but
// unverified.
func TestRunTimeStampsItsSeals(t *testing.T) {
	site, other := tsatest.Start(t, "site TSA"), tsatest.Start(t, "other TSA")
	siteRoots, otherRoots := writeRoots(t, site.RootPEM), writeRoots(t, other.RootPEM)
	key, trust := sshKey(t)
	dir := filepath.Join(t.TempDir(), "ev")
	code, _, out := simRun(t, examplePlan(t, plan.SAT), dir, "--sign-key", key, "--time-stamp-url", site.URL, "--time-stamp-roots", siteRoots)
	require.Equal(t, 0, code, out)
	stamps, seals := stampRecords(t, dir)
	require.NotEmpty(t, stamps)
	last := seals[len(seals)-1]
	assert.Contains(t, stamps, last, "the seal that ends the run is stamped before the manifest")
	assert.LessOrEqual(t, site.Requests.Load(), int64(len(seals)), "at most one stamp a seal")

	code, vout, _ := sat(t, "verify", dir, "--trust", trust, "--time-stamp-roots", siteRoots)
	require.Equal(t, 0, code, vout)
	assert.Regexp(t, fmt.Sprintf(`time-stamped: seal record %d \(up to record \d+\) at \S+ by \S.*site TSA time-stamping.*\n`, last), vout)
	assert.NotContains(t, vout, "no time-stamp")

	code, vout, _ = sat(t, "verify", dir, "--trust", trust)
	require.Equal(t, 0, code, vout)
	assert.Contains(t, vout, fmt.Sprintf("time-stamps: %d present, not verified (give --time-stamp-roots FILE)\n", len(stamps)))

	code, vout, _ = sat(t, "verify", dir, "--trust", trust, "--time-stamp-roots", otherRoots)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, "which is not an authority the site trusts")
	assert.Contains(t, vout, "time-stamped: no seal has a verified time-stamp")

	// a stamp moved onto another seal is of other bytes
	tampered := filepath.Join(t.TempDir(), "moved")
	require.NoError(t, os.CopyFS(tampered, os.DirFS(dir)))
	moveStamp(t, tampered, seals)
	code, vout, _ = sat(t, "verify", tampered, "--time-stamp-roots", siteRoots)
	assert.Equal(t, 2, code, vout)
	assert.Contains(t, vout, "the stamp is of other bytes")
}

// moveStamp points the first stamp record at another seal and chains
// the journal again, as anyone can (the chain is keyless).
func moveStamp(t *testing.T, dir string, seals []int64) {
	t.Helper()
	recs := journal(t, dir)
	var buf []byte
	moved := false
	prev := evidence.Genesis
	for _, r := range recs {
		if r.Kind == evidence.KindStamp && !moved {
			var sd evidence.StampData
			require.NoError(t, json.Unmarshal(r.Data, &sd))
			for _, s := range seals {
				if s != sd.Seal && s < r.Seq {
					sd.Seal = s
					moved = true
					break
				}
			}
			raw, err := json.Marshal(sd)
			require.NoError(t, err)
			r.Data = raw
		}
		r.Prev = prev
		line, err := evidence.EncodeRecord(&r)
		require.NoError(t, err)
		prev = r.Hash
		buf = append(buf, line...)
	}
	require.True(t, moved)
	require.NoError(t, os.WriteFile(filepath.Join(dir, evidence.JournalFile), buf, 0o644))
}

// An authority that goes down during the run (after its first stamp)
// neither fails nor slows it: no seal waits for a stamp, and verify says
// the newest seal a stamp covers and names the seals after it that no
// stamp covers. One down from the start leaves every seal unstamped.
func TestRunTimeStampOutage(t *testing.T) {
	for _, from := range []string{"during", "start"} {
		t.Run(from, func(t *testing.T) {
			site := tsatest.Start(t, "site TSA")
			roots := writeRoots(t, site.RootPEM)
			if from == "start" {
				site.Down.Store(true)
			} else {
				done := make(chan struct{})
				defer close(done)
				go func() {
					for site.Requests.Load() == 0 {
						select {
						case <-done:
							return
						case <-time.After(time.Millisecond):
						}
					}
					site.Down.Store(true)
				}()
			}
			key, trust := sshKey(t)
			dir := filepath.Join(t.TempDir(), "ev")
			start := time.Now()
			code, _, out := simRun(t, examplePlan(t, plan.SAT), dir, "--sign-key", key, "--time-stamp-url", site.URL, "--time-stamp-roots", roots)
			require.Equal(t, 0, code, out)
			t.Logf("run with the authority down from the %s: %v", from, time.Since(start))
			stamps, seals := stampRecords(t, dir)
			code, vout, _ := sat(t, "verify", dir, "--trust", trust, "--time-stamp-roots", roots)
			require.Equal(t, 0, code, "an outage is no problem of the bundle:\n%s", vout)
			if from == "start" {
				assert.Empty(t, stamps)
				assert.Contains(t, vout, fmt.Sprintf("time-stamped: no seal has a verified time-stamp; %d seal(s) after it have no time-stamp: seal record(s) %d, ", len(seals), seals[0]))
				return
			}
			require.NotEmpty(t, stamps, "the first stamp came before the outage")
			assert.NotContains(t, stamps, seals[len(seals)-1], "the authority was down at the end")
			newest := int64(0)
			for s := range stamps {
				newest = max(newest, s)
			}
			unstamped := 0
			for _, s := range seals {
				if s > newest {
					unstamped++
				}
			}
			assert.Regexp(t, fmt.Sprintf(`time-stamped: seal record %d \(up to record \d+\) at \S+ by .*; %d seal\(s\) after it have no time-stamp: seal record\(s\) [0-9, ]+`, newest, unstamped), vout)
		})
	}
}

// --time-stamp-url and --time-stamp-roots come together, on a signed run.
func TestRunTimeStampFlags(t *testing.T) {
	p := examplePlan(t, plan.SAT)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--sign-key", "k", "--time-stamp-url", "http://127.0.0.1:1/tsr"}, "--time-stamp-url needs --time-stamp-roots FILE"},
		{[]string{"--sign-key", "k", "--time-stamp-roots", "r.pem"}, "--time-stamp-roots needs --time-stamp-url URL"},
		{[]string{"--time-stamp-url", "http://127.0.0.1:1/tsr", "--time-stamp-roots", "r.pem"}, "--time-stamp-url stamps the bundle's seals: give --sign-key KEY"},
	} {
		args := append([]string{"run", p, "--sim", "--out", filepath.Join(t.TempDir(), "ev")}, c.args...)
		code, _, errOut := sat(t, args...)
		assert.Equal(t, 1, code, errOut)
		assert.Contains(t, errOut, c.want, strings.Join(c.args, " "))
	}
}

// BenchmarkRunTimeStamps is a signed sat run --sim --time-scale max of
// the example SAT plan without and with stamping its seals (openssl's
// authority on loopback, on the same CPUs), alternated on one machine
// (docs/sat-run.md, Figures). Goal: with stamping within 2 % of without.
//
//	go test -run '^$' -bench RunTimeStamps -benchtime 8x ./internal/satcmd
func BenchmarkRunTimeStamps(b *testing.B) {
	site := tsatest.Start(b, "site TSA")
	roots := writeRoots(b, site.RootPEM)
	key, _ := sshKey(b)
	p := examplePlan(b, plan.SAT)
	// wall time, and this process's CPU (the run's; not the authority's
	// openssl, a child process, which on a site runs elsewhere)
	var plain, stamped, plainCPU, stampedCPU time.Duration
	n := 0
	for b.Loop() {
		for _, stamp := range []bool{false, true} {
			extra := []string{"--sign-key", key}
			if stamp {
				extra = append(extra, "--time-stamp-url", site.URL, "--time-stamp-roots", roots)
			}
			start, cpu0 := time.Now(), selfCPU()
			code, _, out := simRun(b, p, filepath.Join(b.TempDir(), "ev"), extra...)
			d, cpu := time.Since(start), selfCPU()-cpu0
			if code != 0 {
				b.Fatalf("sat run: exit %d\n%s", code, out)
			}
			if stamp {
				stamped += d
				stampedCPU += cpu
			} else {
				plain += d
				plainCPU += cpu
			}
		}
		n++
	}
	b.ReportMetric(plain.Seconds()/float64(n), "plain-s")
	b.ReportMetric(stamped.Seconds()/float64(n), "stamped-s")
	b.ReportMetric(100*(stamped.Seconds()/plain.Seconds()-1), "stamping-%")
	b.ReportMetric(100*(stampedCPU.Seconds()/plainCPU.Seconds()-1), "run-cpu-%")
	b.ReportMetric(float64(site.Requests.Load())/float64(n), "stamps/run")
}

// selfCPU is the user and system CPU this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
