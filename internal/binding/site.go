package binding

import "github.com/seamdc/seam/internal/diag"

// Requirer lists what a site needs bound, read from the contract
// directory a binding names (contractsDir), with positions relative to
// the binding's directory (bindingDir). The device layer does not read
// contracts: internal/bindreq does, and sat passes it to LoadWith.
// Contract problems are diagnostics (BIND014), not errors.
type Requirer func(contractsDir, bindingDir string) (Requirements, diag.List, error)
