package sim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// NodeRequest is the body of POST /v1/fleet/nodes: which nodes (by name,
// by rack, or all), and what to set. Nodes set in one request start a
// training job in phase.
type NodeRequest struct {
	Nodes        []string    `json:"nodes,omitempty"`
	Racks        []string    `json:"racks,omitempty"`
	All          bool        `json:"all,omitempty"`
	State        fleet.State `json:"state,omitempty"`
	LimitW       *float64    `json:"limit_w,omitempty"`
	LimitEnabled *bool       `json:"limit_enabled,omitempty"`
	DCGM         string      `json:"dcgm,omitempty"`
}

// SetNodes applies a NodeRequest and returns the nodes' state.
func (s *Sim) SetNodes(req NodeRequest) ([]fleet.Status, error) {
	var out []fleet.Status
	err := s.Site.WithFleet(func(f *fleet.Fleet) error {
		nodes, err := pick(f, req)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if req.LimitW != nil {
				if err := n.SetLimit(*req.LimitW); err != nil {
					return err
				}
			}
			if req.LimitEnabled != nil {
				n.EnableLimit(*req.LimitEnabled)
			}
			if req.DCGM != "" {
				n.SetDCGM(req.DCGM)
			}
		}
		if req.State != "" {
			if err := f.SetState(req.State, nodes...); err != nil {
				return err
			}
		}
		for _, n := range nodes {
			out = append(out, n.Status())
		}
		return nil
	})
	return out, err
}

func pick(f *fleet.Fleet, req NodeRequest) ([]*fleet.Node, error) {
	if req.All {
		return f.Nodes(), nil
	}
	var out []*fleet.Node
	for _, name := range req.Nodes {
		n, err := f.Node(name)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	for _, key := range req.Racks {
		if f.Rack(key) == nil {
			return nil, fmt.Errorf("no rack %q in the fleet", key)
		}
		for _, n := range f.Nodes() {
			if n.Tray.Rack().Key == key {
				out = append(out, n)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New(`name the nodes: "nodes", "racks" or "all"`)
	}
	return out, nil
}

// NodeStatus is the state of the named nodes (none: all).
func (s *Sim) NodeStatus(names ...string) ([]fleet.Status, error) {
	var out []fleet.Status
	err := s.Site.WithFleet(func(f *fleet.Fleet) error {
		nodes := f.Nodes()
		if len(names) > 0 {
			nodes = nil
			for _, name := range names {
				n, err := f.Node(name)
				if err != nil {
					return err
				}
				nodes = append(nodes, n)
			}
		}
		for _, n := range nodes {
			out = append(out, n.Status())
		}
		return nil
	})
	return out, err
}

// GPUViews are what the named nodes' GPU tools report now.
func (s *Sim) GPUViews(names ...string) ([]*gputools.Node, error) {
	var out []*gputools.Node
	err := s.Site.WithFleet(func(f *fleet.Fleet) error {
		for _, name := range names {
			n, err := f.Node(name)
			if err != nil {
				return err
			}
			out = append(out, f.GPUView(n, s.Site.now()))
		}
		return nil
	})
	return out, err
}

// FleetSummary is the fleet at a glance.
func (s *Sim) FleetSummary() (fleet.Summary, error) {
	var out fleet.Summary
	err := s.Site.WithFleet(func(f *fleet.Fleet) error { out = f.Summary(); return nil })
	return out, err
}

func queryNames(r *http.Request) []string {
	var out []string
	for _, v := range strings.Split(r.URL.Query().Get("names"), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func failFleet(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	if errors.Is(err, errNotFound) {
		code = http.StatusNotFound
	}
	fail(w, code, err)
}

func (s *Sim) fleetRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/fleet", func(w http.ResponseWriter, r *http.Request) {
		sum, err := s.FleetSummary()
		if err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, sum)
	})
	mux.HandleFunc("GET /v1/fleet/nodes", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.NodeStatus(queryNames(r)...)
		if err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, st)
	})
	mux.HandleFunc("POST /v1/fleet/nodes", func(w http.ResponseWriter, r *http.Request) {
		var req NodeRequest
		if err := decode(r, &req); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		st, err := s.SetNodes(req)
		if err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, st)
	})
	mux.HandleFunc("GET /v1/fleet/gpus", func(w http.ResponseWriter, r *http.Request) {
		v, err := s.GPUViews(queryNames(r)...)
		if err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /v1/fleet/defects", func(w http.ResponseWriter, r *http.Request) {
		sum, err := s.FleetSummary()
		if err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, sum.Defects)
	})
	mux.HandleFunc("POST /v1/fleet/defects", func(w http.ResponseWriter, r *http.Request) {
		var d fleet.Defect
		if err := decode(r, &d); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		if err := s.AddFleetDefect(d); err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusCreated, d)
	})
	mux.HandleFunc("DELETE /v1/fleet/defects", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if err := s.ClearFleetDefect(q.Get("kind"), q.Get("target")); err != nil {
			fail(w, http.StatusConflict, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	s.trainRoutes(mux)
	mux.HandleFunc("GET /v1/fleet/bmcs", func(w http.ResponseWriter, r *http.Request) {
		b := s.BMCs()
		if b == nil {
			b = []BMCEndpoint{}
		}
		reply(w, http.StatusOK, b)
	})
}

// FleetSummary reads the fleet at a glance.
func (c *Client) FleetSummary(ctx context.Context) (fleet.Summary, error) {
	var out fleet.Summary
	return out, c.do(ctx, http.MethodGet, "/v1/fleet", nil, &out)
}

// SetNodes sets nodes' workload, power limit or DCGM version.
func (c *Client) SetNodes(ctx context.Context, req NodeRequest) ([]fleet.Status, error) {
	var out []fleet.Status
	return out, c.do(ctx, http.MethodPost, "/v1/fleet/nodes", req, &out)
}

// Nodes reads the named nodes' state (none: all).
func (c *Client) Nodes(ctx context.Context, names ...string) ([]fleet.Status, error) {
	var out []fleet.Status
	return out, c.do(ctx, http.MethodGet, "/v1/fleet/nodes"+namesQuery(names), nil, &out)
}

// GPUViews reads what the named nodes' GPU tools report.
func (c *Client) GPUViews(ctx context.Context, names ...string) ([]*gputools.Node, error) {
	var out []*gputools.Node
	return out, c.do(ctx, http.MethodGet, "/v1/fleet/gpus"+namesQuery(names), nil, &out)
}

// AddDefect puts a node or tray defect in force.
func (c *Client) AddDefect(ctx context.Context, d fleet.Defect) error {
	return c.do(ctx, http.MethodPost, "/v1/fleet/defects", d, nil)
}

// ClearDefect ends one.
func (c *Client) ClearDefect(ctx context.Context, kind, target string) error {
	q := "?" + url.Values{"kind": {kind}, "target": {target}}.Encode()
	return c.do(ctx, http.MethodDelete, "/v1/fleet/defects"+q, nil, nil)
}

// BMCs lists the BMCs the simulator serves.
func (c *Client) BMCs(ctx context.Context) ([]BMCEndpoint, error) {
	var out []BMCEndpoint
	return out, c.do(ctx, http.MethodGet, "/v1/fleet/bmcs", nil, &out)
}

// TrainReply is what POST /v1/fleet/train and /v1/fleet/stop answer.
type TrainReply struct {
	Pattern  fleet.Pattern `json:"pattern"`
	Training int           `json:"training"` // nodes training now
}

func (s *Sim) trainReply() TrainReply {
	var out TrainReply
	_ = s.Site.WithFleet(func(f *fleet.Fleet) error {
		out.Pattern, _ = f.Job()
		for _, n := range f.Nodes() {
			if n.State() == fleet.Training {
				out.Training++
			}
		}
		return nil
	})
	return out
}

func (s *Sim) trainRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/fleet/train", func(w http.ResponseWriter, r *http.Request) {
		var p fleet.Pattern
		if err := decode(r, &p); err != nil {
			fail(w, http.StatusBadRequest, err)
			return
		}
		if err := s.Site.Train(p); err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, s.trainReply())
	})
	mux.HandleFunc("POST /v1/fleet/stop", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Site.StopTraining(); err != nil {
			failFleet(w, err)
			return
		}
		reply(w, http.StatusOK, s.trainReply())
	})
}

// Train starts the grid job on every node that is on (POST
// /v1/fleet/train).
func (c *Client) Train(ctx context.Context, p fleet.Pattern) error {
	return c.do(ctx, http.MethodPost, "/v1/fleet/train", p, nil)
}

// StopTraining sets every training node idle (POST /v1/fleet/stop).
func (c *Client) StopTraining(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "/v1/fleet/stop", struct{}{}, nil)
}

func namesQuery(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return "?" + url.Values{"names": {strings.Join(names, ",")}}.Encode()
}
