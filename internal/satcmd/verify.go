package satcmd

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/results"
	"github.com/seamdc/seam/internal/runner"
)

func init() {
	register("verify", "check an evidence bundle: chain, digests, signature, verdicts", runVerify)
}

const verifyHelp = `Checks an evidence bundle written by sat run: the journal's hash chain,
the samples against every checkpoint, for a finished run the manifest's
digests and its signature (--trust KEYS: only these keys may sign), the
results against their schema and the journal, and every verdict
re-graded from the raw samples. A run that was killed or aborted
verifies up to its last checkpoint.

Exit codes: 0 intact, 2 problems found, 1 the bundle cannot be read.`

func runVerify(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR [--trust authorized_keys]", flag.ContinueOnError)
	trust := fs.String("trust", "", "a file of SSH public keys (authorized_keys format) allowed to sign the manifest; the manifest must be signed")
	pos, err := cli.Parse(fs, args)
	if err == nil && len(pos) != 1 {
		err = cli.Usagef("want one evidence directory, got %d arguments", len(pos))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, verifyHelp)
		}
		return fail(stderr, "verify", fs, err)
	}
	dir := pos[0]
	var keys []ssh.PublicKey
	if *trust != "" {
		if keys, err = readKeys(*trust); err != nil {
			return fail(stderr, "verify", fs, err)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, evidence.JournalFile)); err != nil || st.IsDir() {
		return fail(stderr, "verify", fs, fmt.Errorf("%s is not an evidence bundle: no %s", dir, evidence.JournalFile))
	}
	rep, err := evidence.Verify(dir, keys)
	if err != nil {
		return fail(stderr, "verify", fs, err)
	}
	problems := rep.Problems
	chainOK := len(problems) == 0
	fmt.Fprintf(stdout, "journal: %d records, %d cases completed\n", rep.Records, rep.Cases)
	if rep.Complete {
		fmt.Fprintln(stdout, "run: finished (manifest present)")
	} else {
		fmt.Fprintf(stdout, "run: not finished (no manifest): verified up to its last checkpoint; %d sample bytes after it are unverified\n", rep.Unverified)
	}
	switch {
	case rep.Signed:
		fmt.Fprintf(stdout, "signature: manifest signed by %s\n", rep.SignedBy)
	case rep.Complete:
		fmt.Fprintln(stdout, "signature: none")
	}
	problems = append(problems, checkResults(dir)...)
	if chainOK {
		rg, err := runner.Regrade(dir)
		if err != nil {
			problems = append(problems, "re-grading: "+err.Error())
		} else {
			fmt.Fprintf(stdout, "verdicts: %d checks of %d cases re-graded from the raw samples\n", rg.Checks, rg.Cases)
			problems = append(problems, rg.Mismatches...)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(stdout, "FAILED: %d problem(s):\n", len(problems))
		for _, p := range problems {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
		return cli.ExitFindings
	}
	fmt.Fprintf(stdout, "OK: %s is intact\n", dir)
	return cli.ExitOK
}

// checkResults checks results.json, if the run wrote one: its schema,
// and its digest against the journal's last record of it (a manifest
// covers it too once the run finished).
func checkResults(dir string) []string {
	path := filepath.Join(dir, evidence.ResultsFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	if _, err := results.Decode(raw); err != nil {
		out = append(out, fmt.Sprintf("%s: %v", evidence.ResultsFile, err))
	}
	want, err := lastFileDigest(dir, evidence.ResultsFile)
	switch {
	case err != nil:
		out = append(out, err.Error())
	case want == "":
		out = append(out, fmt.Sprintf("%s: the journal never recorded it: it was added", evidence.ResultsFile))
	case want != runner.Digest(raw):
		out = append(out, fmt.Sprintf("%s: digest %s, the journal recorded %s: the file was altered", evidence.ResultsFile, runner.Digest(raw), want))
	}
	return out
}

// lastFileDigest is the digest of the last "file" record naming name.
func lastFileDigest(dir, name string) (string, error) {
	f, err := os.Open(filepath.Join(dir, evidence.JournalFile))
	if err != nil {
		return "", err
	}
	defer f.Close()
	digest := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r evidence.Record
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Kind != "file" {
			continue
		}
		var d struct{ Name, Digest string }
		if json.Unmarshal(r.Data, &d) == nil && d.Name == name {
			digest = d.Digest
		}
	}
	return digest, sc.Err()
}

func readKeys(path string) ([]ssh.PublicKey, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys []ssh.PublicKey
	for len(raw) > 0 {
		k, _, _, rest, err := ssh.ParseAuthorizedKey(raw)
		if err != nil {
			break
		}
		keys = append(keys, k)
		raw = rest
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no SSH public key in it", path)
	}
	return keys, nil
}
