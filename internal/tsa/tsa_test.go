package tsa_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/tsa"
	"github.com/seamdc/seam/internal/tsa/tsatest"
)

// A real authority (openssl ts on loopback) stamps; the token verifies
// offline against its root, not against another authority's, not for
// other bytes; an authority in an outage is an error, not a hang.
func TestStampAndVerify(t *testing.T) {
	ours, theirs := tsatest.Start(t, "ours"), tsatest.Start(t, "theirs")
	roots, err := tsa.ParseRoots("ours.pem", ours.RootPEM)
	require.NoError(t, err)
	otherRoots, err := tsa.ParseRoots("theirs.pem", theirs.RootPEM)
	require.NoError(t, err)
	msg := []byte("the head of the chain")
	ctx := context.Background()

	a := &tsa.Authority{URL: ours.URL, Roots: roots}
	st, err := a.Stamp(ctx, msg)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), st.Time, time.Minute)
	assert.Contains(t, st.Authority, "ours time-stamping")

	got, err := tsa.Verify(st.Token, msg, roots)
	require.NoError(t, err)
	assert.Equal(t, st.Time, got.Time)

	_, err = tsa.Verify(st.Token, []byte("other bytes"), roots)
	assert.ErrorContains(t, err, "the stamp is of other bytes")
	_, err = tsa.Verify(st.Token, msg, otherRoots)
	assert.ErrorContains(t, err, `signed by "CN=ours time-stamping,O=seam tests", which is not an authority the site trusts`)
	_, err = tsa.Verify([]byte("not DER"), msg, roots)
	assert.ErrorContains(t, err, "not a time-stamp token")

	// an authority the site does not trust is refused at once
	_, err = (&tsa.Authority{URL: theirs.URL, Roots: roots}).Stamp(ctx, msg)
	assert.ErrorContains(t, err, "not an authority the site trusts")

	ours.Down.Store(true)
	_, err = a.Stamp(ctx, msg)
	assert.ErrorContains(t, err, "503 Service Unavailable")

	_, err = tsa.ParseRoots("empty.pem", []byte("no pem here"))
	assert.ErrorContains(t, err, "empty.pem: no PEM certificate")
}
