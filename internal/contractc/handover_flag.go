package contractc

import (
	"flag"
	"strings"
)

// handoverPaths is --inventory FILE, repeated: the handover inventories
// to read instead of the contract directory's inventory/*.json.
type handoverPaths []string

func (p *handoverPaths) String() string { return strings.Join(*p, ",") }

func (p *handoverPaths) Set(v string) error {
	*p = append(*p, v)
	return nil
}

// inventoryFlag adds --inventory to fs; nil when it was not given.
func inventoryFlag(fs *flag.FlagSet) *handoverPaths {
	var p handoverPaths
	fs.Var(&p, "inventory", "a handover inventory file (JSON), repeatable; default: DIR/inventory/*.json")
	return &p
}

// paths is nil when no --inventory was given, so that the default applies.
func (p *handoverPaths) paths() []string {
	if len(*p) == 0 {
		return nil
	}
	return *p
}
