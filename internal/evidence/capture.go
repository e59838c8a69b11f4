package evidence

import (
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/comtrade"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// KindCapture is an amendment's record of a waveform capture attached
// to a case: a power-quality analyser's COMTRADE record, graded against
// a voltage-tolerance mask by every audit.
const KindCapture = "capture"

// maxCaptureBytes bounds a capture file the audit reads (a 10 s record
// at 10 kHz × 8 channels is 2.6 MB in BINARY, 10 MB in ASCII).
const maxCaptureBytes = 256 << 20

// CaptureRecord says what a capture proves: the case and step whose
// commanded edge it recorded, its files (attachments/NAME.cfg and .dat,
// or one .cff), the analog channel graded, the channel's nominal RMS
// value (primary units), and the mask, by name and in numbers.
type CaptureRecord struct {
	Case string `json:"case"`
	Step string `json:"step,omitempty"`
	// Edge picks the commanded edge to align on, from 1 in the order
	// CaseEdges lists them; 0: the edge nearest the capture's event
	// (which needs the clocks to differ by less than half the time
	// between edges).
	Edge    int               `json:"edge,omitempty"`
	Files   []string          `json:"files"`
	Channel string            `json:"channel"`
	Nominal float64           `json:"nominal"`
	Mask    string            `json:"mask"`
	Points  []grade.MaskPoint `json:"points"`
	// Verdict and OffsetS are what grading found when the capture was
	// attached (GradeCapture): the outcome and the analyser's clock
	// offset (edge − trigger, s), signed with it; every audit grades
	// again and reports a difference as a mismatch.
	Verdict grade.Outcome `json:"verdict,omitempty"`
	OffsetS *float64      `json:"offset_s,omitempty"`
}

// AuditCapture is a capture the audit found and re-graded.
type AuditCapture struct {
	Record  int64 // the capture record
	Segment int   // the amendment that attached it
	CaptureRecord
	// Rate is the capture's sample rate, Samples its sample count, Unit
	// the graded channel's (all 0 or "" when it could not be read).
	Rate    float64
	Samples int
	Unit    string
	Result  grade.CaptureResult
	signed  *Segment
}

// AttachCapture attaches a capture's files (name → bytes, plain names)
// and the record that grades them.
func (a *Amender) AttachCapture(rec CaptureRecord, files []string, data [][]byte) error {
	if rec.Case == "" || rec.Channel == "" || len(rec.Points) == 0 {
		return fmt.Errorf("a capture needs a case, a channel and a mask")
	}
	rec.Files = nil
	for i, name := range files {
		if err := a.Attach(name, data[i]); err != nil {
			return err
		}
		rec.Files = append(rec.Files, AttachDir+"/"+name)
	}
	return a.Append(KindCapture, rec.Case, rec)
}

// capture reads a capture record; it counts only inside an amendment.
func (a *auditor) capture(r Record) {
	var cr CaptureRecord
	if err := strictJSON(r.Data, &cr); err != nil {
		a.problem("capture record %d: %v", r.Seq, err)
		return
	}
	if a.segOpen == nil {
		a.problem("capture record %d is not inside a signed amendment", r.Seq)
		return
	}
	if len(a.rep.Captures) >= maxListed {
		a.problem("capture record %d: more than %d captures: not a journal sat wrote", r.Seq, maxListed)
		return
	}
	a.rep.Captures = append(a.rep.Captures, &AuditCapture{Record: r.Seq, Segment: a.segOpen.N, CaptureRecord: cr, signed: a.segOpen})
}

// regradeCaptures aligns and grades every capture of a signed amendment
// from the attached bytes, against the last attempt of its case.
func (a *auditor) regradeCaptures() {
	counting := a.rep.Counting()
	for _, c := range a.rep.Captures {
		c.Result.Verdict = grade.Verdict{Check: "capture " + c.Channel, Kind: "mask"}
		msg := a.gradeCapture(c, counting[c.Case])
		if msg != "" {
			c.Result.Verdict.Outcome, c.Result.Verdict.Detail = grade.Error, msg
		}
	}
	a.failByCaptures()
}

// failByCaptures fails, in the results the one reader gives, each case
// a signed capture shows outside its mask: polling passed what the
// analyser saw fail. results.json, signed with the run, is not
// rewritten; the capture's amendment is the later evidence.
func (a *auditor) failByCaptures() {
	res := a.rep.Results
	if res == nil {
		return
	}
	for _, c := range a.rep.Captures {
		if c.Result.Verdict.Outcome != grade.Fail {
			continue
		}
		for i := range res.Cases {
			rc := &res.Cases[i]
			if rc.ID != c.Case {
				continue
			}
			why := fmt.Sprintf("the %s mask fails on the capture %s: %s", c.Mask, c.Files[0], c.Result.Verdict.Detail)
			rc.Outcome, rc.Reason = grade.Fail, strings.TrimPrefix(rc.Reason+"; "+why, "; ")
			if !slices.Contains(a.rep.FailedByCapture, rc.ID) {
				a.rep.FailedByCapture = append(a.rep.FailedByCapture, rc.ID)
			}
		}
	}
	if len(a.rep.FailedByCapture) > 0 {
		res.Summarize()
	}
}

func (a *auditor) gradeCapture(c *AuditCapture, ac *AuditCase) string {
	if c.signed.Seal == nil {
		return fmt.Sprintf("amendment %d, which attached it, is not signed", c.Segment)
	}
	data, err := a.readCaptureFiles(c.Files)
	if err != nil {
		return err.Error()
	}
	msg := gradeCaptureBytes(c, ac, data)
	if msg == "" {
		a.compareCapture(c)
	}
	return msg
}

// compareCapture reports a capture whose verdict or offset the audit
// does not reproduce from what was signed at attach time.
func (a *auditor) compareCapture(c *AuditCapture) {
	got := c.Result
	switch {
	case c.Verdict != "" && c.Verdict != got.Verdict.Outcome:
		a.rep.Mismatches = append(a.rep.Mismatches, Mismatch{Case: c.Case, Check: got.Verdict.Check, Recorded: string(c.Verdict), Regrade: string(got.Verdict.Outcome),
			Detail: fmt.Sprintf("capture record %d: %s", c.Record, got.Verdict.Detail)})
	case c.OffsetS != nil && math.Abs(*c.OffsetS-got.Align.OffsetS) > 1e-6:
		a.rep.Mismatches = append(a.rep.Mismatches, Mismatch{Case: c.Case, Check: got.Verdict.Check, Recorded: string(c.Verdict), Regrade: string(got.Verdict.Outcome),
			Detail: fmt.Sprintf("capture record %d was aligned with an offset of %+.6f s; re-aligned, %+.6f s", c.Record, *c.OffsetS, got.Align.OffsetS)})
	}
}

// GradeCapture grades a capture about to be attached (files: plain
// names, data: their bytes) against the case's counting attempt in the
// bundle rep audits, as every audit will once it is attached: rec's
// Verdict and OffsetS are filled in to be signed with it. An error
// says what makes it ungradable.
func GradeCapture(rep *Report, rec *CaptureRecord, files []string, data [][]byte) (grade.CaptureResult, error) {
	c := &AuditCapture{CaptureRecord: *rec}
	c.Files = files
	if msg := gradeCaptureBytes(c, rep.Counting()[rec.Case], data); msg != "" {
		return c.Result, errors.New(msg)
	}
	off := c.Result.Align.OffsetS
	rec.Verdict, rec.OffsetS = c.Result.Verdict.Outcome, &off
	return c.Result, nil
}

// gradeCaptureBytes parses the capture's bytes and grades it against
// the case's attempt ac.
func gradeCaptureBytes(c *AuditCapture, ac *AuditCase, data [][]byte) string {
	if ac == nil || ac.End.Timeline == nil {
		return fmt.Sprintf("case %s has no completed attempt with a timeline to align the capture on", c.Case)
	}
	capt, err := parseCapture(c.Files, data)
	if err != nil {
		return err.Error()
	}
	ch := capt.Channel(c.Channel)
	if ch < 0 {
		var ids []string
		for _, an := range capt.Analogs {
			ids = append(ids, an.ID)
		}
		return fmt.Sprintf("%s has no analog channel %q (it has %s)", c.Files[0], c.Channel, strings.Join(ids, ", "))
	}
	w, note := captureWave(capt, ch)
	c.Rate, c.Samples, c.Unit = w.Rate, len(w.Values), capt.Analogs[ch].Unit
	edges := CaseEdges(*ac.End.Timeline, c.Step)
	if c.Edge > 0 {
		if c.Edge > len(edges) {
			return fmt.Sprintf("edge %d: case %s%s commanded %d edges", c.Edge, c.Case, stepText(c.Step), len(edges))
		}
		edges = edges[c.Edge-1 : c.Edge]
	}
	c.Result = grade.GradeCapture(w, c.Nominal, c.Points, edges)
	if note != "" {
		c.Result.Verdict.Detail += "; " + note
	}
	return ""
}

// readCaptureFiles reads a capture's attached files, refusing ones
// whose bytes are not those the journal recorded.
func (a *auditor) readCaptureFiles(files []string) ([][]byte, error) {
	data := make([][]byte, len(files))
	for i, name := range files {
		if err := checkName(name); err != nil || !strings.HasPrefix(name, AttachDir+"/") {
			return nil, fmt.Errorf("capture file %q: not an attachment", name)
		}
		rec, ok := a.files[name]
		if !ok {
			return nil, fmt.Errorf("capture file %s: no file record of it", name)
		}
		b, err := readRegular(a.dir, name, maxCaptureBytes)
		if err != nil {
			return nil, fmt.Errorf("capture file %s: %w", name, err)
		}
		if hashOf(b) != rec.digest {
			return nil, fmt.Errorf("capture file %s does not match its digest in record %d", name, rec.seq)
		}
		data[i] = b
	}
	return data, nil
}

// parseCapture reads a capture from its files' bytes: NAME.cfg with
// NAME.dat, or NAME.cff.
func parseCapture(files []string, data [][]byte) (*comtrade.Capture, error) {
	switch {
	case len(files) == 1 && strings.EqualFold(path.Ext(files[0]), ".cff"):
		return comtrade.ParseCFF(files[0], data[0])
	case len(files) == 2:
		return comtrade.Parse(files[0], data[0], files[1], data[1])
	}
	return nil, fmt.Errorf("a capture is NAME.cfg with NAME.dat, or NAME.cff; the record names %s", strings.Join(files, ", "))
}

// captureWave is channel ch of c, in primary units, at its first
// sampling rate (a record with several keeps only the first section).
func captureWave(c *comtrade.Capture, ch int) (grade.Wave, string) {
	n, note := len(c.Time), ""
	rate := c.SampleRate()
	if len(c.Rates) > 0 {
		rate = c.Rates[0].Hz
		if len(c.Rates) > 1 {
			n = min(n, c.Rates[0].EndSample)
			note = fmt.Sprintf("graded the first of %d sampling-rate sections (%d samples at %g Hz)", len(c.Rates), n, rate)
		}
	}
	k := c.Analogs[ch].ToPrimary()
	v := make([]float64, n)
	for i := range v {
		v[i] = c.Analog[ch][i] * k
	}
	return grade.Wave{Channel: c.Analogs[ch].ID, Start: c.Start, Trigger: c.Trigger, Rate: rate, LineHz: c.LineHz, Values: v}, note
}

// CaseEdges are the times a case commanded a change a capture records:
// every load edge of its steps, and the start of every fault it
// injected or restored (step only, when given).
func CaseEdges(tl grade.Timeline, step string) []time.Time {
	var out []time.Time
	for _, sp := range tl.Steps {
		if step != "" && sp.Step != step {
			continue
		}
		out = append(out, sp.Edges...)
		if sp.Op == plan.OpInjectFault || sp.Op == plan.OpRestore {
			out = append(out, sp.Start)
		}
	}
	return out
}

func stepText(step string) string {
	if step == "" {
		return ""
	}
	return " step " + step
}
