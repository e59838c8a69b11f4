package facilityd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/sign"
)

// LedgerConfig is where facilityd keeps its holds: the lifecycle store,
// the site's one ledger of holds, shared with sat burnin, sat lifecycle
// and every other tool that holds nodes. facilityd then never returns a
// node another owner still holds, and its reconcile applies every
// owner's holds to the scheduler. Without it the holds live in
// facilityd's state file, which no other tool sees (docs/facilityd.md
// says what is lost).
type LedgerConfig struct {
	// Store is a SQLite file or a postgres:// URL; Password PostgreSQL's
	// password by reference (env:NAME, file:PATH).
	Store    string `json:"store"`
	Password string `json:"password,omitempty"`
	// Key is the SSH private key facilityd signs its holds with (a file;
	// its passphrase, if any, by reference in KeyPassphrase), Principal
	// its principal in the store's allowed signers when it has several.
	Key           string `json:"key,omitempty"`
	KeyPassphrase string `json:"key_passphrase,omitempty"`
	Principal     string `json:"principal,omitempty"`
	// DBRole makes the changes as the PostgreSQL session's role instead.
	DBRole bool `json:"db_role,omitempty"`
}

func (c *LedgerConfig) check() error {
	switch {
	case c == nil:
		return nil
	case c.Store == "":
		return errors.New("ledger.store: the lifecycle store that keeps the holds is needed")
	case (c.Key == "") == !c.DBRole:
		return errors.New("ledger: who facilityd places its holds as: key (an SSH key of the store's allowed signers) or db_role (PostgreSQL), one of them")
	}
	return nil
}

// openLedger opens the lifecycle store the holds are kept in (nil
// without a ledger section), read only in a dry run.
func (d *Daemon) openLedger(ctx context.Context) (hold.Backend, error) {
	lc := d.Cfg.Ledger
	if lc == nil {
		return nil, nil
	}
	a := lifecycle.DBRoleAuth()
	if lc.Key != "" {
		s, err := d.ledgerSigner(lc)
		if err != nil {
			return nil, err
		}
		a = lifecycle.KeyAuth(s, lc.Principal)
	}
	store := lc.Store
	if !isURL(store) {
		store = d.Cfg.Path(store)
	}
	st, err := lifecycle.Open(ctx, lifecycle.Config{Store: store, Password: lc.Password, LookupEnv: d.lookupEnv, DryRun: d.rec})
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if _, err := st.Actor(ctx, a); err != nil {
		st.Close()
		return nil, fmt.Errorf("ledger %s: %w", lc.Store, err)
	}
	d.ledgerStore = st
	return st.Ledger(a, "slurm"), nil // facilityd's nodes go by the inventory's Slurm names (alarm.Index)
}

func (d *Daemon) ledgerSigner(lc *LedgerConfig) (ssh.Signer, error) {
	var pass []byte
	if lc.KeyPassphrase != "" {
		p, err := binding.Secret{Ref: lc.KeyPassphrase, What: "ledger.key_passphrase", Dir: d.Cfg.dir}.Resolve(d.lookupEnv)
		if err != nil {
			return nil, err
		}
		pass = []byte(p)
	}
	s, err := sign.LoadSigner(d.Cfg.Path(lc.Key), pass)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("ledger.key: %w", err)
		}
		return nil, fmt.Errorf("ledger.key %s: %w", lc.Key, err)
	}
	return s, nil
}
