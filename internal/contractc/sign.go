package contractc

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/sign"
)

func init() {
	register("sign", "sign the boundaries a party is party to, with an SSH key", runSign).
		WithExample("contractc sign contracts/examples/threemodule --key ~/.ssh/id_ed25519 --party VoltSkid")
}

// now is the clock signatures are dated and checked with.
var now clock.Clock = clock.Real{}

func runSign(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR --party NAME (--key KEY | --prepare) [--boundary B]", flag.ContinueOnError)
	key := fs.String("key", "", "OpenSSH private key file to sign with")
	party := fs.String("party", "", "the party you sign as: a name from the boundaries' parties")
	boundary := fs.String("boundary", "", "sign only this boundary (default: every boundary the party is party to)")
	allowedFile := fs.String("allowed-signers", "", "allowed-signers file the key must be listed in (default DIR/signatures/allowed_signers, if present)")
	passEnv := fs.String("passphrase-env", "", "environment variable holding the key's passphrase")
	prepare := fs.Bool("prepare", false, "write the statements only, to sign with ssh-keygen -Y sign -n "+sign.Namespace)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case *party == "":
		err = cli.Usagef("--party is required")
	case *key == "" && !*prepare:
		err = cli.Usagef("--key is required (or --prepare to sign with ssh-keygen)")
	}
	if err != nil {
		return fail(stderr, "sign", fs, err)
	}
	c, err := loadForSigning(pos[0])
	if err != nil {
		return fail(stderr, "sign", fs, err)
	}
	req := sign.Request{Party: *party, Boundary: *boundary, Now: now.Now()}
	var written []sign.Written
	if *prepare {
		written, err = sign.Prepare(c, req)
	} else {
		written, err = signWithKey(c, req, *key, *passEnv, allowedPath(pos[0], *allowedFile), *allowedFile != "")
	}
	if err != nil {
		return fail(stderr, "sign", fs, err)
	}
	show := func(p string) string { return filepath.Join(pos[0], sign.SigDir, filepath.Base(p)) }
	for _, w := range written {
		w.Statement, w.Signature = show(w.Statement), show(w.Signature)
		if *prepare {
			fmt.Fprintf(stdout, "%s: statement for %s written to %s; sign it: ssh-keygen -Y sign -f KEY -n %s %s\n", w.Boundary, w.Digest, w.Statement, sign.Namespace, w.Statement)
		} else {
			fmt.Fprintf(stdout, "%s: signed %s as %s → %s\n", w.Boundary, w.Digest, *party, w.Signature)
		}
	}
	return cli.ExitOK
}

func signWithKey(c *contract.Contracts, req sign.Request, key, passEnv, allowedFile string, required bool) ([]sign.Written, error) {
	var pass []byte
	if passEnv != "" {
		v, ok := os.LookupEnv(passEnv)
		if !ok {
			return nil, fmt.Errorf("--passphrase-env: %s is not set", passEnv)
		}
		pass = []byte(v)
	}
	signer, err := sign.LoadSigner(key, pass)
	if err != nil {
		return nil, err
	}
	allowed, err := sign.ReadAllowedSigners(allowedFile)
	if errors.Is(err, fs.ErrNotExist) && !required {
		allowed, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sign.Sign(c, req, signer, allowed)
}

func allowedPath(dir, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return filepath.Join(dir, sign.SigDir, sign.AllowedSignersFile)
}

// loadForSigning loads a directory that must have no error: nobody signs
// or verifies a contract that does not load.
func loadForSigning(dir string) (*contract.Contracts, error) {
	c, diags, err := contract.Load(dir)
	if err != nil {
		return nil, err
	}
	if c == nil || diags.Count(diag.Error) > 0 {
		msg := ""
		for _, d := range diags.Sorted() {
			if d.Severity == diag.Error {
				msg += fmt.Sprintf("\n  %s: %s: %s", d.Pos, d.Rule, d.Message)
			}
		}
		return nil, fmt.Errorf("%s does not load (%d error(s)); fix it with contractc vet:%s", dir, diags.Count(diag.Error), msg)
	}
	return c, nil
}
