// Package bmchttp is the HTTP client seam talks to one BMC with (sat
// discover's walks, sat cap and facilityd's cap reconciler; contractc
// redfish --import's reads of a live service): its own connections, at
// most a few at once, a timeout per request, no proxy, and a 503's
// Retry-After waited out on a Clock; and the Redfish login through
// gofish over it (Connect).
package bmchttp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/clock"
)

// Access is how seam reaches a site's BMCs: the credentials and the
// limits every walk or write keeps.
type Access struct {
	// one account for every BMC, or (when Secrets is set) each BMC's
	// account from the secrets file
	User, Password string
	Secrets        *bmcsecret.File
	Basic          bool          // basic authentication instead of a session
	Insecure       bool          // accept self-signed certificates
	Timeout        time.Duration // a request's, and the TLS handshake's (default 10 s)
	Parallel       int           // BMCs at once (default 64)
	PerBMC         int           // requests in flight to one BMC: 1 (default) or 2
	Retries        int           // 503s retried after their Retry-After (default 3)
	MaxWait        time.Duration // the longest Retry-After waited (default 30 s)
	Clock          clock.Clock   // the waits for Retry-After (default the wall clock)
	Log            *slog.Logger
}

// WithDefaults fills in what a is silent about.
func (a Access) WithDefaults() Access {
	if a.Timeout <= 0 {
		a.Timeout = 10 * time.Second
	}
	if a.Parallel <= 0 {
		a.Parallel = 64
	}
	a.PerBMC = min(max(a.PerBMC, 1), 2)
	if a.Retries <= 0 {
		a.Retries = 3
	}
	if a.MaxWait <= 0 {
		a.MaxWait = 30 * time.Second
	}
	if a.Clock == nil {
		a.Clock = clock.Real{}
	}
	if a.Log == nil {
		a.Log = slog.New(slog.DiscardHandler)
	}
	return a
}

// FromBinding is the access a binding's bmcs section gives, its
// password resolved or its secrets file read.
func FromBinding(bm *binding.BMCs, lookupEnv func(string) (string, bool)) (Access, error) {
	a := Access{Basic: bm.Auth == "basic", Insecure: bm.Insecure, Timeout: bm.Timeout, Parallel: bm.Parallel, PerBMC: bm.PerBMC}
	if bm.Secrets != "" {
		f, err := bmcsecret.Load(bm.Secrets)
		a.Secrets = f
		return a, err
	}
	pw, err := bm.Password.Resolve(lookupEnv)
	a.User, a.Password = bm.User, pw
	return a, err
}

// ErrCredentialLost is a BMC that refused every secret the site holds
// for it (credential_lost).
var ErrCredentialLost = errors.New("credential_lost")

// credentials are the logins to try on the BMC called name, in order.
func (a Access) credentials(name string) ([]bmcsecret.Credential, error) {
	if a.Secrets != nil {
		return a.Secrets.For(name)
	}
	return []bmcsecret.Credential{{User: a.User, Secret: a.Password, Which: bmcsecret.Active}}, nil
}

// Client is one BMC's HTTP client and the function that closes its
// idle connections; waited, when set, is told of each Retry-After
// waited out.
func (a Access) Client(waited func(time.Duration)) (*http.Client, func()) {
	return New(Options{PerBMC: a.PerBMC, Timeout: a.Timeout, Insecure: a.Insecure, Retries: a.Retries, MaxWait: a.MaxWait, Clock: a.Clock, Waited: waited})
}

// Connect logs in to the Redfish service at url of the BMC called name
// through gofish over client (one of a's Clients): a session, or basic
// authentication when a.Basic says so; at most a.PerBMC requests in
// flight; client's transport kept as it is (its connections, timeout
// and Retry-After waits) and its connections reused. It tries the BMC's
// active secret, then its pending one on a login refused (401 or 403);
// a BMC that refuses both is ErrCredentialLost. The caller logs out.
func (a Access) Connect(ctx context.Context, client *http.Client, name, url string) (*gofish.APIClient, error) {
	api, _, err := a.Login(ctx, client, name, url)
	return api, err
}

// Login is Connect, and says which of the BMC's credentials it took.
func (a Access) Login(ctx context.Context, client *http.Client, name, url string) (*gofish.APIClient, bmcsecret.Credential, error) {
	creds, err := a.credentials(name)
	if err != nil {
		return nil, bmcsecret.Credential{}, err
	}
	var refused []string
	for _, c := range creds {
		api, err := a.ConnectAs(ctx, client, url, c)
		if err == nil || !RefusedLogin(err) {
			return api, c, err
		}
		if a.Secrets == nil {
			return nil, c, err // one account: the BMC's own answer
		}
		refused = append(refused, c.String())
		a.WithDefaults().Log.Debug("BMC refused a login", "bmc", name, "credential", c.String())
	}
	return nil, bmcsecret.Credential{}, fmt.Errorf("%w: BMC %s refused every secret the site holds for it (%s): docs/bmc-credentials.md says what to do",
		ErrCredentialLost, name, strings.Join(refused, ", "))
}

// ConnectAs logs in with one credential, as Connect does.
func (a Access) ConnectAs(ctx context.Context, client *http.Client, url string, c bmcsecret.Credential) (*gofish.APIClient, error) {
	return gofish.ConnectContext(ctx, gofish.ClientConfig{Endpoint: strings.TrimSuffix(url, "/"), Username: c.User, Password: c.Secret,
		BasicAuth: a.Basic, HTTPClient: client, NoModifyTransport: true, ReuseConnections: true, MaxConcurrentRequests: int64(max(a.PerBMC, 1))})
}

// RefusedLogin says whether err is the BMC refusing the credentials.
func RefusedLogin(err error) bool {
	var re *schemas.Error
	return errors.As(err, &re) && (re.HTTPReturnedStatusCode == http.StatusUnauthorized || re.HTTPReturnedStatusCode == http.StatusForbidden)
}

// SessionsFull reports whether a login was refused because the BMC
// holds as many sessions as it allows (503, SessionLimitExceeded):
// sessions of a client stopped without logging out (killed) stay until
// they time out.
func SessionsFull(err error) bool {
	var re *schemas.Error
	if !errors.As(err, &re) || re.HTTPReturnedStatusCode != http.StatusServiceUnavailable {
		return false
	}
	return strings.Contains(err.Error(), "SessionLimitExceeded") || strings.Contains(err.Error(), "simultaneous sessions")
}

// Options are one BMC's client settings.
type Options struct {
	PerBMC   int           // connections (and so requests in flight) at most
	Timeout  time.Duration // a request's, and the TLS handshake's
	Insecure bool          // accept a self-signed certificate
	Retries  int           // 503s waited out before the 503 goes to the caller
	MaxWait  time.Duration // a longer Retry-After goes to the caller at once
	Clock    clock.Clock
	// Waited, when set, is told of each wait.
	Waited func(d time.Duration)
}

// New is one BMC's client and the function that closes its idle
// connections.
func New(o Options) (*http.Client, func()) {
	base := &http.Transport{
		Proxy:               nil,
		MaxIdleConnsPerHost: o.PerBMC,
		MaxConnsPerHost:     o.PerBMC,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: o.Timeout,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: o.Insecure, MinVersion: tls.VersionTLS12}, //nolint:gosec // a BMC's self-signed certificate, when asked
	}
	rt := &retryTransport{base: base, clk: o.Clock, retries: o.Retries, maxWait: o.MaxWait, waited: o.Waited}
	return &http.Client{Timeout: o.Timeout, Transport: rt}, base.CloseIdleConnections
}

// retryTransport honours a BMC's 503 Retry-After: it waits as long as
// the BMC asks (up to maxWait, on the clock) and sends the request
// again, up to retries times; then the 503 goes to the caller.
type retryTransport struct {
	base    http.RoundTripper
	clk     clock.Clock
	retries int
	maxWait time.Duration
	waited  func(d time.Duration)
}

func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := t.base.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || attempt >= t.retries {
			return resp, err
		}
		wait := RetryAfter(resp.Header.Get("Retry-After"), t.clk.Now())
		if wait > t.maxWait {
			return resp, nil
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if req.Body != nil {
			if req.GetBody == nil {
				return nil, fmt.Errorf("503 with Retry-After, and the request's body cannot be sent again")
			}
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
		if t.waited != nil {
			t.waited(wait)
		}
		if err := t.clk.Sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

// RetryAfter reads a Retry-After header: seconds, or an HTTP date; one
// second when it has none or one that cannot be read.
func RetryAfter(h string, now time.Time) time.Duration {
	if h == "" {
		return time.Second
	}
	if n, err := strconv.Atoi(h); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if at, err := http.ParseTime(h); err == nil {
		return max(at.Sub(now), 0)
	}
	return time.Second
}
