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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/comtrade"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

func init() {
	register("sign-off", "sign a finished evidence bundle as its witness or accepting engineer", runSignOff).
		WithExample("sat sign-off out/run1 --role witness --key ~/.ssh/id_ed25519 --by \"Jane Roe\"")
	register("attach", "attach a file to a finished evidence bundle, signed", runAttach).
		WithExample("sat attach out/run1 pq/EVT0005.cfg --key ~/.ssh/id_ed25519 --by \"Jane Roe\"")
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
with the signer's key. --prepare and --statement work as for sign-off.

With --case, FILE is a power-quality analyser's COMTRADE capture of that
case (NAME.cfg with its NAME.dat beside it, or one NAME.cff): both files
are attached, with a record of the channel to grade (--channel), its
nominal RMS value (--nominal, default the case's reference voltage) and
the mask (--mask itic, or custom points DURATION:MIN-MAX,... in seconds
and % of nominal, e.g. 0.02:0-120,0.5:70-120,1e9:90-110). Every audit
(verify, report) aligns the capture's trigger on a commanded edge of the
case (--step STEP --edge N: the step's Nth; by default the edge nearest
the trigger) and grades it; sat attach prints the verdict.`

// amendFlags are what sign-off and attach share.
type amendFlags struct {
	key                keyFlags
	by, note           string
	prepare, statement string
	pos                []string
	role               string
	fs                 *flag.FlagSet
	capture            captureFlags // attach only
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
	} else {
		f.capture.register(f.fs)
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
	f, err := parseAmend("attach", "DIR FILE (--key KEY | --prepare FILE | --statement FILE) [--by NAME] [--note TEXT] [--case ID --channel CH [--mask itic|POINTS] [--nominal V] [--step STEP [--edge N]]]", args, false)
	if err == nil && len(f.pos) != 2 {
		err = cli.Usagef("want an evidence directory and a file, got %d arguments", len(f.pos))
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, attachHelp)
		}
		return fail(stderr, "attach", f.fs, err)
	}
	am := evidence.Amendment{Purpose: evidence.PurposeAttach, Role: evidence.RoleAttach, Note: f.note}
	if f.capture.caseID != "" {
		body, err := f.capture.body(f.pos[1], stdout)
		if err != nil {
			return fail(stderr, "attach", f.fs, err)
		}
		code := amend(stdout, stderr, "attach", f, am, body)
		if code == cli.ExitOK && f.prepare == "" {
			printCaptures(stdout, f.pos[0], f.capture.caseID)
		}
		return code
	}
	if f.capture.set() {
		return fail(stderr, "attach", f.fs, cli.Usagef("--channel, --nominal, --mask, --step and --edge describe a capture: give --case ID too"))
	}
	data, err := os.ReadFile(f.pos[1])
	if err != nil {
		return fail(stderr, "attach", f.fs, err)
	}
	name := filepath.Base(f.pos[1])
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
	keepHead(stdout, dir)
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

// captureFlags describe a COMTRADE capture attached to a case.
type captureFlags struct {
	caseID, channel, mask, step string
	nominal                     float64
	edge                        int
}

func (c *captureFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.caseID, "case", "", "FILE is a COMTRADE capture (.cfg or .cff) of this case")
	fs.StringVar(&c.channel, "channel", "", "the capture's analog channel to grade (its id in the cfg, e.g. VA)")
	fs.StringVar(&c.mask, "mask", "itic", "itic, or custom points DURATION_S:MIN%-MAX%,... in increasing duration")
	fs.Float64Var(&c.nominal, "nominal", 0, "the channel's nominal RMS value in its primary unit (default: the case's reference voltage)")
	fs.StringVar(&c.step, "step", "", "align on this step's commanded edges only")
	fs.IntVar(&c.edge, "edge", 0, "align on this commanded edge of the step (or case), from 1 (default: 1 with --step; without, the edge nearest the capture's trigger, which needs the clocks within half the time between edges)")
}

func (c *captureFlags) set() bool {
	return c.channel != "" || c.nominal != 0 || c.step != "" || c.mask != "itic" || c.edge != 0
}

// body reads and checks the capture, and returns what the amendment
// adds: its files and the capture record.
func (c *captureFlags) body(path string, stdout io.Writer) (func(*evidence.Amender) error, error) {
	if c.channel == "" {
		return nil, cli.Usagef("--channel: which analog channel of the capture to grade")
	}
	if c.edge < 0 {
		return nil, cli.Usagef("--edge %d: edges count from 1", c.edge)
	}
	if c.edge == 0 && c.step != "" {
		c.edge = 1
	}
	points, err := parseMask(c.mask)
	if err != nil {
		return nil, cli.Usagef("--mask %q: %v", c.mask, err)
	}
	capt, err := comtrade.Open(path)
	if err != nil {
		return nil, err
	}
	ch := capt.Channel(c.channel)
	if ch < 0 {
		var ids []string
		for _, a := range capt.Analogs {
			ids = append(ids, a.ID)
		}
		return nil, fmt.Errorf("%s has no analog channel %q: it has %s", path, c.channel, strings.Join(ids, ", "))
	}
	files := []string{path}
	if !strings.EqualFold(filepath.Ext(path), ".cff") {
		dat, err := comtrade.DataFile(path)
		if err != nil {
			return nil, err
		}
		files = append(files, dat)
	}
	names := make([]string, len(files))
	data := make([][]byte, len(files))
	for i, f := range files {
		if data[i], err = os.ReadFile(f); err != nil {
			return nil, err
		}
		names[i] = filepath.Base(f)
	}
	return func(a *evidence.Amender) error {
		rec := evidence.CaptureRecord{Case: c.caseID, Step: c.step, Edge: c.edge, Channel: capt.Analogs[ch].ID, Nominal: c.nominal, Mask: maskName(c.mask), Points: points}
		if err := c.checkCase(a.Report(), &rec); err != nil {
			return err
		}
		r, err := evidence.GradeCapture(a.Report(), &rec, names, data)
		if err == nil && r.Verdict.Outcome == grade.Error {
			err = errors.New(r.Verdict.Detail)
		}
		if err != nil {
			return fmt.Errorf("%s: %w (attach it without --case to keep it as a file)", path, err)
		}
		if err := a.AttachCapture(rec, names, data); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "capture %s: %s, %g samples/s, %d samples, channel %s (%s), nominal %g, %s mask\n",
			names[0], c.caseID, capt.SampleRate(), len(capt.Time), rec.Channel, capt.Analogs[ch].Unit, rec.Nominal, rec.Mask)
		return nil
	}, nil
}

// checkCase checks the case and step are the plan's, and takes the
// nominal from the case's reference voltage when none was given.
func (c *captureFlags) checkCase(rep *evidence.Report, rec *evidence.CaptureRecord) error {
	if rep.Plan == nil {
		return fmt.Errorf("the bundle has no plan to find case %s in", c.caseID)
	}
	var pc *plan.Case
	for i := range rep.Plan.Cases {
		if rep.Plan.Cases[i].ID == c.caseID {
			pc = &rep.Plan.Cases[i]
		}
	}
	if pc == nil {
		return fmt.Errorf("--case %s: the plan has no such case (sat report lists them)", c.caseID)
	}
	if c.step != "" && !slices.ContainsFunc(pc.Steps, func(s plan.Step) bool { return s.ID == c.step }) {
		return fmt.Errorf("--step %s: case %s has no such step", c.step, c.caseID)
	}
	if rec.Nominal > 0 {
		return nil
	}
	for _, ch := range pc.Checks {
		if ch.Reference != nil && ch.Unit == "V" {
			rec.Nominal = *ch.Reference
			return nil
		}
	}
	return fmt.Errorf("--nominal: case %s has no reference voltage to take the channel's nominal from; give it", c.caseID)
}

func maskName(s string) string {
	if strings.EqualFold(s, "itic") {
		return "ITIC"
	}
	return "custom"
}

// parseMask reads itic or DURATION:MIN-MAX,... (seconds, % of nominal).
func parseMask(s string) ([]grade.MaskPoint, error) {
	if strings.EqualFold(s, "itic") {
		return maskPoints(contract.ITIC), nil
	}
	var out []grade.MaskPoint
	for i, f := range strings.Split(s, ",") {
		d, lim, ok := strings.Cut(strings.TrimSpace(f), ":")
		lo, hi, ok2 := strings.Cut(lim, "-")
		dur, err1 := strconv.ParseFloat(strings.TrimSuffix(d, "s"), 64)
		mn, err2 := strconv.ParseFloat(strings.TrimSuffix(lo, "%"), 64)
		mx, err3 := strconv.ParseFloat(strings.TrimSuffix(hi, "%"), 64)
		if !ok || !ok2 || err1 != nil || err2 != nil || err3 != nil || dur <= 0 || mn > mx {
			return nil, fmt.Errorf("point %d %q: want DURATION_S:MIN-MAX, e.g. 0.5:70-120", i+1, f)
		}
		if i > 0 && dur <= out[i-1].DurationS {
			return nil, fmt.Errorf("point %d lasts %gs, not longer than point %d: points go in increasing duration", i+1, dur, i)
		}
		out = append(out, grade.MaskPoint{DurationS: dur, MinPct: mn, MaxPct: mx})
	}
	return out, nil
}

// maskPoints is a contract mask in numbers.
func maskPoints(m []contract.MaskPoint) []grade.MaskPoint {
	out := make([]grade.MaskPoint, len(m))
	for i, p := range m {
		out[i] = grade.MaskPoint{DurationS: p.Duration.Canon, MinPct: p.Min.Canon, MaxPct: p.Max.Canon}
	}
	return out
}

// printCaptures prints how the audit grades the case's captures.
func printCaptures(w io.Writer, dir, caseID string) {
	rep, err := evidence.Audit(dir, evidence.AuditOptions{})
	if err != nil {
		return
	}
	for _, c := range rep.Captures {
		if c.Case == caseID {
			fmt.Fprintf(w, "%s %s: %s\n", c.Result.Verdict.Outcome, c.Files[0], c.Result.Verdict.Detail)
		}
	}
}
