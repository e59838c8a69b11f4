// Package liveview serves a live view of a running SAT (sat run --ui):
// one page, with no external assets, that follows the run by
// server-sent events (the current case and its steps, live traces
// against the envelopes their checks grade, interlock margins, the time
// left) and, for an operator's token, pause, resume and abort behind a
// confirmation. It is a runner.Observer: the run never waits for it, and
// a slow browser is cut off, never waited for. Pause and abort go to the
// run's own Pause, Unpause and AbortBy: the terminal's paths, never a
// second safety path.
package liveview

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/runner"
)

//go:embed page
var page embed.FS

// Control is what the page's buttons reach: *runner.Runner.
type Control interface {
	Pause(by string) error
	Unpause(by string) error
	AbortBy(by, via string)
}

// Config is a live view's configuration.
type Config struct {
	// Tokens let people in: at least one operator's. A browser sends its
	// token in the X-Seam-Token header (the page reads it from the
	// address's #token= fragment, which is never sent to the server);
	// the event stream, which a browser cannot give headers, takes it as
	// ?token=.
	Tokens  []Token
	Control Control
	Log     *slog.Logger
	// ClientQueue is how many events wait for one browser before it is
	// cut off (it reconnects and starts again from the state); default
	// 1024.
	ClientQueue int
	// WriteTimeout bounds one write to a browser (wall time); default
	// 10 s.
	WriteTimeout time.Duration
}

// TokenHeader carries a token on the page's requests.
const TokenHeader = "X-Seam-Token"

// via is how the records name the live view.
const via = "the live view"

// Server is a live view.
type Server struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	st      *State
	clients map[*client]struct{}

	droppedClients atomic.Int64
	closing        chan struct{}
	closeOnce      sync.Once
	ended          chan struct{} // closed at the run's end event
	endOnce        sync.Once
}

type client struct {
	q    chan []byte
	gone chan struct{}
	once sync.Once
}

func (c *client) drop() { c.once.Do(func() { close(c.gone) }) }

// New makes a live view.
func New(cfg Config) (*Server, error) {
	ops := 0
	for _, t := range cfg.Tokens {
		if t.Role == Operator {
			ops++
		}
	}
	switch {
	case ops == 0:
		return nil, errors.New("live view: no operator token: nobody could pause or abort from the page")
	case cfg.Control == nil:
		return nil, errors.New("live view: nothing to control")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientQueue <= 0 {
		cfg.ClientQueue = 1024
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	return &Server{cfg: cfg, log: cfg.Log, st: newState(), clients: map[*client]struct{}{}, closing: make(chan struct{}), ended: make(chan struct{})}, nil
}

// Observe takes one event of the run: it updates the state and queues
// the event to every browser, cutting off one whose queue is full. It
// never blocks on a browser.
func (s *Server) Observe(ev runner.Event) {
	raw, err := json.Marshal(ev)
	if err != nil {
		s.log.Error("live view: cannot encode an event", "kind", ev.Kind, "err", err)
		return
	}
	msg := sseMessage(ev.Seq, raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.apply(ev)
	if ev.Kind == runner.EventEnd {
		s.endOnce.Do(func() { close(s.ended) })
	}
	for c := range s.clients {
		select {
		case c.q <- msg:
		default:
			s.cutLocked(c, "its queue is full")
		}
	}
}

func sseMessage(seq int64, data []byte) []byte {
	return fmt.Appendf(nil, "id: %d\ndata: %s\n\n", seq, data)
}

// cutLocked cuts off a browser that fell behind; called with mu held.
func (s *Server) cutLocked(c *client, why string) {
	if _, ok := s.clients[c]; !ok {
		return
	}
	delete(s.clients, c)
	c.drop()
	n := s.droppedClients.Add(1)
	s.log.Warn("live view: a browser fell behind and was cut off (it reconnects)", "why", why, "dropped_clients", n)
}

// Snapshot is the state now.
func (s *Server) Snapshot() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := *s.st
	st.DroppedClients = s.droppedClients.Load()
	return st
}

// Clients is how many browsers follow the run now.
func (s *Server) Clients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// Handler serves the page, the event stream and the controls.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /", s.static("page/index.html", "text/html; charset=utf-8"))
	mux.Handle("GET /app.js", s.static("page/app.js", "text/javascript; charset=utf-8"))
	mux.Handle("GET /app.css", s.static("page/app.css", "text/css; charset=utf-8"))
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /api/state", s.state)
	mux.HandleFunc("POST /api/{action}", s.control)
	return mux
}

// Serve serves on l until ctx ends or Close.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.closing:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	err := hs.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close ends Serve and the event streams; each stream first sends the
// events already queued for it (the run's end, most often).
func (s *Server) Close() { s.closeOnce.Do(func() { close(s.closing) }) }

// Ended is closed once the run's end event came.
func (s *Server) Ended() <-chan struct{} { return s.ended }

func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
}

func (s *Server) static(name, ctype string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if name == "page/index.html" && r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		raw, err := page.ReadFile(name)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		secure(w)
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(raw)
	})
}

// who is the token r carries, in the header or (for GETs only) ?token=.
func (s *Server) who(r *http.Request, query bool) (Token, bool) {
	v := r.Header.Get(TokenHeader)
	if v == "" && query {
		v = r.URL.Query().Get("token")
	}
	return find(s.cfg.Tokens, v)
}

func refuse(w http.ResponseWriter, code int, msg string) {
	secure(w)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": false, "error": msg})
}

const noToken = "no valid token: open the address sat run printed (it ends in #token=…), or ask the operator for a viewer token"

func (s *Server) state(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.who(r, true); !ok {
		refuse(w, http.StatusUnauthorized, noToken)
		return
	}
	st := s.Snapshot()
	secure(w)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// hello is the first event a browser gets: who it is, then the state.
type hello struct {
	Kind  string `json:"kind"` // "hello"
	Role  Role   `json:"role"`
	Name  string `json:"name"`
	State State  `json:"state"`
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	tok, ok := s.who(r, true)
	if !ok {
		refuse(w, http.StatusUnauthorized, noToken)
		return
	}
	c := &client{q: make(chan []byte, s.cfg.ClientQueue), gone: make(chan struct{})}
	s.mu.Lock()
	st := *s.st
	st.DroppedClients = s.droppedClients.Load()
	first, err := json.Marshal(hello{Kind: "hello", Role: tok.Role, Name: tok.Name, State: st})
	s.clients[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.clients, c)
		s.mu.Unlock()
	}()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	secure(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	send := func(msg []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout))
		if _, err := w.Write(msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send(sseMessage(st.Seq, first)) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.gone:
			return
		case <-s.closing:
			for {
				select {
				case msg := <-c.q:
					if !send(msg) {
						return
					}
				default:
					return
				}
			}
		case msg := <-c.q:
			if !send(msg) {
				if r.Context().Err() == nil { // not gone by itself: too slow
					s.mu.Lock()
					s.cutLocked(c, "a write timed out")
					s.mu.Unlock()
				}
				return
			}
		}
	}
}

// request is the body of a control request: the page sends it once the
// person confirmed.
type request struct {
	Confirmed bool `json:"confirmed"`
}

// control is POST /api/pause, /api/resume, /api/abort: an operator's
// token in the X-Seam-Token header (never the query: a form or a link
// from another site cannot set a header), a same-origin request, and
// {"confirmed": true}.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	action := r.PathValue("action")
	if action != "pause" && action != "resume" && action != "abort" {
		refuse(w, http.StatusNotFound, "no such action "+action+": pause, resume or abort")
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
		refuse(w, http.StatusForbidden, "a request from another site ("+o+") is refused")
		return
	}
	tok, ok := s.who(r, false)
	switch {
	case !ok:
		refuse(w, http.StatusUnauthorized, "no valid token in the "+TokenHeader+" header: open the address sat run printed")
		return
	case tok.Role != Operator:
		refuse(w, http.StatusForbidden, tok.Name+" has a viewer's token: only an operator may "+action+" the run")
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1024)).Decode(&req); err != nil || !req.Confirmed {
		refuse(w, http.StatusBadRequest, `send {"confirmed": true} once the person confirmed the `+action)
		return
	}
	by := tok.Name + " (" + via + ")"
	var err error
	switch action {
	case "pause":
		err = s.cfg.Control.Pause(by)
	case "resume":
		err = s.cfg.Control.Unpause(by)
	case "abort":
		s.cfg.Control.AbortBy(tok.Name, via)
	}
	s.log.Warn("live view: "+action, "by", tok.Name, "err", err)
	if err != nil {
		refuse(w, http.StatusConflict, err.Error())
		return
	}
	secure(w)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "by": by})
}
