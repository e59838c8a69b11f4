package sign

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/contracts/schema"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/version"
)

// SigDir is the directory beside the contracts that holds the signatures
// and, by default, the allowed-signers file.
const SigDir = "signatures"

// AllowedSignersFile is the default allowed-signers file name in SigDir.
const AllowedSignersFile = "allowed_signers"

// StatementPath is where party's statement for boundary lives; the
// signature is the same path + ".sig", the name ssh-keygen -Y sign writes.
func StatementPath(dir, boundary, party string) string {
	return filepath.Join(dir, SigDir, boundary+"."+party+".json")
}

// Request says what to sign.
type Request struct {
	Party    string
	Boundary string    // "" signs every boundary that lists Party
	Now      time.Time // recorded as signed_at
}

// Written is one statement (and signature) written to disk.
type Written struct {
	Boundary, Digest, Statement, Signature string
}

// Prepare writes the statements Party would sign, without signing them,
// for a vendor who signs with ssh-keygen -Y sign.
func Prepare(c *contract.Contracts, req Request) ([]Written, error) {
	return write(c, req, nil)
}

// Sign writes each statement and its SSH signature made with signer. When
// allowed is not nil the key must be listed there for the party, so a
// vendor learns of a wrong key now, not in CI.
func Sign(c *contract.Contracts, req Request, signer ssh.Signer, allowed *AllowedSigners) ([]Written, error) {
	if allowed != nil {
		if err := keyAllowed(signer.PublicKey(), allowed, req.Party, req.Now); err != nil {
			return nil, fmt.Errorf("refusing to sign as %s: %w", req.Party, err)
		}
	}
	return write(c, req, signer)
}

func write(c *contract.Contracts, req Request, signer ssh.Signer) ([]Written, error) {
	units, err := selectUnits(c, req)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, SigDir), 0o755); err != nil {
		return nil, fmt.Errorf("signatures: %w", err)
	}
	var out []Written
	for _, u := range units {
		st := newStatement(c, u, req)
		w := Written{Boundary: u.Boundary, Digest: u.Digest, Statement: StatementPath(c.Dir, u.Boundary, req.Party)}
		msg := st.Marshal()
		if err := os.WriteFile(w.Statement, msg, 0o644); err != nil {
			return nil, fmt.Errorf("boundary %s: %w", u.Boundary, err)
		}
		if signer != nil {
			armored, err := SignMessage(msg, signer)
			if err != nil {
				return nil, fmt.Errorf("boundary %s: %w", u.Boundary, err)
			}
			w.Signature = w.Statement + ".sig"
			if err := os.WriteFile(w.Signature, armored, 0o644); err != nil {
				return nil, fmt.Errorf("boundary %s: %w", u.Boundary, err)
			}
		}
		out = append(out, w)
	}
	return out, nil
}

func newStatement(c *contract.Contracts, u Unit, req Request) Statement {
	return Statement{Type: StatementType, Site: c.Site.Name, Boundary: u.Boundary, Party: req.Party, Digest: u.Digest,
		Schema: currentSchema(), Tool: "contractc " + version.Version, SignedAt: req.Now.UTC().Format(time.RFC3339)}
}

func currentSchema() Schema { return Schema{Version: schema.Version, Digest: schema.Digest()} }

// selectUnits returns the units req.Party signs, checking that the party
// and boundary exist and belong together.
func selectUnits(c *contract.Contracts, req Request) ([]Unit, error) {
	if err := CheckParty(req.Party); err != nil {
		return nil, err
	}
	units, err := Units(c)
	if err != nil {
		return nil, err
	}
	var out []Unit
	var ids []string
	for _, u := range units {
		ids = append(ids, u.Boundary)
		if req.Boundary != "" && u.Boundary != req.Boundary {
			continue
		}
		if contains(u.Parties, req.Party) {
			out = append(out, u)
		} else if req.Boundary != "" {
			return nil, fmt.Errorf("boundary %s: %s is not one of its parties (%s)", u.Boundary, req.Party, strings.Join(u.Parties, ", "))
		}
	}
	switch {
	case req.Boundary != "" && !contains(ids, req.Boundary):
		return nil, fmt.Errorf("no boundary %q in %s (boundaries: %s)", req.Boundary, c.Dir, strings.Join(ids, ", "))
	case len(out) == 0:
		return nil, fmt.Errorf("%s is not a party to any boundary in %s (parties: %s)", req.Party, c.Dir, strings.Join(allParties(units), ", "))
	}
	return out, nil
}

func allParties(units []Unit) []string {
	seen := map[string]bool{}
	var out []string
	for _, u := range units {
		for _, p := range u.Parties {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
