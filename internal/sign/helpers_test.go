package sign

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/contract"
)

const example = "../../contracts/examples/threemodule"

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// copyDir copies a contract directory (with cue.mod) into a temp dir.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	require.NoError(t, err)
	return dst
}

func load(t testing.TB, dir string) *contract.Contracts {
	t.Helper()
	c, diags, err := contract.Load(dir)
	require.NoError(t, err)
	require.NotNil(t, c, "%v", diags)
	return c
}

// edit replaces the first occurrence of old in dir/file.
func edit(t testing.TB, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// tightenP1Voltage edits one tolerance of one boundary: p1-ma's
// voltage-a guarantee, leaving p2-mb and p3-mc as they were.
func tightenP1Voltage(t testing.TB, dir string) {
	edit(t, dir, "power.cue", `guarantee: {nominal: "415 V", tolerance: "3 %"}`,
		`guarantee: {nominal: "415 V", tolerance: [if c.power == "p1" {"2.5 %"}, "3 %"][0]}`)
}

type party struct {
	name   string
	signer ssh.Signer
}

func newParty(t testing.TB, name string) party {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	s, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	return party{name, s}
}

func allowedLine(p party, options string) string {
	key := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(p.signer.PublicKey())))
	if options != "" {
		return fmt.Sprintf("%s %s %s", p.name, options, key)
	}
	return fmt.Sprintf("%s %s", p.name, key)
}

func allowedOf(t testing.TB, parties ...party) *AllowedSigners {
	t.Helper()
	var lines []string
	for _, p := range parties {
		lines = append(lines, allowedLine(p, `namespaces="seam-contract"`))
	}
	as, err := ParseAllowedSigners("allowed_signers", []byte(strings.Join(lines, "\n")+"\n"))
	require.NoError(t, err)
	return as
}

// exampleParties are the four vendors of the worked example.
func exampleParties(t testing.TB) []party {
	return []party{newParty(t, "VoltSkid"), newParty(t, "CoolFlow"), newParty(t, "SiteOps"), newParty(t, "GPUWorks"), newParty(t, "ExamplePowerLight")}
}

func signAll(t testing.TB, dir string, parties []party, allowed *AllowedSigners) {
	t.Helper()
	c := load(t, dir)
	for _, p := range parties {
		_, err := Sign(c, Request{Party: p.name, Now: now}, p.signer, allowed)
		require.NoError(t, err, p.name)
	}
}

// statuses maps "boundary/party" to status.
func statuses(r Report) map[string]Status {
	out := map[string]Status{}
	for _, b := range r.Boundaries {
		for _, p := range b.Parties {
			out[b.Boundary+"/"+p.Party] = p.Status
		}
	}
	return out
}
