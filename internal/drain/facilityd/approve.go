package facilityd

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/sign"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

func init() {
	register("approve", "sign a request (release a hold, place one, approve a drain, suppress) and send it", runApprove).
		WithExample("facilityd approve --action release --owner facility:cooling_redundancy_lost:cooling_loop=l2 --by alice --key ~/.ssh/id_ed25519 --why \"pump 1 replaced\"")
}

const approveHelp = `Signs a request with your SSH key (namespace seam-facilityd) and sends it
to facilityd, which takes it only if its allowed-signers file lists your
key for --by, and records it with your name in its journal:

  facilityd approve --action release --owner facility:cooling_redundancy_lost:cooling_loop=l2 \
      --by alice --key ~/.ssh/id_ed25519 --why "pump 1 replaced, loop checked"

Keys in an agent or on a token: write the request with --write-request
FILE, sign it with ssh-keygen -Y sign -n seam-facilityd -f KEY FILE, and
send both with --request FILE --signature FILE.sig.`

func runApprove(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("--action ACTION --by NAME (--key FILE | --request F --signature F.sig) [flags]", flag.ContinueOnError)
	var action, owner, domain, nodes, until, why, by, key, site, writeReq, reqFile, sigFile, passEnv string
	var cf clientFlags
	cf.register(fs)
	fs.StringVar(&action, "action", "release", "release, hold, drain (a drain the storm guard refused), suppress, unsuppress")
	fs.StringVar(&owner, "owner", "", "the hold's owner: facility:TYPE:DOMAIN, maintenance:ID, burnin:ID, rma:ID, person:NAME")
	fs.StringVar(&domain, "domain", "", "hold or suppress: the domain (cooling_loop=l2, module=mb)")
	fs.StringVar(&nodes, "nodes", "", "hold: the nodes, a hostlist")
	fs.StringVar(&until, "until", "", "suppress: until when (RFC 3339, or a duration from now: 4h)")
	fs.StringVar(&why, "why", "", "why: recorded with the approval")
	fs.StringVar(&by, "by", "", "who approves: your principal in facilityd's allowed-signers file")
	fs.StringVar(&key, "key", "", "your SSH private key")
	fs.StringVar(&passEnv, "passphrase-env", "", "environment variable holding the key's passphrase")
	fs.StringVar(&site, "site", "", "the site (default: the one facilityd at --addr runs)")
	fs.StringVar(&writeReq, "write-request", "", "write the request to FILE for ssh-keygen -Y sign, and stop")
	fs.StringVar(&reqFile, "request", "", "send this request file (signed with --signature)")
	fs.StringVar(&sigFile, "signature", "", "the request file's ssh-keygen -Y sign signature")
	if _, err := cli.Parse(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, approveHelp)
		}
		return program.Fail(stderr, "approve", fs, err)
	}
	var signed drain.Signed
	if reqFile != "" {
		req, err := os.ReadFile(reqFile)
		if err != nil {
			return program.Fail(stderr, "approve", fs, err)
		}
		sig, err := os.ReadFile(sigFile)
		if err != nil {
			return program.Fail(stderr, "approve", fs, fmt.Errorf("--request needs --signature: %w", err))
		}
		signed = drain.Signed{Request: bytes.TrimRight(req, "\n"), Signature: string(sig)}
	} else {
		if site == "" {
			doc, _, err := fetchStatus(cf)
			if err != nil {
				return program.Fail(stderr, "approve", fs, fmt.Errorf("the site is not given and cannot be asked: %w", err))
			}
			site = doc.Site
		}
		now := time.Now()
		r := drain.NewRequest(site, action, by, now)
		r.Owner, r.Domain, r.Nodes, r.Why = drain.Owner(owner), domain, nodes, why
		if until != "" {
			t, err := parseUntil(until, now)
			if err != nil {
				return program.Fail(stderr, "approve", fs, err)
			}
			r.Until = t
		}
		if err := r.Check(); err != nil {
			return program.Fail(stderr, "approve", fs, cli.Usagef("%v", err))
		}
		if writeReq != "" {
			b, _ := json.Marshal(r)
			if err := os.WriteFile(writeReq, b, 0o644); err != nil {
				return program.Fail(stderr, "approve", fs, err)
			}
			fmt.Fprintf(stdout, "wrote %s: sign it with ssh-keygen -Y sign -n %s -f KEY %s\n", writeReq, drain.Namespace, writeReq)
			return cli.ExitOK
		}
		if key == "" {
			return program.Fail(stderr, "approve", fs, cli.Usagef("--key is needed (or --write-request, then --request and --signature)"))
		}
		var pass []byte
		if passEnv != "" {
			pass = []byte(os.Getenv(passEnv))
		}
		signer, err := sign.LoadSigner(key, pass)
		if err != nil {
			return program.Fail(stderr, "approve", fs, err)
		}
		if signed, err = drain.Sign(r, signer); err != nil {
			return program.Fail(stderr, "approve", fs, err)
		}
	}
	return send(cf, signed, stdout, stderr)
}

func parseUntil(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d).UTC().Truncate(time.Second), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, cli.Usagef("--until %q: RFC 3339 or a duration", s)
	}
	return t, nil
}

func send(cf clientFlags, s drain.Signed, stdout, stderr io.Writer) int {
	body, _ := json.Marshal(s)
	resp, err := cf.post("/v1/requests", bytes.NewReader(body), 2*time.Minute)
	if err != nil {
		fmt.Fprintf(stderr, "facilityd approve: %v\n", err)
		return cli.ExitTool
	}
	defer resp.Body.Close()
	var a RequestAnswer
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &a); err != nil {
		fmt.Fprintf(stderr, "facilityd approve: %s: %s\n", resp.Status, strings.TrimSpace(string(raw)))
		return cli.ExitTool
	}
	switch resp.StatusCode {
	case http.StatusOK:
		fmt.Fprintln(stdout, a.Result.Message)
		if len(a.Result.Returned) > 0 {
			fmt.Fprintf(stdout, "returned: %s\n", hostlist.Compress(a.Result.Returned))
		}
		for _, n := range slices.Sorted(maps.Keys(a.Result.Kept)) {
			fmt.Fprintf(stdout, "kept: %s, held by %s\n", n, hold.Join(a.Result.Kept[n]))
		}
		if len(a.Result.Left) > 0 {
			fmt.Fprintf(stdout, "left as an operator set them: %s\n", hostlist.Compress(a.Result.Left))
		}
		return cli.ExitOK
	case http.StatusConflict:
		fmt.Fprintf(stderr, "facilityd approve: refused:\n")
		for _, r := range a.Reasons {
			fmt.Fprintf(stderr, "  - %s\n", r)
		}
		return ExitRefused
	case http.StatusForbidden:
		fmt.Fprintf(stderr, "facilityd approve: not approved: %s\n", a.Error)
		return ExitRefused
	}
	fmt.Fprintf(stderr, "facilityd approve: %s: %s\n", resp.Status, a.Error)
	return cli.ExitTool
}
