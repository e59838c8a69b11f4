package facilityd

import (
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/listen"
)

// AuthConfig are the bearer tokens facilityd's doors take, each read
// from a file (paths relative to the configuration file). Beyond
// loopback every one is required; on loopback a door without a token
// is open to the machine's own users.
type AuthConfig struct {
	// WebhookTokenFile is the token Alertmanager sends: its receiver's
	// http_config.authorization.credentials_file holds the same.
	WebhookTokenFile string `json:"webhook_token_file,omitempty"`
	// ReaderTokenFile is the token /v1/status and /metrics take
	// (Prometheus' scrape_config authorization.credentials_file).
	ReaderTokenFile string `json:"reader_token_file,omitempty"`
}

// TLSConfig is the HTTP listener's certificate and key (PEM files);
// with ClientCAFile, a client that presents a certificate must present
// one that CA signed (mutual TLS for the sources that support it; the
// bearer tokens are required all the same).
type TLSConfig struct {
	CertFile     string `json:"cert_file"`
	KeyFile      string `json:"key_file"`
	ClientCAFile string `json:"client_ca_file,omitempty"`
}

// Server timeouts: a client that sends or reads slowly holds a
// connection at most this long.
const (
	readTimeout  = 30 * time.Second
	writeTimeout = 60 * time.Second
	idleTimeout  = 2 * time.Minute
)

// checkDoors is Config.check's part for the HTTP listener: beyond
// loopback, TLS and every intake's and reader's token are required.
func (c *Config) checkDoors() []error {
	var errs []error
	if c.TLS != nil && (c.TLS.CertFile == "" || c.TLS.KeyFile == "") {
		errs = append(errs, errors.New("tls: cert_file and key_file are both needed"))
	}
	if listen.Loopback(c.Listen) {
		return errs
	}
	var missing []string
	if c.TLS == nil {
		missing = append(missing, "tls.cert_file and tls.key_file")
	}
	if c.Auth.WebhookTokenFile == "" {
		missing = append(missing, "auth.webhook_token_file")
	}
	if c.Auth.ReaderTokenFile == "" {
		missing = append(missing, "auth.reader_token_file")
	}
	for _, h := range c.Heartbeats {
		if h.Device == "" && h.TokenFile == "" {
			missing = append(missing, "heartbeats["+h.Name+"].token_file")
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("listen %s is beyond loopback, where every door needs TLS and a token: set %s (docs/facilityd.md, Doors), or listen on 127.0.0.1",
			c.Listen, strings.Join(missing, ", ")))
	}
	return errs
}

// token is a bearer token, kept as its digest: compared in constant
// time, and never printed.
type token struct{ sum [sha256.Size]byte }

// readToken reads a token file: one line, not readable by everyone.
func readToken(what, path string) (*token, error) {
	if path == "" {
		return nil, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if st.Mode().Perm()&0o004 != 0 {
		return nil, fmt.Errorf("%s: %s is readable by every user of the machine (mode %s): chmod o-r %s", what, path, st.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	s := strings.TrimSpace(string(b))
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("%s: %s must hold one token on one line", what, path)
	}
	if len(s) < 16 {
		return nil, fmt.Errorf("%s: %s holds a token of %d characters: use at least 16 (openssl rand -hex 32)", what, path, len(s))
	}
	return &token{sum: sha256.Sum256([]byte(s))}, nil
}

// allows reports whether r carries the token (nil: the door is open).
func (t *token) allows(r *http.Request) bool {
	if t == nil {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
	return subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1
}

// doors are the tokens the HTTP interface takes.
type doors struct {
	webhook, reader *token
	beats           map[string]*token // by heartbeat name
	counters        map[string]string // heartbeats a device counter beats: never over HTTP
}

func loadDoors(c *Config) (*doors, error) {
	var errs []error
	d := &doors{beats: map[string]*token{}, counters: map[string]string{}}
	var err error
	if d.webhook, err = readToken("auth.webhook_token_file", c.Path(c.Auth.WebhookTokenFile)); err != nil {
		errs = append(errs, err)
	}
	if d.reader, err = readToken("auth.reader_token_file", c.Path(c.Auth.ReaderTokenFile)); err != nil {
		errs = append(errs, err)
	}
	for _, h := range c.Heartbeats {
		if h.Device != "" {
			d.counters[h.Name] = h.Device + "/" + h.Point
			continue
		}
		t, err := readToken("heartbeats["+h.Name+"].token_file", c.Path(h.TokenFile))
		if err != nil {
			errs = append(errs, err)
		}
		d.beats[h.Name] = t
	}
	return d, errors.Join(errs...)
}

// guard admits a request that carries t, and answers 401 naming the
// door (never a token or a server path) to one that does not.
func (d *Daemon) guard(door string, t *token, h http.Handler) http.Handler {
	return guard(door, t, d.Log, func() { d.Metrics.Refused(door, "token") }, h)
}

func guard(door string, t *token, log *slog.Logger, refused func(), h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !t.allows(r) {
			refused()
			log.Warn("refused: no or a wrong bearer token", "door", door, "remote", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", `Bearer realm="facilityd"`)
			http.Error(w, "facilityd: "+door+" needs its bearer token (Authorization: Bearer …)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Listen opens the HTTP listener: TLS where configured, and every
// server timeout set.
func Listen(c *Config, h http.Handler) (*http.Server, net.Listener, error) {
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("listen %s: %w", c.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	if c.TLS == nil {
		return srv, ln, nil
	}
	tc, err := tlsConfig(c)
	if err != nil {
		ln.Close()
		return nil, nil, err
	}
	srv.TLSConfig = tc
	return srv, tls.NewListener(ln, tc), nil
}

func tlsConfig(c *Config) (*tls.Config, error) {
	pair, err := tls.LoadX509KeyPair(c.Path(c.TLS.CertFile), c.Path(c.TLS.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	if c.TLS.ClientCAFile != "" {
		pem, err := os.ReadFile(c.Path(c.TLS.ClientCAFile))
		if err != nil {
			return nil, fmt.Errorf("tls.client_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls.client_ca_file: %s holds no PEM certificate", c.Path(c.TLS.ClientCAFile))
		}
		tc.ClientCAs, tc.ClientAuth = pool, tls.VerifyClientCertIfGiven
	}
	return tc, nil
}
