package contractc

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/sign"
)

func init() {
	register("verify", "check every party's signature on every boundary", runVerify).
		WithExample("contractc verify contracts/examples/threemodule")
}

func runVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR", flag.ContinueOnError)
	allowedFile := fs.String("allowed-signers", "", "allowed-signers file mapping parties to keys (default DIR/signatures/allowed_signers); in CI, take it from the base branch")
	boundary := fs.String("boundary", "", "verify only this boundary")
	format := fs.String("format", "text", "output format: text, json")
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case *format != "text" && *format != "json":
		err = cli.Usagef("--format: unknown format %q (want text or json)", *format)
	}
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	c, err := loadForSigning(pos[0])
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	file := allowedPath(pos[0], *allowedFile)
	allowed, err := sign.ReadAllowedSigners(file)
	if errors.Is(err, os.ErrNotExist) {
		err = fmt.Errorf("%w\n  verify checks each signature against the parties' public keys, listed in an allowed-signers file, one line per key:\n"+
			`    echo "VoltSkid namespaces=\"seam-contract\" $(cat ~/.ssh/id_ed25519.pub)" >> %s`+
			"\n  or pass --allowed-signers FILE (in CI, the base branch's: see docs/ci.md)", err, file)
	}
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	r, err := sign.Verify(c, allowed, *boundary, now.Now())
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	if *format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = verifyText(stdout, r)
	}
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	if !r.OK() {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func verifyText(w io.Writer, r sign.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, b := range r.Boundaries {
		fmt.Fprintf(tw, "%s\t%s\n", b.Boundary, b.Digest)
		for _, p := range b.Parties {
			detail := p.Detail
			if p.Status == sign.StatusSigned {
				detail = "by " + p.Key + " at " + p.SignedAt
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Party, p.Status, detail)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range r.Orphans {
		fmt.Fprintf(w, "note: %s belongs to no current boundary and party\n", o)
	}
	_, err := fmt.Fprintf(w, "%d signed, %d missing, %d stale, %d invalid\n",
		r.Count(sign.StatusSigned), r.Count(sign.StatusMissing), r.Count(sign.StatusStale), r.Count(sign.StatusInvalid))
	return err
}
