package discover

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// retryTransport honours a BMC's 503 Retry-After: it waits as long as
// the BMC asks (up to maxWait, on the clock) and sends the request
// again, up to retries times; then the 503 goes to the caller. It
// counts the waits.
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
		wait := retryAfter(resp.Header.Get("Retry-After"), t.clk.Now())
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

// retryAfter reads a Retry-After header: seconds, or an HTTP date; one
// second when it has none or one that cannot be read.
func retryAfter(h string, now time.Time) time.Duration {
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

// newClient is the HTTP client of one BMC's walk: its own connections
// (at most perBMC of them), a timeout per request, Retry-After
// honoured, and at most ten redirects (a loop of them is an error).
func newClient(o Options, waited func(time.Duration)) *http.Client {
	base := &http.Transport{
		Proxy:               nil,
		MaxIdleConnsPerHost: o.PerBMC,
		MaxConnsPerHost:     o.PerBMC,
		IdleConnTimeout:     30 * time.Second,
		TLSHandshakeTimeout: o.Timeout,
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: o.Insecure, MinVersion: tls.VersionTLS12}, //nolint:gosec // a BMC's self-signed certificate, when asked
	}
	return &http.Client{Timeout: o.Timeout, Transport: &retryTransport{base: base, clk: o.Clock, retries: o.Retries, maxWait: o.MaxWait, waited: waited}}
}

func closeClient(c *http.Client) {
	if rt, ok := c.Transport.(*retryTransport); ok {
		if t, ok := rt.base.(*http.Transport); ok {
			t.CloseIdleConnections()
		}
	}
}
