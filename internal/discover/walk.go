// Package discover walks a site's BMCs over Redfish and compares what
// they report with the declared inventory: a tray missing or one too
// many, a changed serial (a swapped part), firmware drift, a tray in
// the wrong slot or rack, a PSU absent. The walk goes through gofish
// (sessions, closed at the end of each BMC's walk), a bounded number of
// BMCs at once and one or two requests in flight to each, honouring a
// busy BMC's Retry-After; a BMC that answers 401 or 404, garbage, a
// redirect loop, nothing, or a Contains loop is an error naming it and
// the URI, and the walk of the others goes on.
package discover

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// Target is one BMC to walk.
type Target struct {
	Name string // for messages: bmc-a-r01-n03
	URL  string // its service, http(s)://host:port
	// Expect is the tray the inventory puts behind it ("" unknown): a
	// declared tray not reported by anyone names its BMC's error.
	Expect string
}

// Options are the BMCs' credentials and the walk's limits.
type Options = bmchttp.Access

// Found is what one BMC reported.
type Found struct {
	BMC, URL string
	Trays    []*Tray
	CDUs     []*CDU
	Errors   []*Error
	Requests int
	Waits    int // Retry-Afters honoured
	Elapsed  time.Duration
}

// Tray is a chassis a BMC reports in a rack slot.
type Tray struct {
	BMC         string            `json:"bmc"`
	URI         string            `json:"uri"`
	Kind        string            `json:"kind"` // compute, scale-up-switch, power-shelf, or the ChassisType
	Rack        string            `json:"rack"` // Location.Placement.Rack
	Slot        int               `json:"slot"` // RackOffset
	Serial      string            `json:"serial"`
	PartNumber  string            `json:"part_number,omitempty"`
	Model       string            `json:"model,omitempty"`
	HostName    string            `json:"host_name,omitempty"`
	Firmware    map[string]string `json:"firmware,omitempty"`
	Parts       []Part            `json:"parts,omitempty"`
	PSUs        map[int]string    `json:"psus,omitempty"` // bay → serial, present bays only
	ChassisType string            `json:"chassis_type"`
}

// Part is a processor or network adapter of a tray.
type Part struct {
	Kind   string `json:"kind"` // gpu, cpu, nic (a network adapter)
	Slot   int    `json:"slot"`
	Model  string `json:"model,omitempty"`
	Serial string `json:"serial"`
	URI    string `json:"uri"`
}

// CDU is a cooling unit a BMC reports.
type CDU struct {
	BMC, URI, Serial, Model string
}

// Error is a request that failed: the BMC, the URI, why.
type Error struct {
	BMC string `json:"bmc"`
	URL string `json:"url"`
	URI string `json:"uri"`
	Err error  `json:"-"`
	Msg string `json:"error"`
}

func (e *Error) Error() string { return fmt.Sprintf("BMC %s (%s): %s: %s", e.BMC, e.URL, e.URI, e.Msg) }
func (e *Error) Unwrap() error { return e.Err }

// Walk walks every target, opt.Parallel at a time, and returns what
// each reported, in the targets' order.
func Walk(ctx context.Context, targets []Target, opt Options) []*Found {
	opt = opt.WithDefaults()
	out := make([]*Found, len(targets))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(opt.Parallel, max(len(targets), 1)) {
		wg.Go(func() {
			for i := range work {
				out[i] = walkOne(ctx, targets[i], opt)
			}
		})
	}
	for i := range targets {
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

// walker is one BMC's walk.
type walker struct {
	ctx   context.Context
	t     Target
	o     Options
	c     *gofish.APIClient
	f     *Found
	mu    sync.Mutex
	seen  map[string]bool
	tray  map[string]*Tray    // by chassis URI
	links map[string][]string // each chassis's Contains links
}

func walkOne(ctx context.Context, t Target, o Options) *Found {
	start := time.Now()
	f := &Found{BMC: t.Name, URL: t.URL}
	w := &walker{ctx: ctx, t: t, o: o, f: f, seen: map[string]bool{}, tray: map[string]*Tray{}, links: map[string][]string{}}
	client, closeIdle := o.Client(func(time.Duration) { w.mu.Lock(); f.Waits++; w.mu.Unlock() })
	defer closeIdle()
	endpoint := strings.TrimSuffix(t.URL, "/")
	// the service root first, unauthenticated (as Redfish allows): a
	// failure there is the root's, not the login's
	root := w.root(client, endpoint)
	if root == nil {
		f.Elapsed = time.Since(start)
		return f
	}
	c, err := o.Connect(ctx, client, t.Name, endpoint)
	f.Requests += 2
	if err != nil {
		uri := "/redfish/v1/"
		if !o.Basic {
			uri = root.obj("Links").link("Sessions")
		}
		w.fail(uri, err)
		f.Elapsed = time.Since(start)
		return f
	}
	w.c = c
	defer c.Logout()
	w.walk(root)
	f.Elapsed = time.Since(start)
	o.Log.Debug("BMC walked", "bmc", t.Name, "trays", len(f.Trays), "errors", len(f.Errors), "requests", f.Requests, "seconds", f.Elapsed.Seconds())
	return f
}

// fail records a failed request.
func (w *walker) fail(uri string, err error) {
	msg := err.Error()
	var ue *url.Error
	switch {
	case errors.As(err, &ue) && ue.Timeout():
		msg = fmt.Sprintf("timed out after %s", w.o.Timeout)
	case errors.As(err, &ue):
		msg = ue.Err.Error()
	}
	var he *schemas.Error
	if errors.As(err, &he) {
		msg = fmt.Sprintf("%d %s", he.HTTPReturnedStatusCode, strings.TrimSpace(firstLine(he.Message)))
	}
	w.mu.Lock()
	w.f.Errors = append(w.f.Errors, &Error{BMC: w.t.Name, URL: w.t.URL, URI: uri, Err: err, Msg: msg})
	w.mu.Unlock()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// get reads one resource through gofish, recording a failure.
func get[T any, PT schemas.GenericSchemaObjectPointer[T]](w *walker, uri string) *T {
	w.mu.Lock()
	w.f.Requests++
	w.mu.Unlock()
	v, err := schemas.GetObject[T, PT](w.c, uri)
	if err != nil {
		w.fail(uri, err)
		return nil
	}
	return v
}

// members reads a collection's member links.
func (w *walker) members(uri string) []string {
	if uri == "" {
		return nil
	}
	w.mu.Lock()
	w.f.Requests++
	w.mu.Unlock()
	coll, err := schemas.GetCollection(w.c, uri)
	if err != nil {
		w.fail(uri, err)
		return nil
	}
	return coll.ItemLinks
}

// each runs f for every link, as many at once as requests may be in
// flight to the BMC.
func (w *walker) each(links []string, f func(string)) {
	if w.o.PerBMC <= 1 || len(links) < 2 {
		for _, l := range links {
			f(l)
		}
		return
	}
	work := make(chan string)
	var wg sync.WaitGroup
	for range w.o.PerBMC {
		wg.Go(func() {
			for l := range work {
				f(l)
			}
		})
	}
	for _, l := range links {
		work <- l
	}
	close(work)
	wg.Wait()
}

// raw reads links out of a resource's JSON.
type raw map[string]json.RawMessage

func parse(b []byte) raw {
	var r raw
	_ = json.Unmarshal(b, &r)
	return r
}

func (r raw) obj(key string) raw {
	if r == nil {
		return nil
	}
	return parse(r[key])
}

func (r raw) link(key string) string {
	var l struct {
		ID string `json:"@odata.id"`
	}
	_ = json.Unmarshal(r[key], &l)
	return l.ID
}

func (r raw) links(key string) []string {
	var ls []struct {
		ID string `json:"@odata.id"`
	}
	_ = json.Unmarshal(r[key], &ls)
	var out []string
	for _, l := range ls {
		out = append(out, l.ID)
	}
	return out
}

// getRaw reads a resource's JSON through gofish's client.
func (w *walker) getRaw(uri string) raw {
	w.mu.Lock()
	w.f.Requests++
	w.mu.Unlock()
	resp, err := w.c.Get(uri)
	if err != nil {
		w.fail(uri, err)
		return nil
	}
	defer resp.Body.Close()
	var r raw
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&r); err != nil {
		w.fail(uri, fmt.Errorf("not a JSON object: %w", err))
		return nil
	}
	return r
}

// root reads the service root.
func (w *walker) root(client *http.Client, endpoint string) raw {
	w.f.Requests++
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, endpoint+"/redfish/v1/", nil)
	if err != nil {
		w.fail("/redfish/v1/", err)
		return nil
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		w.fail("/redfish/v1/", err)
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = &schemas.Error{HTTPReturnedStatusCode: resp.StatusCode, Message: resp.Status + " " + string(body)}
	}
	var r raw
	if err == nil {
		if jerr := json.Unmarshal(body, &r); jerr != nil {
			err = jerr
		}
	}
	if err != nil {
		w.fail("/redfish/v1/", err)
		return nil
	}
	return r
}

func (w *walker) walk(root raw) {
	chassis := root.link("Chassis")
	if chassis == "" {
		chassis = "/redfish/v1/Chassis"
	}
	w.each(w.members(chassis), w.chassis)
	w.loops()
	if us := root.link("UpdateService"); us != "" {
		if svcDoc := get[schemas.UpdateService](w, us); svcDoc != nil {
			w.firmware(parse(svcDoc.RawData).link("FirmwareInventory"))
		}
	}
	if te := root.link("ThermalEquipment"); te != "" {
		if doc := w.getRaw(te); doc != nil {
			w.each(w.members(doc.link("CDUs")), w.cdu)
		}
	}
	slices.SortFunc(w.f.Trays, func(a, b *Tray) int { return strings.Compare(a.URI, b.URI) })
}

// chassis reads a chassis and, once each, what it contains; the
// Contains links are kept, for loops() to look for a loop in them once
// the walk is over (two chassis walked at once may each reach the other
// first, so a loop cannot be told while walking).
func (w *walker) chassis(uri string) {
	w.mu.Lock()
	done := w.seen[uri]
	w.seen[uri] = true
	w.mu.Unlock()
	if done {
		return
	}
	ch := get[schemas.Chassis](w, uri)
	if ch == nil {
		return
	}
	r := parse(ch.RawData)
	links := r.obj("Links")
	contains := links.links("Contains")
	w.mu.Lock()
	w.links[uri] = contains
	w.mu.Unlock()
	if pl := ch.Location.Placement; pl.Rack != "" && pl.RackOffset != nil {
		t := &Tray{BMC: w.t.Name, URI: uri, Rack: pl.Rack, Slot: *pl.RackOffset, Serial: ch.SerialNumber, PartNumber: ch.PartNumber,
			Model: ch.Model, ChassisType: string(ch.ChassisType), Firmware: map[string]string{}}
		w.describe(t, ch, r, links)
		w.mu.Lock()
		w.f.Trays = append(w.f.Trays, t)
		w.tray[uri] = t
		w.mu.Unlock()
	}
	for _, c := range contains {
		w.chassis(c)
	}
}

// loops reports each loop of Contains links once, as the chain from
// the first of its chassis (by URI) back to it.
func (w *walker) loops() {
	const (
		unseen = iota
		onPath
		finished
	)
	state := map[string]int{}
	var path []string
	var visit func(uri string)
	visit = func(uri string) {
		state[uri] = onPath
		path = append(path, uri)
		for _, c := range w.links[uri] {
			switch state[c] {
			case onPath:
				i := slices.Index(path, c)
				w.fail(c, fmt.Errorf("a Contains loop: %s", strings.Join(append(slices.Clone(path[i:]), c), " → ")))
			case unseen:
				visit(c)
			}
		}
		path = path[:len(path)-1]
		state[uri] = finished
	}
	for _, uri := range slices.Sorted(maps.Keys(w.links)) {
		if state[uri] == unseen {
			visit(uri)
		}
	}
}

// describe reads what a tray holds: its system's host name and
// processors, its network adapters, its PSUs; its kind follows.
func (w *walker) describe(t *Tray, ch *schemas.Chassis, r, links raw) {
	t.Kind = strings.ToLower(string(ch.ChassisType))
	if sys := links.links("ComputerSystems"); len(sys) > 0 {
		t.Kind = "compute"
		if s := get[schemas.ComputerSystem](w, sys[0]); s != nil {
			t.HostName = s.HostName
			w.each(w.members(parse(s.RawData).link("Processors")), func(p string) {
				if pr := get[schemas.Processor](w, p); pr != nil {
					kind := strings.ToLower(string(pr.ProcessorType))
					w.part(t, Part{Kind: kind, Slot: ordinal(pr.Location), Model: pr.Model, Serial: pr.SerialNumber, URI: p})
				}
			})
		}
	}
	if len(links.links("Switches")) > 0 && t.Kind != "compute" {
		t.Kind = "scale-up-switch"
	}
	w.each(w.members(r.link("NetworkAdapters")), func(n string) {
		if na := get[schemas.NetworkAdapter](w, n); na != nil {
			w.part(t, Part{Kind: "nic", Slot: ordinal(na.Location), Model: na.Model, Serial: na.SerialNumber, URI: n})
		}
	})
	if ps := r.link("PowerSubsystem"); ps != "" {
		w.mu.Lock()
		w.f.Requests++
		w.mu.Unlock()
		sub, err := schemas.GetObject[schemas.PowerSubsystem](w.c, ps)
		if err != nil {
			w.fail(ps, err)
			return
		}
		supplies, err := sub.PowerSupplies()
		w.mu.Lock()
		w.f.Requests += 1 + len(supplies)
		w.mu.Unlock()
		var ce *schemas.CollectionError
		if errors.As(err, &ce) {
			for link, e := range ce.Failures {
				w.fail(link, e)
			}
		} else if err != nil {
			w.fail(ps+"/PowerSupplies", err)
		}
		t.PSUs = map[int]string{}
		for _, p := range supplies {
			if p.Status.State == schemas.AbsentState {
				continue
			}
			t.PSUs[ordinal(p.Location)] = p.SerialNumber
		}
		if ch.ChassisType == schemas.ShelfChassisType || len(supplies) > 0 && t.Kind != "compute" {
			t.Kind = "power-shelf"
		}
	}
}

func (w *walker) part(t *Tray, p Part) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Parts = append(t.Parts, p)
	slices.SortFunc(t.Parts, func(a, b Part) int {
		if a.Kind != b.Kind {
			return strings.Compare(a.Kind, b.Kind)
		}
		return a.Slot - b.Slot
	})
}

func ordinal(l schemas.Location) int {
	if l.PartLocation.LocationOrdinalValue != nil {
		return int(*l.PartLocation.LocationOrdinalValue)
	}
	return 0
}

// firmware reads the firmware inventory: each version goes to the tray
// it relates to.
func (w *walker) firmware(uri string) {
	w.each(w.members(uri), func(s string) {
		sw := get[schemas.SoftwareInventory](w, s)
		if sw == nil {
			return
		}
		for _, rel := range parse(sw.RawData).links("RelatedItem") {
			w.mu.Lock()
			if t := w.tray[rel]; t != nil && sw.SoftwareID != "" {
				t.Firmware[sw.SoftwareID] = sw.Version
			}
			w.mu.Unlock()
		}
	})
}

func (w *walker) cdu(uri string) {
	if cu := get[schemas.CoolingUnit](w, uri); cu != nil {
		w.mu.Lock()
		w.f.CDUs = append(w.f.CDUs, &CDU{BMC: w.t.Name, URI: uri, Serial: cu.SerialNumber, Model: cu.Model})
		w.mu.Unlock()
	}
}
