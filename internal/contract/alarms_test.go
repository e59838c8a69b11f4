package contract_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/contract"
)

// The example and the vet base raise every severe alarm type for every
// loop and UPS-backed block (ALARM001's failing example is
// testdata/vet/cases/ALARM001-*); VetAlarms, facilityd's start-up
// check, finds what vet finds.
func TestAlarmSources(t *testing.T) {
	for _, dir := range []string{example, "testdata/vet/base"} {
		c, diags, err := contract.Load(dir)
		require.NoError(t, err)
		require.Empty(t, diags)
		require.Empty(t, contract.VetAlarms(c), dir)
	}
	dir := seed(t, "testdata/vet/cases/ALARM001-alarm-named-otherwise.txtar")
	c, all, err := contract.Vet(dir)
	require.NoError(t, err)
	found := contract.VetAlarms(c)
	require.True(t, hasRule(found, contract.RuleAlarmSource), render(found))
	require.Equal(t, render(found), render(all), "vet reports ALARM001 and nothing else for this case")
}
