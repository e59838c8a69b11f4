package lifecyclecmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sat run's lifecycle flags come out of its arguments, whatever their
// form; the rest go to sat run as they were.
func TestSplitRunArgs(t *testing.T) {
	for _, c := range []struct {
		args, rest []string
		store      string
		hook       bool
		err        string
	}{
		{args: []string{"plan.json", "--sim", "--out", "b"}, rest: []string{"plan.json", "--sim", "--out", "b"}},
		{args: []string{"plan.json", "--lifecycle", "site.db", "--sim"}, rest: []string{"plan.json", "--sim"}, store: "site.db", hook: true},
		{args: []string{"-lifecycle=site.db", "plan.json", "--out=b"}, rest: []string{"plan.json", "--out=b"}, store: "site.db", hook: true},
		{args: []string{"plan.json", "--lifecycle-key", "cx"}, err: "need --lifecycle STORE"},
		{args: []string{"plan.json", "--lifecycle", "site.db", "--commission"}, err: "who makes the change? --key KEY"},
		{args: []string{"plan.json", "--lifecycle", "site.db", "--commission=maybe"}, err: "invalid boolean value"},
	} {
		rest, h, err := SplitRunArgs(c.args)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, "%q", c.args)
			continue
		}
		require.NoError(t, err, "%q", c.args)
		assert.Equal(t, c.rest, rest, "%q", c.args)
		if assert.Equal(t, c.hook, h != nil, "%q", c.args) && h != nil {
			assert.Equal(t, c.store, h.c.store)
		}
	}
}
