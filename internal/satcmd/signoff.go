package satcmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
)

func init() {
	register("sign-off", "sign a finished evidence bundle as its witness or accepting engineer", runSignOff)
	register("attach", "attach a file to a finished evidence bundle, signed", runAttach)
}

const signOffHelp = `Adds a signed amendment after the end of a finished, verified run: the
witness of its manual steps (--role witness) or the engineer who accepts
it (--role acceptance) signs the manifest and everything the run wrote,
with their own SSH key. Nothing the run wrote changes; the amendment is
chained after run_end and sealed with the signer's signature, and sat
verify lists who signed what.

A key that cannot sign here (a hardware key outside ssh-agent) signs in
two steps: --prepare FILE writes the statement to sign and prints the
ssh-keygen command; --statement FILE then adds the amendment with
FILE.sig. The other flags must be the same both times.`

const attachHelp = `Attaches FILE (a photo, a calibration certificate, the signed paper
report) to a finished, verified run as a signed amendment: the file is
copied to DIR/attachments/ and its digest chained after run_end, sealed
with the signer's key. --prepare and --statement work as for sign-off.`

// amendFlags are what sign-off and attach share.
type amendFlags struct {
	key                keyFlags
	by, note           string
	prepare, statement string
	pos                []string
	role               string
	fs                 *flag.FlagSet
}

func parseAmend(name, usage string, args []string, withRole bool) (amendFlags, error) {
	var f amendFlags
	f.fs = flag.NewFlagSet(usage, flag.ContinueOnError)
	f.fs.StringVar(&f.key.key, "key", "", "the signer's SSH key: a private key file, or KEY.pub held by ssh-agent")
	f.fs.StringVar(&f.key.passEnv, "passphrase-env", "", "environment variable holding the key's passphrase")
	f.fs.StringVar(&f.by, "by", "", "who signs (default $USER)")
	f.fs.StringVar(&f.note, "note", "", "a note the signature covers")
	f.fs.StringVar(&f.prepare, "prepare", "", "write the statement to sign with ssh-keygen -Y sign to this file, and stop")
	f.fs.StringVar(&f.statement, "statement", "", "add the amendment prepared in this file, with its signature FILE.sig")
	if withRole {
		f.fs.StringVar(&f.role, "role", "", "witness or acceptance")
	}
	pos, err := cli.Parse(f.fs, args)
	if err != nil {
		return f, err
	}
	f.pos = pos
	ways := 0
	for _, v := range []string{f.key.key, f.prepare, f.statement} {
		if v != "" {
			ways++
		}
	}
	switch {
	case ways != 1:
		return f, cli.Usagef("give one of --key KEY, --prepare FILE and --statement FILE")
	case withRole && f.role != evidence.RoleWitness && f.role != evidence.RoleAcceptance:
		return f, cli.Usagef("--role is witness or acceptance (got %q)", f.role)
	}
	return f, nil
}

func runSignOff(args []string, stdout, stderr io.Writer) int {
	f, err := parseAmend("sign-off", "DIR --role witness|acceptance (--key KEY | --prepare FILE | --statement FILE) [--by NAME] [--note TEXT]", args, true)
	if err == nil && len(f.pos) != 1 {
		err = cli.Usagef("want one evidence directory, got %d arguments", len(f.pos))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, signOffHelp)
		}
		return fail(stderr, "sign-off", f.fs, err)
	}
	am := evidence.Amendment{Purpose: evidence.PurposeSignOff, Role: f.role, Note: f.note}
	return amend(stdout, stderr, "sign-off", f, am, nil)
}

func runAttach(args []string, stdout, stderr io.Writer) int {
	f, err := parseAmend("attach", "DIR FILE (--key KEY | --prepare FILE | --statement FILE) [--by NAME] [--note TEXT]", args, false)
	if err == nil && len(f.pos) != 2 {
		err = cli.Usagef("want an evidence directory and a file, got %d arguments", len(f.pos))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, attachHelp)
		}
		return fail(stderr, "attach", f.fs, err)
	}
	data, err := os.ReadFile(f.pos[1])
	if err != nil {
		return fail(stderr, "attach", f.fs, err)
	}
	name := filepath.Base(f.pos[1])
	am := evidence.Amendment{Purpose: evidence.PurposeAttach, Role: evidence.RoleAttach, Note: f.note}
	return amend(stdout, stderr, "attach", f, am, func(a *evidence.Amender) error { return a.Attach(name, data) })
}

// prepared is what --prepare keeps beside the statement, so that
// --statement adds exactly the amendment that was signed.
type prepared struct {
	Amendment evidence.Amendment `json:"amendment"`
	At        time.Time          `json:"at"`
}

// amend writes one signed amendment, or prepares it.
func amend(stdout, stderr io.Writer, name string, f amendFlags, am evidence.Amendment, body func(*evidence.Amender) error) int {
	dir := f.pos[0]
	am.By = f.by
	if am.By == "" {
		am.By = os.Getenv("USER")
	}
	if am.By == "" {
		return fail(stderr, name, f.fs, cli.Usagef("--by NAME: who signs"))
	}
	var signer evidence.Signer
	var clk clock.Clock = clock.Real{}
	switch {
	case f.key.key != "":
		s, fp, err := evidenceSigner(f.key, os.LookupEnv)
		if err != nil {
			return fail(stderr, name, f.fs, err)
		}
		signer = s
		defer func() { fmt.Fprintf(stdout, "signed by %s\n", fp) }()
	case f.prepare != "":
		now := time.Now().UTC().Truncate(time.Second)
		clk = clock.NewFake(now)
		signer = &prepareSigner{path: f.prepare}
		raw, _ := json.MarshalIndent(prepared{Amendment: am, At: now}, "", "  ")
		if err := os.WriteFile(f.prepare+".amendment", append(raw, '\n'), 0o644); err != nil {
			return fail(stderr, name, f.fs, err)
		}
	case f.statement != "":
		s, at, err := readPrepared(f.statement, am)
		if err != nil {
			return fail(stderr, name, f.fs, err)
		}
		signer, clk = s, clock.NewFake(at)
	}
	a, err := evidence.Amend(dir, signer, am, clk)
	if err != nil {
		return fail(stderr, name, f.fs, err)
	}
	if body != nil {
		if err := body(a); err != nil {
			return fail(stderr, name, f.fs, errors.Join(err, a.Abandon()))
		}
	}
	err = a.Close()
	if errors.Is(err, errPrepared) {
		fmt.Fprintf(stdout, "statement written to %s; sign it, then add the amendment:\n  ssh-keygen -Y sign -f KEY -n %s %s\n  sat %s %s --statement %s (with the same flags)\n",
			f.prepare, evidence.Namespace, f.prepare, name, dir, f.prepare)
		return cli.ExitOK
	}
	if err != nil {
		return fail(stderr, name, f.fs, err)
	}
	fmt.Fprintf(stdout, "%s: amendment %d (%s, %s by %s) added to %s\n", name, a.Segment, am.Purpose, am.Role, am.By, dir)
	return cli.ExitOK
}

var errPrepared = errors.New("the statement is prepared, not signed")

// prepareSigner writes the statement it is asked to sign, and signs
// nothing: the amendment is undone, to be added again with the
// signature ssh-keygen makes.
type prepareSigner struct{ path string }

func (p *prepareSigner) Sign(message []byte) ([]byte, error) {
	if err := os.WriteFile(p.path, message, 0o644); err != nil {
		return nil, err
	}
	return nil, errPrepared
}

// signedStatement returns the signature made over exactly the prepared
// statement.
type signedStatement struct{ statement, sig []byte }

func (s *signedStatement) Sign(message []byte) ([]byte, error) {
	if !bytes.Equal(message, s.statement) {
		return nil, errors.New("the amendment is not the one prepared: the bundle changed since, or the flags differ (--role, --by, --note); prepare it again")
	}
	return s.sig, nil
}

func readPrepared(path string, am evidence.Amendment) (evidence.Signer, time.Time, error) {
	st, err := os.ReadFile(path)
	if err != nil {
		return nil, time.Time{}, err
	}
	sig, err := os.ReadFile(path + ".sig")
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("the signature: %w (sign the statement with ssh-keygen -Y sign -n %s %s)", err, evidence.Namespace, path)
	}
	raw, err := os.ReadFile(path + ".amendment")
	if err != nil {
		return nil, time.Time{}, err
	}
	var p prepared
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, time.Time{}, fmt.Errorf("%s.amendment: %w", path, err)
	}
	want := p.Amendment
	want.Manifest = ""
	if want != am {
		return nil, time.Time{}, fmt.Errorf("%s was prepared for %s (%s by %s), not %s (%s by %s): give the same flags", path, want.Purpose, want.Role, want.By, am.Purpose, am.Role, am.By)
	}
	return &signedStatement{statement: st, sig: sig}, p.At, nil
}
