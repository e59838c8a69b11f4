package sign

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hiddeco/sshsig"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func digests(t *testing.T, dir string) map[string]string {
	t.Helper()
	units, err := Units(load(t, dir))
	require.NoError(t, err)
	out := map[string]string{}
	for _, u := range units {
		out[u.Boundary] = u.Digest
	}
	return out
}

func TestDigestIgnoresFormattingCommentsAndOrder(t *testing.T) {
	before := digests(t, example)
	require.Len(t, before, 10)
	dir := copyDir(t, example)
	edit(t, dir, "joints.cue", "supplier: c.power\n\t\t\tconsumer: c.it", "consumer: c.it // reordered\n\t\t\tsupplier:    c.power")
	edit(t, dir, "site.cue", "power_factor: 0.95", "power_factor: 0.950 // same number")
	edit(t, dir, "site.cue", "package site", "package site\n\n// a comment changes nothing")
	require.Equal(t, before, digests(t, dir))
}

func TestEditingOneToleranceChangesOnlyThatBoundary(t *testing.T) {
	before := digests(t, example)
	dir := copyDir(t, example)
	tightenP1Voltage(t, dir)
	after := digests(t, dir)
	for b, d := range before {
		if b == "p1-ma" {
			assert.NotEqual(t, d, after[b], b)
		} else {
			assert.Equal(t, d, after[b], b)
		}
	}
}

func TestModuleChangeInvalidatesItsJoints(t *testing.T) {
	before := digests(t, example)
	dir := copyDir(t, example)
	edit(t, dir, "site.cue", `generation:     "vs-2500"`, `generation:     [if c.power == "p2" {"vs-2600"}, "vs-2500"][0]`)
	after := digests(t, dir)
	for b, d := range before {
		// the grid boundary's unit holds every IT and power module
		if b == "p2-mb" || b == "u1-site" {
			assert.NotEqual(t, d, after[b], b)
		} else {
			assert.Equal(t, d, after[b], b)
		}
	}
}

func TestExampleSignedByAllPartiesVerifies(t *testing.T) {
	dir := copyDir(t, example)
	parties := exampleParties(t)
	allowed := allowedOf(t, parties...)
	signAll(t, dir, parties, allowed)

	r, err := Verify(load(t, dir), allowed, "", now)
	require.NoError(t, err)
	require.True(t, r.OK(), "%+v", r)
	assert.Equal(t, 20, r.Count(StatusSigned)) // 10 boundaries x 2 parties
	assert.Empty(t, r.Orphans)
}

func TestEditingOneToleranceInvalidatesExactlyThatBoundarysSignatures(t *testing.T) {
	dir := copyDir(t, example)
	parties := exampleParties(t)
	allowed := allowedOf(t, parties...)
	signAll(t, dir, parties, allowed)
	tightenP1Voltage(t, dir)

	r, err := Verify(load(t, dir), allowed, "", now)
	require.NoError(t, err)
	require.False(t, r.OK())
	for key, st := range statuses(r) {
		if strings.HasPrefix(key, "p1-ma/") {
			assert.Equal(t, StatusStale, st, key)
		} else {
			assert.Equal(t, StatusSigned, st, key)
		}
	}
	assert.Equal(t, 2, r.Count(StatusStale))
}

func TestMissingSignatures(t *testing.T) {
	dir := copyDir(t, example)
	parties := exampleParties(t)
	allowed := allowedOf(t, parties...)
	signAll(t, dir, parties[:3], allowed) // GPUWorks and the utility have not signed

	r, err := Verify(load(t, dir), allowed, "", now)
	require.NoError(t, err)
	assert.False(t, r.OK())
	assert.Equal(t, 10, r.Count(StatusMissing))
	assert.Equal(t, StatusMissing, statuses(r)["l2-mb/GPUWorks"])
	assert.Equal(t, StatusSigned, statuses(r)["l2-mb/CoolFlow"])
}

// badCase corrupts p1-ma's VoltSkid signature in one way.
type badCase struct {
	name    string
	corrupt func(t *testing.T, dir string, ps map[string]party)
	status  Status
	detail  string
}

func sigPath(dir string) string { return StatementPath(dir, "p1-ma", "VoltSkid") + ".sig" }

func TestBadSignaturesNeverPass(t *testing.T) {
	cases := []badCase{
		{"tampered contract", func(t *testing.T, dir string, _ map[string]party) { tightenP1Voltage(t, dir) },
			StatusStale, "the boundary changed since"},
		{"tampered signature", func(t *testing.T, dir string, _ map[string]party) {
			b, _ := os.ReadFile(sigPath(dir))
			lines := strings.Split(string(b), "\n")
			l := []byte(lines[len(lines)-3]) // inside the signature bytes
			l[10] ^= 0x01
			if l[10] == '\n' || l[10] == '-' {
				l[10] = 'A'
			}
			lines[len(lines)-3] = string(l)
			require.NoError(t, os.WriteFile(sigPath(dir), []byte(strings.Join(lines, "\n")), 0o644))
		}, StatusInvalid, ""},
		{"truncated signature", func(t *testing.T, dir string, _ map[string]party) {
			b, _ := os.ReadFile(sigPath(dir))
			require.NoError(t, os.WriteFile(sigPath(dir), b[:len(b)/2], 0o644))
		}, StatusInvalid, "cannot read the SSH signature"},
		{"not a signature", func(t *testing.T, dir string, _ map[string]party) {
			require.NoError(t, os.WriteFile(sigPath(dir), []byte("hello\n"), 0o644))
		}, StatusInvalid, "not an SSH signature"},
		{"tampered statement", func(t *testing.T, dir string, _ map[string]party) {
			edit(t, filepath.Dir(sigPath(dir)), "p1-ma.VoltSkid.json", `"signed_at": "2026`, `"signed_at": "2025`)
		}, StatusInvalid, "does not match the statement"},
		{"unknown signer", func(t *testing.T, dir string, _ map[string]party) {
			resign(t, dir, newParty(t, "VoltSkid"), Namespace)
		}, StatusInvalid, "unknown signer"},
		{"wrong namespace", func(t *testing.T, dir string, ps map[string]party) {
			resign(t, dir, ps["VoltSkid"], "file")
		}, StatusInvalid, `namespace "file"`},
		{"another party's key", func(t *testing.T, dir string, ps map[string]party) {
			resign(t, dir, ps["GPUWorks"], Namespace)
		}, StatusInvalid, "signed by the key of GPUWorks"},
		{"statement of another boundary", func(t *testing.T, dir string, _ map[string]party) {
			from := StatementPath(dir, "p2-mb", "VoltSkid")
			for _, ext := range []string{"", ".sig"} {
				b, err := os.ReadFile(from + ext)
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(StatementPath(dir, "p1-ma", "VoltSkid")+ext, b, 0o644))
			}
		}, StatusInvalid, "for boundary p2-mb, filed as VoltSkid's for p1-ma"},
		{"statement without signature", func(t *testing.T, dir string, _ map[string]party) {
			require.NoError(t, os.Remove(sigPath(dir)))
		}, StatusMissing, "is not signed"},
		{"signature without statement", func(t *testing.T, dir string, _ map[string]party) {
			require.NoError(t, os.Remove(StatementPath(dir, "p1-ma", "VoltSkid")))
		}, StatusInvalid, "signature without its statement"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, example)
			parties := exampleParties(t)
			ps := map[string]party{}
			for _, p := range parties {
				ps[p.name] = p
			}
			allowed := allowedOf(t, parties...)
			signAll(t, dir, parties, allowed)
			tc.corrupt(t, dir, ps)

			r, err := Verify(load(t, dir), allowed, "p1-ma", now)
			require.NoError(t, err)
			require.False(t, r.OK())
			got := r.Boundaries[0].Parties[0]
			require.Equal(t, "VoltSkid", got.Party)
			assert.Equal(t, tc.status, got.Status, got.Detail)
			assert.Contains(t, got.Detail, tc.detail)
			if tc.status != StatusStale { // only VoltSkid's signature was touched
				assert.Equal(t, StatusSigned, r.Boundaries[0].Parties[1].Status)
			}
		})
	}
}

// resign replaces p1-ma's VoltSkid signature with one by p in namespace ns.
func resign(t *testing.T, dir string, p party, ns string) {
	t.Helper()
	msg, err := os.ReadFile(StatementPath(dir, "p1-ma", "VoltSkid"))
	require.NoError(t, err)
	sig, err := sshsig.Sign(bytes.NewReader(msg), p.signer, sshsig.HashSHA512, ns)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(sigPath(dir), sshsig.Armor(sig), 0o644))
}

func TestSignRefusesKeyNotListedForParty(t *testing.T) {
	dir := copyDir(t, example)
	parties := exampleParties(t)
	allowed := allowedOf(t, parties...)
	_, err := Sign(load(t, dir), Request{Party: "VoltSkid", Now: now}, parties[3].signer, allowed)
	require.ErrorContains(t, err, "refusing to sign as VoltSkid: signed by the key of GPUWorks")
}

func TestSignChecksPartyAndBoundary(t *testing.T) {
	c := load(t, copyDir(t, example))
	p := newParty(t, "VoltSkid")
	cases := map[string]struct{ req Request }{
		"Nobody is not a party to any boundary": {Request{Party: "Nobody", Now: now}},
		`no boundary "p9-mz"`:                   {Request{Party: "VoltSkid", Boundary: "p9-mz", Now: now}},
		"boundary l1-ma: VoltSkid is not one of its parties (CoolFlow, GPUWorks)": {Request{Party: "VoltSkid", Boundary: "l1-ma", Now: now}},
		`party "Volt Skid" cannot be a signer`:                                    {Request{Party: "Volt Skid", Now: now}},
	}
	for want, tc := range cases {
		_, err := Sign(c, tc.req, p.signer, nil)
		assert.ErrorContains(t, err, want)
	}
}

func TestSignOneBoundary(t *testing.T) {
	dir := copyDir(t, example)
	p := newParty(t, "CoolFlow")
	w, err := Sign(load(t, dir), Request{Party: "CoolFlow", Boundary: "l2-mb", Now: now}, p.signer, nil)
	require.NoError(t, err)
	require.Len(t, w, 1)
	entries, err := os.ReadDir(filepath.Join(dir, SigDir))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.Equal(t, []string{"l2-mb.CoolFlow.json", "l2-mb.CoolFlow.json.sig"}, names)
}

func TestStatementIsStrict(t *testing.T) {
	good := Statement{Type: StatementType, Site: "s", Boundary: "b", Party: "P", Digest: "sha256:00",
		Schema: Schema{Version: "v1"}, Tool: "t", SignedAt: "2026-03-01T12:00:00Z"}
	st, err := ParseStatement(good.Marshal())
	require.NoError(t, err)
	assert.Equal(t, good, st)

	cases := map[string]string{
		"unknown field":   strings.Replace(string(good.Marshal()), `"tool"`, `"tools"`, 1),
		"statement type":  strings.Replace(string(good.Marshal()), StatementType, "other/v1", 1),
		"has no digest":   strings.Replace(string(good.Marshal()), `"sha256:00"`, `""`, 1),
		"signed_at":       strings.Replace(string(good.Marshal()), "2026-03-01T12:00:00Z", "yesterday", 1),
		"after the JSON":  string(good.Marshal()) + "{}",
		"not a signature": "[1,2]",
	}
	for want, in := range cases {
		_, err := ParseStatement([]byte(in))
		assert.ErrorContains(t, err, want, want)
	}
}

// Design versus as-built: an RMA changes a serial in the handover
// inventory, never a boundary's digest, so no vendor re-signs; a change
// to the rack design (the IT vendor's) does change the IT module's
// joints.
func TestAsBuiltChangesNoDigest(t *testing.T) {
	before := digests(t, example)
	dir := copyDir(t, example)
	edit(t, dir, "inventory/racks.json", `"SN-COMPUTE-0000003"`, `"SN-COMPUTE-9999999"`)
	edit(t, dir, "inventory/racks.json", `"firmware":{"bios":"1.4.2"`, `"firmware":{"bios":"1.5.0"`)
	require.Equal(t, before, digests(t, dir), "serials and firmware are not in the contract")

	edit(t, dir, "racks.cue", `power: "6.4 kW"`, `power: "6.6 kW"`)
	after := digests(t, dir)
	for b, d := range before {
		if strings.HasSuffix(b, "-ma") || strings.HasSuffix(b, "-mb") || strings.HasSuffix(b, "-mc") {
			assert.NotEqual(t, d, after[b], "%s: the rack design is the IT module's", b)
		}
	}
}
