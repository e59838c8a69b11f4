// Package apply writes power caps to BMCs over Redfish and reads them
// back: the node's Controls/PowerLimit (SetPoint, in W, kW or % of the
// node's maximum, normalised to W with the control's AllowableMin and
// AllowableMax), or the legacy Power resource's
// PowerControl[0].PowerLimit.LimitInWatts where a BMC has only that.
// Only a control the binding declares writable is written (Writable, the
// same allow-list rule as load banks' points); a cap outside the BMC's
// range, units it does not understand, a refusal, a read-back that
// differs or a BMC that resets mid-write is an error naming the BMC,
// the node and the control. Redfish hygiene as sat discover's: a
// session per BMC, DELETEd at the end; one or two requests in flight to
// a BMC; Parallel BMCs at once; 503 with Retry-After honoured on a
// Clock.
package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/seamdc/seam/internal/capping"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// Controls a result names.
const (
	Control = "Controls/PowerLimit"
	Legacy  = "Power.PowerControl[0].PowerLimit.LimitInWatts"
	// Writable is the control's name in the binding's allow-list.
	Writable = "PowerLimit"
)

// Op is what Run does at each BMC.
type Op int

// Ops.
const (
	Read  Op = iota // read the cap only
	Apply           // write the target's cap
	Clear           // write the BMC's maximum: no cap
)

func (o Op) String() string { return [...]string{"read", "apply", "clear"}[o] }

// Target is one node's cap and where its BMC answers.
type Target struct {
	capping.Cap
	URL string // http(s)://host:port
}

// Options are the BMCs' credentials and limits, and the allow-list.
type Options struct {
	bmchttp.Access
	// Writable says whether the binding allows writing the control on
	// the BMC (nil error); nil allows nothing. Read needs none.
	Writable func(bmc, control string) error
	// Dry, when set, is a dry run: each BMC is read as for a write, and
	// the PATCH it would take is recorded there instead of sent.
	Dry *dryrun.Recorder
}

// Result is one BMC's cap: what was there, what was written, what it
// reads back; in W.
type Result struct {
	Node      string  `json:"node"`
	Key       string  `json:"key,omitempty"`
	BMC       string  `json:"bmc"`
	URL       string  `json:"url"`
	Op        string  `json:"op"`
	Control   string  `json:"control,omitempty"` // Control or Legacy
	URI       string  `json:"uri,omitempty"`
	Units     string  `json:"units,omitempty"` // the BMC's: W, kW, %
	MinW      float64 `json:"min_watts,omitempty"`
	MaxW      float64 `json:"max_watts,omitempty"`
	BeforeW   float64 `json:"before_watts"`
	WantW     float64 `json:"want_watts,omitempty"`
	ReadBackW float64 `json:"read_back_watts"`
	Written   bool    `json:"written"`
	// Would: a dry run's, which recorded the write and sent nothing.
	Would bool   `json:"would,omitempty"`
	Waits int    `json:"retry_after_waits,omitempty"`
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// Run does op at every target's BMC, Parallel at a time; results in
// the targets' order.
func Run(ctx context.Context, op Op, targets []Target, o Options) []Result {
	o.Access = o.Access.WithDefaults()
	out := make([]Result, len(targets))
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = failed(op, t, ctx.Err())
				return
			}
			defer func() { <-sem }()
			out[i] = one(ctx, op, t, o)
		})
	}
	wg.Wait()
	return out
}

func failed(op Op, t Target, err error) Result {
	r := Result{Node: t.Node, Key: t.Key, BMC: t.BMC, URL: t.URL, Op: op.String()}
	r.fail(err)
	return r
}

func (r *Result) fail(err error) {
	r.Err = fmt.Errorf("BMC %s (node %s): %w", r.BMC, r.Node, err)
	r.Error = r.Err.Error()
}

// bmcConn is one BMC's session.
type bmcConn struct {
	c *gofish.APIClient
	t Target
}

func one(ctx context.Context, op Op, t Target, o Options) (r Result) {
	r = Result{Node: t.Node, Key: t.Key, BMC: t.BMC, URL: t.URL, Op: op.String()}
	if op != Read {
		if o.Writable == nil {
			r.fail(fmt.Errorf("control %s: no allow-list given: nothing is written", Writable))
			return r
		}
		if err := o.Writable(t.BMC, Writable); err != nil {
			r.fail(err)
			return r
		}
	}
	var waits atomic.Int64
	client, closeIdle := o.Client(func(time.Duration) { waits.Add(1) })
	defer closeIdle()
	defer func() { r.Waits = int(waits.Load()) }()
	c, err := o.Connect(ctx, client, t.BMC, t.URL)
	switch {
	case errors.Is(err, bmchttp.ErrCredentialLost):
		r.fail(fmt.Errorf("login: %w", err))
		return r
	case err != nil:
		r.fail(fmt.Errorf("login: %s", describe(err, o.Timeout)))
		return r
	}
	defer c.Logout()
	b := &bmcConn{c: c, t: t}
	ctl, err := b.find()
	if err != nil {
		r.fail(err)
		return r
	}
	r.Control, r.URI, r.Units = ctl.kind, ctl.uri, ctl.units
	r.MinW, r.MaxW, r.BeforeW, r.ReadBackW = ctl.minW, ctl.maxW, ctl.setW, ctl.setW
	if op == Read {
		return r
	}
	r.WantW = t.Watts
	if op == Clear {
		r.WantW = ctl.maxW
	}
	if o.Dry.Active() {
		body, err := patchBody(ctl, r.WantW)
		if err != nil {
			r.fail(err)
			return r
		}
		raw, _ := json.Marshal(body)
		o.Dry.Would(dryrun.BMC, "PATCH %s%s %s (BMC %s, node %s: %.0f W)", strings.TrimSuffix(t.URL, "/"), ctl.uri, raw, t.BMC, t.Node, r.WantW)
		r.Would = true
		return r
	}
	if err := b.write(ctl, r.WantW); err != nil {
		r.fail(err)
		return r
	}
	r.Written = true
	back, err := b.read(ctl.uri, ctl.kind)
	if err != nil {
		r.fail(fmt.Errorf("%s: read back after the write: %w", ctl.kind, err))
		return r
	}
	r.ReadBackW = back.setW
	if math.Abs(back.setW-r.WantW) > 0.5+1e-3*r.WantW {
		r.fail(fmt.Errorf("%s: wrote %.0f W and it reads back %.0f W: the BMC did not keep it", ctl.kind, r.WantW, back.setW))
	}
	o.Log.Debug("power cap", "op", op.String(), "bmc", t.BMC, "node", t.Node, "watts", r.WantW, "read_back", r.ReadBackW)
	return r
}

// control is a node's power limit as its BMC has it, in W.
type control struct {
	kind, uri, units  string
	setW, minW, maxW  float64
	etag              string
	refW              float64 // 100 % in W, for a control in %
	rawMin, rawMax    float64
	needsEnable, isPc bool
}

// find looks for the node's power limit: each chassis's Controls (a
// control of ControlType Power), else its legacy Power resource.
func (b *bmcConn) find() (*control, error) {
	col, err := b.getDoc("/redfish/v1/Chassis")
	if err != nil {
		return nil, fmt.Errorf("/redfish/v1/Chassis: %w", err)
	}
	var legacy string
	for _, m := range members(col) {
		ch, err := b.getDoc(m)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		if ctl := link(ch, "Controls"); ctl != "" {
			cc, err := b.getDoc(ctl)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", ctl, err)
			}
			for _, u := range members(cc) {
				c, err := b.read(u, Control)
				if err != nil {
					return nil, err
				}
				if c != nil {
					return c, nil
				}
			}
		}
		if p := link(ch, "Power"); p != "" && legacy == "" {
			legacy = p
		}
	}
	if legacy != "" {
		c, err := b.read(legacy, Legacy)
		if err != nil {
			return nil, err
		}
		if c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no power limit: no chassis has a Controls/PowerLimit (a Control of ControlType Power) or a legacy Power.PowerControl with a PowerLimit")
}

// read reads a control (nil when uri is not a power limit).
func (b *bmcConn) read(uri, kind string) (*control, error) {
	doc, etag, err := b.get(uri)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", kind, uri, err)
	}
	if kind == Legacy {
		pcs, _ := doc["PowerControl"].([]any)
		if len(pcs) == 0 {
			return nil, nil
		}
		pc, _ := pcs[0].(map[string]any)
		lim, ok := pc["PowerLimit"].(map[string]any)
		if !ok {
			return nil, nil
		}
		c := &control{kind: Legacy, uri: uri, units: "W", etag: etag, minW: b.t.MinW, maxW: num(pc, "PowerCapacityWatts")}
		c.setW = num(lim, "LimitInWatts")
		if c.maxW <= 0 {
			c.maxW = b.t.MaxW
		}
		if math.IsNaN(c.setW) { // null: no limit
			c.setW = c.maxW
		}
		return c, nil
	}
	if s, _ := doc["ControlType"].(string); s != "Power" {
		return nil, nil
	}
	c := &control{kind: Control, uri: uri, etag: etag}
	c.units, _ = doc["SetPointUnits"].(string)
	mode, _ := doc["ControlMode"].(string)
	c.needsEnable = mode == "Disabled"
	c.rawMin, c.rawMax = num(doc, "AllowableMin"), num(doc, "AllowableMax")
	sp := num(doc, "SetPoint")
	scale, err := b.scale(c)
	if err != nil {
		return nil, err
	}
	c.setW, c.minW, c.maxW = sp*scale, c.rawMin*scale, c.rawMax*scale
	if math.IsNaN(c.minW) || math.IsNaN(c.maxW) {
		return nil, fmt.Errorf("%s %s: no AllowableMin or AllowableMax, so a cap cannot be checked against the BMC's range: nothing written", kind, uri)
	}
	return c, nil
}

// scale is W per unit of the control's set point: W and kW as they
// are, % of the node's maximum (the caps file's max_watts, or its
// design draw).
func (b *bmcConn) scale(c *control) (float64, error) {
	switch c.units {
	case "W", "":
		return 1, nil
	case "kW":
		return 1000, nil
	case "%":
		c.isPc = true
		c.refW = b.t.MaxW
		if c.refW <= 0 {
			c.refW = b.t.DesignW
		}
		if c.refW <= 0 {
			return 0, fmt.Errorf("%s %s: the control is in %% and the caps file gives no max_watts for the node to say what 100 %% is: nothing written", Control, c.uri)
		}
		return c.refW / 100, nil
	}
	return 0, fmt.Errorf("%s %s: the control answers in %q: only W, kW and %% are understood, so nothing is written (check the BMC's firmware or write the cap by hand)", Control, c.uri, c.units)
}

// patchBody is the PATCH that sets the control to w (in W), checked
// against its range first.
func patchBody(c *control, w float64) (any, error) {
	if w < c.minW-1e-6 || w > c.maxW+1e-6 {
		return nil, fmt.Errorf("%s: a cap of %.0f W is outside the BMC's range %.0f..%.0f W (%s): nothing written", c.kind, w, c.minW, c.maxW, rangeOf(c))
	}
	if c.kind == Legacy {
		return map[string]any{"PowerControl": []any{map[string]any{"PowerLimit": map[string]any{"LimitInWatts": math.Round(w)}}}}, nil
	}
	sp := w
	switch {
	case c.isPc:
		sp = math.Round(w/c.refW*100*100) / 100
	case c.units == "kW":
		sp = w / 1000
	default:
		sp = math.Round(w)
	}
	m := map[string]any{"SetPoint": sp}
	if c.needsEnable {
		m["ControlMode"] = "Automatic"
	}
	return m, nil
}

// write sets the control to w (in W), checked against its range first.
func (b *bmcConn) write(c *control, w float64) error {
	body, err := patchBody(c, w)
	if err != nil {
		return err
	}
	hdr := map[string]string{}
	if c.etag != "" {
		hdr["If-Match"] = c.etag
	}
	resp, err := b.c.PatchWithHeaders(c.uri, body, hdr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) || errors.Is(err, io.EOF) || strings.Contains(err.Error(), "EOF") {
			return fmt.Errorf("%s: PATCH %s: no answer (%s): the BMC may have reset mid-write, so the cap is not known to be applied: run the command again once it answers", c.kind, c.uri, describe(err, 0))
		}
		return fmt.Errorf("%s: PATCH %s: the BMC refused the cap: %s", c.kind, c.uri, describe(err, 0))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return nil
}

func rangeOf(c *control) string {
	switch {
	case c.kind == Legacy:
		return "PowerCapacityWatts, and the caps file's min_watts"
	case c.isPc:
		return fmt.Sprintf("AllowableMin..AllowableMax %g..%g %% of %.0f W", c.rawMin, c.rawMax, c.refW)
	}
	return fmt.Sprintf("AllowableMin..AllowableMax %g..%g %s", c.rawMin, c.rawMax, c.units)
}

func (b *bmcConn) getDoc(uri string) (map[string]any, error) {
	d, _, err := b.get(uri)
	return d, err
}

func (b *bmcConn) get(uri string) (map[string]any, string, error) {
	resp, err := b.c.Get(uri)
	if err != nil {
		return nil, "", errors.New(describe(err, 0))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return nil, "", err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, "", fmt.Errorf("not JSON: %w", err)
	}
	return doc, resp.Header.Get("ETag"), nil
}

func members(doc map[string]any) []string {
	ms, _ := doc["Members"].([]any)
	var out []string
	for _, m := range ms {
		if mm, ok := m.(map[string]any); ok {
			if id, ok := mm["@odata.id"].(string); ok {
				out = append(out, id)
			}
		}
	}
	return out
}

func link(doc map[string]any, key string) string {
	if m, ok := doc[key].(map[string]any); ok {
		s, _ := m["@odata.id"].(string)
		return s
	}
	return ""
}

func num(doc map[string]any, key string) float64 {
	if f, ok := doc[key].(float64); ok {
		return f
	}
	return math.NaN()
}

// describe is an error as a person reads it: the status and Redfish
// message, or a timeout.
func describe(err error, timeout time.Duration) string {
	var he *schemas.Error
	if errors.As(err, &he) {
		msg := strings.TrimSpace(he.Message)
		if msg == "" {
			msg = strings.TrimSpace(he.Error())
		}
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
		return fmt.Sprintf("%d %s", he.HTTPReturnedStatusCode, msg)
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.Timeout() && timeout > 0 {
		return fmt.Sprintf("timed out after %s", timeout)
	}
	return err.Error()
}
