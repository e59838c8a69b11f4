package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The control interface lets another process (`sat run --sim`, a test,
// an engineer with curl) drive the simulator: inject and clear faults,
// play scripts, perform manual steps, read the physics. It speaks JSON
// over HTTP on loopback:
//
//	GET    /v1/status                    sim time, steps, defect, faults
//	GET    /v1/faults                    the faults in force
//	POST   /v1/faults                    {"kind", "target", "code", "for_seconds"}
//	DELETE /v1/faults?kind=K&target=T    clear one
//	POST   /v1/scripts/{name}            play a script of the sim config
//	GET    /v1/signals/{element...}      an element's signals
//	POST   /v1/loadbanks/{id}            {"local": bool, "emergency_stop": bool}
//	GET    /v1/fleet                     the nodes by state, the BMCs, the defects
//	GET    /v1/fleet/nodes[?names=A,B]   the nodes' power, limit and place
//	POST   /v1/fleet/nodes               {"nodes"|"racks"|"all", "state", "limit_w", "limit_enabled", "dcgm"}
//	GET    /v1/fleet/gpus?names=A,B      what the nodes' GPU tools report
//	GET    /v1/fleet/defects             the node and tray defects in force
//	POST   /v1/fleet/defects             {"kind", "target", ...} (fleet.Defect)
//	DELETE /v1/fleet/defects?kind=K&target=T
//	GET    /v1/fleet/bmcs                the BMCs served: name, what they manage, address
//	POST   /v1/fleet/train               {"period_s", "compute_share", "stall_at_s", "stall_s"}: the grid job on every node that is on
//	POST   /v1/fleet/stop                every training node idle
//	POST   /v1/grid/dip                  {"target", "voltage_pu", "seconds"}: the grid dips at the POI
//	GET    /v1/grid                      the grid's voltage and the POI meter's power
//
// Errors are {"error": "..."} with status 400 (a bad request), 404 (no
// such thing) or 409 (a conflict, such as clearing a fault not in force).

// Status is what GET /v1/status answers.
type Status struct {
	SimSeconds float64       `json:"sim_seconds"`
	Time       time.Time     `json:"time"` // the site's clock: its epoch plus sim_seconds
	Steps      int64         `json:"steps"`
	StepHz     float64       `json:"step_hz"`
	Defect     *DefectInfo   `json:"defect,omitempty"`
	Faults     []ActiveFault `json:"faults"`
	Devices    int           `json:"devices"`
	// Stepped is set when site time moves only by POST /v1/advance (sat
	// sim --stepped): nothing runs the site on a clock.
	Stepped bool `json:"stepped"`
}

// DefectInfo names the defect a site runs with.
type DefectInfo struct {
	Name        string `json:"name"`
	Violates    string `json:"violates"`
	Description string `json:"description"`
}

// LoadBankControl is the body of POST /v1/loadbanks/{id}: the operator's
// switches on the bank's panel.
type LoadBankControl struct {
	Local         *bool `json:"local,omitempty"`
	EmergencyStop *bool `json:"emergency_stop,omitempty"`
}

// Status reports the simulation's state.
func (s *Sim) Status() Status {
	st := Status{Faults: s.Site.Faults(), Devices: len(s.devices), Stepped: !s.Site.Running()}
	s.Site.mu.Lock()
	st.SimSeconds, st.Steps, st.StepHz = s.Site.t, s.Site.steps, 1/s.Site.dt
	st.Time = s.Site.epoch.Add(s.Site.simTime())
	if df := s.Site.defect; df != nil {
		st.Defect = &DefectInfo{Name: df.Name, Violates: df.Violates, Description: df.Description}
	}
	s.Site.mu.Unlock()
	if st.Faults == nil {
		st.Faults = []ActiveFault{}
	}
	return st
}

// SetLoadBank works a load bank's panel: local/remote and emergency stop.
func (s *Site) SetLoadBank(id string, c LoadBankControl) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.LoadBank(id)
	if lb == nil {
		return fmt.Errorf("%w: no load bank %q", errNotFound, id)
	}
	if c.Local != nil {
		lb.SetLocal(*c.Local)
	}
	if c.EmergencyStop != nil {
		lb.EmergencyStop(*c.EmergencyStop)
	}
	return nil
}

// Signals reads all signals of an element.
func (s *Site) Signals(element string) (map[string]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.elements[element]
	if e == nil {
		return nil, fmt.Errorf("%w: no element %q", errNotFound, element)
	}
	out := map[string]float64{}
	if f, ok := e.(Filler); ok {
		f.Fill(out)
		return out, nil
	}
	for _, n := range e.Signals() {
		out[n], _ = e.Signal(n)
	}
	return out, nil
}

var errNotFound = errors.New("not found")

// Handler serves the control interface.
func (s *Sim) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, s.Status()) })
	mux.HandleFunc("GET /v1/faults", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, orEmpty(s.Site.Faults())) })
	mux.HandleFunc("POST /v1/faults", s.postFault)
	mux.HandleFunc("DELETE /v1/faults", func(w http.ResponseWriter, r *http.Request) {
		kind, target := r.URL.Query().Get("kind"), r.URL.Query().Get("target")
		if kind == "" || target == "" {
			fail(w, http.StatusBadRequest, errors.New("DELETE /v1/faults needs ?kind=K&target=T"))
			return
		}
		if err := s.Site.Clear(kind, target); err != nil {
			fail(w, http.StatusConflict, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/scripts/{name}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Site.Play(r.PathValue("name")); err != nil {
			fail(w, http.StatusNotFound, err)
			return
		}
		reply(w, http.StatusAccepted, map[string]string{"script": r.PathValue("name")})
	})
	mux.HandleFunc("GET /v1/signals/{element...}", func(w http.ResponseWriter, r *http.Request) {
		sig, err := s.Site.Signals(r.PathValue("element"))
		if err != nil {
			fail(w, http.StatusNotFound, err)
			return
		}
		reply(w, http.StatusOK, map[string]any{"element": r.PathValue("element"), "signals": sig})
	})
	mux.HandleFunc("POST /v1/advance", s.postAdvance)
	mux.HandleFunc("POST /v1/grid/dip", s.postGridDip)
	mux.HandleFunc("GET /v1/grid", func(w http.ResponseWriter, r *http.Request) { reply(w, http.StatusOK, s.Site.GridStatus()) })
	s.fleetRoutes(mux)
	mux.HandleFunc("POST /v1/loadbanks/{id}", func(w http.ResponseWriter, r *http.Request) {
		var c LoadBankControl
		if err := decode(r, &c); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		if err := s.Site.SetLoadBank(r.PathValue("id"), c); err != nil {
			fail(w, http.StatusNotFound, err)
			return
		}
		reply(w, http.StatusOK, map[string]string{"loadbank": r.PathValue("id")})
	})
	return mux
}

// GridDipRequest is the body of POST /v1/grid/dip: the utility module
// whose grid dips, to what voltage, for how long.
type GridDipRequest struct {
	Target    string  `json:"target"`
	VoltagePU float64 `json:"voltage_pu"`
	Seconds   float64 `json:"seconds"`
}

func (s *Sim) postGridDip(w http.ResponseWriter, r *http.Request) {
	var d GridDipRequest
	if err := decode(r, &d); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	if err := s.Site.GridDip(d.Target, d.VoltagePU, d.Seconds); err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errNotFound) {
			code = http.StatusNotFound
		}
		fail(w, code, err)
		return
	}
	reply(w, http.StatusAccepted, d)
}

func (s *Sim) postFault(w http.ResponseWriter, r *http.Request) {
	var f Fault
	if err := decode(r, &f); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	if err := s.Site.Inject(f); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	reply(w, http.StatusCreated, f)
}

func orEmpty(f []ActiveFault) []ActiveFault {
	if f == nil {
		return []ActiveFault{}
	}
	return f
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %w", err)
	}
	return nil
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func fail(w http.ResponseWriter, code int, err error) {
	reply(w, code, map[string]string{"error": err.Error()})
}

// ControlServer serves the control interface on loopback.
type ControlServer struct {
	srv  *http.Server
	addr string
	done chan error
}

// ServeControl listens on addr ("127.0.0.1:0" for a free port).
func (s *Sim) ServeControl(addr string) (*ControlServer, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("control interface: %w", err)
	}
	cs := &ControlServer{srv: &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}, addr: l.Addr().String(), done: make(chan error, 1)}
	go func() { cs.done <- cs.srv.Serve(l) }()
	return cs, nil
}

// URL is the control interface's base URL.
func (cs *ControlServer) URL() string { return "http://" + cs.addr }

// Close stops the server.
func (cs *ControlServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := cs.srv.Shutdown(ctx)
	<-cs.done
	return err
}

// maxAdvance bounds one POST /v1/advance: a typo of hours for seconds
// is refused rather than stepping the physics for minutes of CPU.
const maxAdvance = time.Hour

// Advance is the body of POST /v1/advance: how far to move site time.
type Advance struct {
	Seconds float64 `json:"seconds"`
}

// postAdvance moves a stepped site's time on and answers its status; a
// site that runs on a clock refuses, since two drivers of one site's
// time would make neither's timing true.
func (s *Sim) postAdvance(w http.ResponseWriter, r *http.Request) {
	var a Advance
	if err := decode(r, &a); err != nil {
		fail(w, http.StatusBadRequest, err)
		return
	}
	d := time.Duration(a.Seconds * float64(time.Second))
	switch {
	case d <= 0 || d > maxAdvance:
		fail(w, http.StatusBadRequest, fmt.Errorf("advance by %g s: want more than 0 and at most %g s", a.Seconds, maxAdvance.Seconds()))
		return
	case s.Site.Running():
		fail(w, http.StatusConflict, errors.New("this simulator runs on its own clock: start sat sim with --stepped to drive its time from outside"))
		return
	}
	s.Site.Advance(d)
	reply(w, http.StatusOK, s.Status())
}

// Client drives a simulator's control interface from another process.
type Client struct {
	URL  string // e.g. http://127.0.0.1:40123
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 5 * time.Second}
}

// Status reads the simulation's state.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	return st, c.do(ctx, http.MethodGet, "/v1/status", nil, &st)
}

// Advance moves a stepped simulator's time on by d and returns its
// status after.
func (c *Client) Advance(ctx context.Context, d time.Duration) (Status, error) {
	var st Status
	return st, c.do(ctx, http.MethodPost, "/v1/advance", Advance{Seconds: d.Seconds()}, &st)
}

// Inject puts a fault in force.
func (c *Client) Inject(ctx context.Context, f Fault) error {
	return c.do(ctx, http.MethodPost, "/v1/faults", f, nil)
}

// Clear ends a fault.
func (c *Client) Clear(ctx context.Context, kind, target string) error {
	q := "?" + url.Values{"kind": {kind}, "target": {target}}.Encode()
	return c.do(ctx, http.MethodDelete, "/v1/faults"+q, nil, nil)
}

// Faults lists the faults in force.
func (c *Client) Faults(ctx context.Context) ([]ActiveFault, error) {
	var out []ActiveFault
	return out, c.do(ctx, http.MethodGet, "/v1/faults", nil, &out)
}

// Play plays a script of the sim config.
func (c *Client) Play(ctx context.Context, script string) error {
	return c.do(ctx, http.MethodPost, "/v1/scripts/"+url.PathEscape(script), nil, nil)
}

// Signals reads an element's signals.
func (c *Client) Signals(ctx context.Context, element string) (map[string]float64, error) {
	var out struct {
		Signals map[string]float64 `json:"signals"`
	}
	return out.Signals, c.do(ctx, http.MethodGet, "/v1/signals/"+element, nil, &out)
}

// LoadBank works a load bank's panel.
func (c *Client) LoadBank(ctx context.Context, id string, lc LoadBankControl) error {
	return c.do(ctx, http.MethodPost, "/v1/loadbanks/"+url.PathEscape(id), lc, nil)
}

// GridDip dips the grid's voltage at the POI of utility module target
// to pu for seconds of site time.
func (c *Client) GridDip(ctx context.Context, target string, pu, seconds float64) error {
	return c.do(ctx, http.MethodPost, "/v1/grid/dip", GridDipRequest{Target: target, VoltagePU: pu, Seconds: seconds}, nil)
}

// Grid reads the grid's state at the POI.
func (c *Client) Grid(ctx context.Context) (GridStatus, error) {
	var out GridStatus
	return out, c.do(ctx, http.MethodGet, "/v1/grid", nil, &out)
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd *strings.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http().Do(req)
	if err != nil {
		return fmt.Errorf("simulator control at %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("simulator control: %s %s: %s (%d)", method, path, e.Error, resp.StatusCode)
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	return nil
}
