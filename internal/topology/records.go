package topology

import (
	"errors"
	"fmt"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/inventory"
)

// ReadRecords reads the design brief's node records (a JSON array of
// {"node", "module", "power_block", "cooling_loop", "rack",
// "nvlink_domain"}). Problems in the file come back as diagnostics at
// their line; a per-rack handover is an error (it needs its contract).
func ReadRecords(path string) ([]*inventory.NodeRecord, diag.List, error) {
	h, diags, err := inventory.ReadHandover(path)
	if err != nil {
		return nil, nil, fmt.Errorf("records: %w", err)
	}
	if len(h.Racks) > 0 {
		return nil, diags, fmt.Errorf("%s is a %s inventory, not the design brief's node records: give it with its contract directory (contractc topology DIR --inventory %s)", path, inventory.HandoverFormat, path)
	}
	if diags.Count(diag.Error) == 0 && len(h.Nodes) == 0 {
		return nil, diags, errors.New(path + ": no node records")
	}
	return h.Nodes, diags, nil
}
