package netbox_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/netbox"
)

// BenchmarkNetboxExample: the example (48 racks, 1,776 trays) exported
// as NetBox pages, written, read back and imported into the handover
// form: one round trip per op.
func BenchmarkNetboxExample(b *testing.B) {
	s := exampleSiteB(b)
	dir := b.TempDir()
	for b.Loop() {
		e, err := netbox.ExportSite(s, "")
		require.NoError(b, err)
		require.NoError(b, netbox.WriteDir(dir, e, "", 1000))
		back, err := netbox.ReadDir(dir)
		require.NoError(b, err)
		again, err := netbox.ImportSite(back)
		require.NoError(b, err)
		_ = again.Handover()
	}
}
