package sign

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAllowedSignersMatching(t *testing.T) {
	p := newParty(t, "x")
	key := strings.TrimSpace(allowedLine(p, "")[2:])
	cases := []struct {
		line      string
		principal string
		ns        string
		at        time.Time
		want      bool
	}{
		{"VoltSkid " + key, "VoltSkid", Namespace, now, true},
		{"VoltSkid " + key, "voltskid", Namespace, now, false}, // principals are case-sensitive
		{`"VoltSkid,GPUWorks" ` + key, "GPUWorks", Namespace, now, true},
		{"Volt* " + key, "VoltSkid", Namespace, now, true},
		{"Volt?kid " + key, "VoltSkid", Namespace, now, true},
		{"*,!GPUWorks " + key, "GPUWorks", Namespace, now, false},
		{"*,!GPUWorks " + key, "CoolFlow", Namespace, now, true},
		{`VoltSkid namespaces="git,seam-contract" ` + key, "VoltSkid", Namespace, now, true},
		{`VoltSkid namespaces="git" ` + key, "VoltSkid", Namespace, now, false},
		{`VoltSkid valid-after="20260401Z" ` + key, "VoltSkid", Namespace, now, false},
		{`VoltSkid valid-before="20260201Z" ` + key, "VoltSkid", Namespace, now, false},
		{`VoltSkid valid-after="20260201",valid-before="202604011200Z" ` + key, "VoltSkid", Namespace, now, true},
		{`VoltSkid cert-authority ` + key, "VoltSkid", Namespace, now, false},
		{"VoltSkid " + key + " a comment with spaces", "VoltSkid", Namespace, now, true},
	}
	for _, tc := range cases {
		as, err := ParseAllowedSigners("as", []byte("# comment\n\n"+tc.line+"\n"))
		require.NoError(t, err, tc.line)
		got := len(as.KeysFor(tc.principal, tc.ns, tc.at)) == 1
		assert.Equal(t, tc.want, got, "%s for %s", tc.line, tc.principal)
	}
}

func TestAllowedSignersErrorsNameTheLine(t *testing.T) {
	p := newParty(t, "x")
	key := strings.TrimSpace(allowedLine(p, "")[2:])
	cases := map[string]string{
		"VoltSkid\n":                             "as:1: want principals, then a key",
		"# ok\nVoltSkid ssh-ed25519 AAAAnope\n":  "as:2: principals \"VoltSkid\": cannot read the key",
		`VoltSkid frobnicate ` + key:             `as:1: unknown option "frobnicate"`,
		`VoltSkid valid-after="tomorrow" ` + key: `as:1: option valid-after: "tomorrow" is not a time`,
		`"VoltSkid ` + key:                       "as:1: unterminated quote",
	}
	for in, want := range cases {
		_, err := ParseAllowedSigners("as", []byte(in))
		assert.ErrorContains(t, err, want, in)
	}
}

func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*c", "abbbc", true}, {"a*c", "abbb", false}, {"a?c", "abc", true},
		{"a?c", "ac", false}, {"*@example.com", "v@example.com", true}, {"abc", "abcd", false},
	} {
		assert.Equal(t, tc.want, wildcard(tc.p, tc.s), "%s ~ %s", tc.p, tc.s)
	}
}
