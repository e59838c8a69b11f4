package lifecyclecmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/lifecycle"
)

func init() {
	register("init", "make a store for a site: every element of its contracts, in state design", runInit).
		WithExample("sat lifecycle init contracts/examples/threemodule --access access.json --key ops")
	register("import", "import the as-built inventory from a handover file (either form)", runImport).
		WithExample("sat lifecycle import contracts/examples/threemodule/inventory/racks.json --key integrator")
	register("export", "write the as-built inventory back to a handover file", runExport).
		WithExample("sat lifecycle export -o as-built.json")
	register("access", "show or set the store's access policy", runAccess).
		WithExample("sat lifecycle access show")
	register("check", "check the whole store: every element against its history, every signature, the sealed chain", runCheck).
		WithExample("sat lifecycle check --anchor head.json")
	register("head", "the store's newest sealed head, to keep outside it (check --anchor)", runHead).
		WithExample("sat lifecycle head --out head.json")
	register("info", "what the store is: engine, schema, site, counts, TLS", runInfo).
		WithExample("sat lifecycle info")
}

const initHelp = `Makes a new store for the site of CONTRACTS: every element of its
inventory graph (modules, racks, trays, parts, the power and cooling
spine) in state design, and the access policy (--access FILE, see
docs/lifecycle.md), signed by a member the policy lets change it. The
store is a SQLite file (made here), or an empty PostgreSQL database.`

func runInit(args []string, stdout, stderr io.Writer) int {
	c := newCommon("CONTRACTS --access POLICY (--key KEY | --db-role) [--store S]").withAuth()
	var access string
	c.fs.StringVar(&access, "access", "", "the access policy (JSON, seam.lifecycle.access/v1)")
	pos, err := c.parse(args, 1, "a contract directory")
	if err == nil && access == "" {
		err = cli.Usagef("--access POLICY: who may change what")
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, initHelp)
		}
		return fail(stderr, "init", c, err)
	}
	p, err := lifecycle.ReadPolicyFile(access)
	if err != nil {
		return fail(stderr, "init", c, err)
	}
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "init", c, err)
	}
	ctr, diags, err := contract.Load(pos[0])
	if err != nil {
		return fail(stderr, "init", c, err)
	}
	if diags.Count(diag.Error) > 0 {
		return fail(stderr, "init", c, fmt.Errorf("%s has %d error(s): contractc vet %s shows them", pos[0], diags.Count(diag.Error), pos[0]))
	}
	g, gd := ctr.Graph()
	if gd.Count(diag.Error) > 0 {
		return fail(stderr, "init", c, fmt.Errorf("the inventory of %s has %d error(s): contractc vet %s shows them", pos[0], gd.Count(diag.Error), pos[0]))
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := lifecycle.Init(ctx, c.config(), a, g, p)
	if err != nil {
		return fail(stderr, "init", c, err)
	}
	if s == nil { // a dry run
		return cli.ExitOK
	}
	defer s.Close()
	in, err := s.Info(ctx)
	if err != nil {
		return fail(stderr, "init", c, err)
	}
	fmt.Fprintf(stdout, "initialised %s (%s): site %s, %d elements in state design, store id %s\n", s.Name(), s.Engine(), in.Site, in.Elements, in.ID)
	return cli.ExitOK
}

func runImport(args []string, stdout, stderr io.Writer) int {
	c := newCommon("FILE (--key KEY | --db-role) [--reason TEXT]").withAuth()
	var reason string
	c.fs.StringVar(&reason, "reason", "", "why (default: as-built from FILE)")
	pos, err := c.parse(args, 1, "a handover file")
	if err != nil {
		return fail(stderr, "import", c, err)
	}
	raw, err := os.ReadFile(pos[0])
	if err != nil {
		return fail(stderr, "import", c, err)
	}
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "import", c, err)
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "import", c, err)
	}
	defer s.Close()
	im, err := s.Import(ctx, a, pos[0], raw, reason)
	if err != nil {
		return fail(stderr, "import", c, err)
	}
	fmt.Fprintf(stdout, "imported %s: %d rack record(s), %d node record(s); %d element(s) changed (event %d)\n", pos[0], im.Racks, im.Nodes, im.Changed, im.Seq)
	return cli.ExitOK
}

func runExport(args []string, stdout, stderr io.Writer) int {
	c := newCommon("[--form racks|nodes] [-o FILE]")
	var form, out string
	c.fs.StringVar(&form, "form", lifecycle.FormRacks, "racks (seam.handover/v1) or nodes (the design brief's records)")
	c.fs.StringVar(&out, "o", "", "write here (default: standard output)")
	if _, err := c.parse(args, 0, "no arguments"); err != nil {
		return fail(stderr, "export", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "export", c, err)
	}
	defer s.Close()
	b, err := s.Export(ctx, form)
	if err != nil {
		return fail(stderr, "export", c, err)
	}
	if out == "" {
		_, _ = stdout.Write(b)
		return cli.ExitOK
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fail(stderr, "export", c, err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", out)
	return cli.ExitOK
}

func runAccess(args []string, stdout, stderr io.Writer) int {
	c := newCommon("show | set POLICY (--key KEY | --db-role) [--reason TEXT]").withAuth()
	var reason string
	c.fs.StringVar(&reason, "reason", "", "why the policy changes")
	pos, err := c.parse(args, -1, "")
	if err == nil && (len(pos) == 0 || (pos[0] == "show" && len(pos) != 1) || (pos[0] == "set" && len(pos) != 2) || (pos[0] != "show" && pos[0] != "set")) {
		err = cli.Usagef("want show, or set POLICY")
	}
	if err != nil {
		return fail(stderr, "access", c, err)
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "access", c, err)
	}
	defer s.Close()
	if pos[0] == "show" {
		p, v, err := s.Policy(ctx)
		if err != nil {
			return fail(stderr, "access", c, err)
		}
		fmt.Fprintf(stdout, "# access policy version %d\n", v)
		_, _ = stdout.Write(p.Marshal())
		return cli.ExitOK
	}
	p, err := lifecycle.ReadPolicyFile(pos[1])
	if err != nil {
		return fail(stderr, "access", c, err)
	}
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "access", c, err)
	}
	v, err := s.SetPolicy(ctx, a, p, reason)
	if err != nil {
		return fail(stderr, "access", c, err)
	}
	fmt.Fprintf(stdout, "access policy version %d in force\n", v)
	return cli.ExitOK
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	c := newCommon("[--anchor FILE]").withFormat()
	var anchorFile string
	c.fs.StringVar(&anchorFile, "anchor", "", "a head kept outside the store (sat lifecycle head --out): a history cut back to before it is found")
	if _, err := c.parse(args, 0, "no arguments"); err != nil {
		return fail(stderr, "check", c, err)
	}
	var anchor *lifecycle.Anchor
	if anchorFile != "" {
		a, err := lifecycle.ReadAnchor(anchorFile)
		if err != nil {
			return fail(stderr, "check", c, err)
		}
		anchor = a
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "check", c, err)
	}
	defer s.Close()
	r, err := s.Check(ctx, anchor)
	if err != nil {
		return fail(stderr, "check", c, err)
	}
	emit(stdout, c.format, r, func(w io.Writer) {
		for _, p := range r.Problems {
			fmt.Fprintln(w, "PROBLEM:", p)
		}
		for _, n := range r.Notes {
			fmt.Fprintln(w, "note:", n)
		}
		verdict := "OK"
		if !r.OK() {
			verdict = fmt.Sprintf("%d PROBLEM(S)", len(r.Problems))
		}
		fmt.Fprintf(w, "%s: %s: %d elements, %d events, %d signed statement(s) verified, %d seal(s) over the chain, %d hold(s)\n",
			verdict, s.Name(), r.Elements, r.Events, r.Statements, r.Seals, r.Holds)
		if r.StampedHead > 0 {
			fmt.Fprintf(w, "time-stamped: every event up to %d existed by %s (%s)\n", r.StampedHead, stamp(r.StampedAt), r.StampedBy)
		}
		if !r.Anchored && r.SealedHead > 0 {
			fmt.Fprintf(w, "anything after event %d (sealed %s) is not provable: a history cut back to it would look the same. Keep the head outside the store (sat lifecycle head --out FILE) and check with --anchor FILE\n",
				r.SealedHead, stamp(r.SealedAt))
		}
	})
	if !r.OK() {
		return cli.ExitFindings
	}
	return cli.ExitOK
}

func runHead(args []string, stdout, stderr io.Writer) int {
	c := newCommon("[--out FILE]")
	var out string
	c.fs.StringVar(&out, "out", "", "write the head to FILE (kept outside the store: sat lifecycle check --anchor FILE) instead of printing it")
	if _, err := c.parse(args, 0, "no arguments"); err != nil {
		return fail(stderr, "head", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "head", c, err)
	}
	defer s.Close()
	if err := s.Stamp(ctx); err != nil {
		fmt.Fprintf(stderr, "sat lifecycle head: warning: %v; the head is written without a time-stamp\n", err)
	}
	a, err := s.Head(ctx)
	if err != nil {
		return fail(stderr, "head", c, err)
	}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fail(stderr, "head", c, err)
	}
	b = append(b, '\n')
	if out == "" {
		_, _ = stdout.Write(b)
		return cli.ExitOK
	}
	if err := lifecycle.WriteAnchor(out, a); err != nil {
		return fail(stderr, "head", c, err)
	}
	stamped := ""
	if a.TimeStamp != "" {
		stamped = ", time-stamped"
	}
	fmt.Fprintf(stdout, "wrote %s: event %d of store %s, sealed %s by %s%s\n", out, a.Head, a.Store, a.At, a.By, stamped)
	return cli.ExitOK
}

func runInfo(args []string, stdout, stderr io.Writer) int {
	c := newCommon("").withFormat()
	if _, err := c.parse(args, 0, "no arguments"); err != nil {
		return fail(stderr, "info", c, err)
	}
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "info", c, err)
	}
	defer s.Close()
	in, err := s.Info(ctx)
	if err != nil {
		return fail(stderr, "info", c, err)
	}
	emit(stdout, c.format, in, func(w io.Writer) {
		fmt.Fprintf(w, "store     %s (%s %s)\n", in.Name, in.Engine, in.ServerVersion)
		fmt.Fprintf(w, "site      %s (store id %s, made %s)\n", in.Site, in.ID, stamp(in.Created))
		fmt.Fprintf(w, "schema    version %d (this seam: %d)\n", in.Schema, lifecycle.SchemaVersion())
		fmt.Fprintf(w, "contents  %d elements, %d events; access policy version %d\n", in.Elements, in.Events, in.Policy)
		if in.Engine == lifecycle.Postgres {
			tls := "no: the server does not offer TLS"
			if in.TLS {
				tls = "yes"
			}
			fmt.Fprintf(w, "session   role %s, TLS %s\n", in.DBUser, tls)
		}
	})
	return cli.ExitOK
}
