// Package fwimage is seam's firmware image server: what a BMC's
// SimpleUpdate fetches its image from during a rollout. It serves only
// the images it was given (a baseline's), each checked against its
// sha256 when the server starts and again before every grant; a BMC
// gets an image only through a URL that carries a one-time token, which
// the rollout grants for one update and which expires unused after a
// while; beyond loopback it listens only with TLS. Tokens never reach a
// log: the log names a token by the first bytes of its digest.
package fwimage

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/listen"
)

// Image is a firmware image the server may serve.
type Image struct {
	// Digest is "sha256:" and the hex digest of the file's bytes.
	Digest string
	// Path is the file.
	Path string
	// Name says what it is, for people: "bmc 1.4.2 of gb300-tray".
	Name string
}

// Options configure a server.
type Options struct {
	// Listen is the address (default 127.0.0.1:0). Beyond loopback TLS
	// is required.
	Listen string
	// TLS serves HTTPS (nil: plain HTTP, on loopback only).
	TLS *tls.Config
	// Advertise is the host BMCs reach the server by, in the URLs it
	// grants (default: the listening address).
	Advertise string
	// TTL is how long a granted token stays usable (default 15 min).
	TTL   time.Duration
	Clock clock.Clock
	Log   *slog.Logger
}

// Fetch is one request for an image: who asked, for what, and what
// the server answered.
type Fetch struct {
	At     time.Time
	Remote string
	Token  string // the first 12 hex digits of the token's sha256
	Digest string // the image granted ("" when the token was not)
	Status int
	Bytes  int64
}

// Server serves images.
type Server struct {
	opt    Options
	images map[string]Image // by digest
	ln     net.Listener
	srv    *http.Server
	base   string

	mu      sync.Mutex
	grants  map[[sha256.Size]byte]*grant // by the token's digest
	fetches []Fetch
}

type grant struct {
	digest  string
	bmc     string
	expires time.Time
	used    bool
}

// ErrNotServed is an image the server was not given.
var ErrNotServed = errors.New("not one of the images this server serves")

// New checks every image against its digest and listens; Serve starts
// answering.
func New(images []Image, opt Options) (*Server, error) {
	if opt.Listen == "" {
		opt.Listen = "127.0.0.1:0"
	}
	if opt.TTL <= 0 {
		opt.TTL = 15 * time.Minute
	}
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.TLS == nil && !listen.Loopback(opt.Listen) {
		return nil, fmt.Errorf("image server: listen %s is beyond loopback, where images are served only over TLS: give a certificate and key, or listen on 127.0.0.1", opt.Listen)
	}
	s := &Server{opt: opt, images: map[string]Image{}, grants: map[[sha256.Size]byte]*grant{}}
	for _, im := range images {
		if err := checkDigest(im); err != nil {
			return nil, err
		}
		s.images[im.Digest] = im
	}
	ln, err := net.Listen("tcp", opt.Listen)
	if err != nil {
		return nil, fmt.Errorf("image server: %w", err)
	}
	scheme := "http"
	if opt.TLS != nil {
		ln, scheme = tls.NewListener(ln, opt.TLS), "https"
	}
	host := ln.Addr().String()
	if opt.Advertise != "" {
		_, port, _ := net.SplitHostPort(host)
		host = net.JoinHostPort(opt.Advertise, port)
	}
	s.ln, s.base = ln, scheme+"://"+host
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(opt.Log.Handler(), slog.LevelWarn)}
	return s, nil
}

// Serve answers requests until Close.
func (s *Server) Serve() {
	go func() {
		if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.opt.Log.Error("image server stopped", "err", err)
		}
	}()
}

// URL is the server's base URL.
func (s *Server) URL() string { return s.base }

// Close stops the server.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Grant gives one BMC (named, for the record) one fetch of the image
// with digest: the URL to put in its SimpleUpdate's ImageURI. The file
// is checked against its digest again first: an image changed on disk
// since the server started is not served.
func (s *Server) Grant(digest, bmc string) (string, error) {
	im, ok := s.images[digest]
	if !ok {
		return "", fmt.Errorf("image server: %s: %w", digest, ErrNotServed)
	}
	if err := checkDigest(im); err != nil {
		return "", err
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("image server: a token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(tok))
	s.mu.Lock()
	s.grants[sum] = &grant{digest: digest, bmc: bmc, expires: s.opt.Clock.Now().Add(s.opt.TTL)}
	s.mu.Unlock()
	s.opt.Log.Info("image granted", "image", im.Name, "digest", digest, "bmc", bmc, "token", tokenID(sum))
	return s.base + "/images/" + tok + "/" + filepath.Base(im.Path), nil
}

// Fetches are the requests for images so far, in order.
func (s *Server) Fetches() []Fetch {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fetch(nil), s.fetches...)
}

// serve answers GET /images/TOKEN/NAME: the image, once, before the
// token expires (NAME, the image's file name, is what a BMC shows of
// the URL in its messages; the token is not); 404 for anything else,
// whatever the reason, so that a prober learns nothing.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/images/")
	tok, name, _ := strings.Cut(rest, "/")
	if !ok || tok == "" || name == "" || strings.Contains(name, "/") || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256([]byte(tok))
	f := Fetch{At: s.opt.Clock.Now(), Remote: r.RemoteAddr, Token: tokenID(sum), Status: http.StatusNotFound}
	defer func() { s.record(f) }()
	g := s.take(sum, f.At, r.Method == http.MethodGet)
	if g != nil && filepath.Base(s.images[g.digest].Path) != name {
		g = nil // the token of another image's URL
	}
	if g == nil {
		s.opt.Log.Warn("image refused: no such token, used or expired", "remote", r.RemoteAddr, "token", f.Token)
		http.NotFound(w, r)
		return
	}
	im := s.images[g.digest]
	file, err := os.Open(im.Path)
	if err != nil {
		s.opt.Log.Error("image unreadable", "image", im.Name, "err", err)
		f.Status = http.StatusInternalServerError
		http.Error(w, "image unreadable", f.Status)
		return
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		f.Status = http.StatusInternalServerError
		http.Error(w, "image unreadable", f.Status)
		return
	}
	f.Digest, f.Status = g.digest, http.StatusOK
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", fmt.Sprint(st.Size()))
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	f.Bytes, _ = io.Copy(w, file)
	s.opt.Log.Info("image served", "image", im.Name, "bmc", g.bmc, "remote", r.RemoteAddr, "bytes", f.Bytes, "token", f.Token)
}

// take finds a usable grant by its token's digest; a GET uses it up.
func (s *Server) take(sum [sha256.Size]byte, now time.Time, use bool) *grant {
	s.mu.Lock()
	defer s.mu.Unlock()
	// looked up by the token's digest: how long a lookup takes tells
	// nothing about a token's bytes
	found := s.grants[sum]
	if found == nil || found.used || now.After(found.expires) {
		return nil
	}
	if use {
		found.used = true
	}
	return found
}

func (s *Server) record(f Fetch) {
	s.mu.Lock()
	s.fetches = append(s.fetches, f)
	s.mu.Unlock()
}

func tokenID(sum [sha256.Size]byte) string { return hex.EncodeToString(sum[:6]) }

// checkDigest hashes the image's file and compares it with its digest.
func checkDigest(im Image) error {
	want, ok := strings.CutPrefix(im.Digest, "sha256:")
	if !ok || len(want) != 64 {
		return fmt.Errorf("image server: %s (%s): digest %q: write sha256: and 64 hex digits", im.Name, im.Path, im.Digest)
	}
	f, err := os.Open(im.Path)
	if err != nil {
		return fmt.Errorf("image server: %s: %w", im.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("image server: %s: %w", im.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("image server: %s (%s) is sha256:%s, not the baseline's %s: the file changed or is another image; it is not served", im.Name, im.Path, got, im.Digest)
	}
	return nil
}
