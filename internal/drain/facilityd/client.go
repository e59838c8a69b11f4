package facilityd

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// clientFlags are how the status and approve commands reach facilityd:
// its address, the CA its TLS certificate is checked against, and the
// reader token /v1/status takes.
type clientFlags struct {
	addr, ca, tokenFile string
}

func (c *clientFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", "http://127.0.0.1:9469", "facilityd's address (https://… where it listens beyond loopback)")
	fs.StringVar(&c.ca, "ca", "", "the CA certificate (PEM) facilityd's TLS certificate is checked against (default: the system's)")
	fs.StringVar(&c.tokenFile, "token-file", "", "the file holding facilityd's reader token (auth.reader_token_file), for /v1/status")
}

// client is an HTTP client for facilityd: its CA trusted where given.
func (c *clientFlags) client(timeout time.Duration) (*http.Client, error) {
	hc := &http.Client{Timeout: timeout}
	if c.ca == "" {
		return hc, nil
	}
	pem, err := os.ReadFile(c.ca)
	if err != nil {
		return nil, fmt.Errorf("--ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca %s holds no PEM certificate", c.ca)
	}
	hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	return hc, nil
}

// get is a GET of path with the reader token where one is given.
func (c *clientFlags) get(path string, timeout time.Duration) (*http.Response, error) {
	hc, err := c.client(timeout)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimRight(c.addr, "/")+path, nil)
	if err != nil {
		return nil, err
	}
	if c.tokenFile != "" {
		b, err := os.ReadFile(c.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--token-file: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(b)))
	}
	return hc.Do(req)
}

// post is a POST of body to path (a signed request needs no token).
func (c *clientFlags) post(path string, body io.Reader, timeout time.Duration) (*http.Response, error) {
	hc, err := c.client(timeout)
	if err != nil {
		return nil, err
	}
	return hc.Post(strings.TrimRight(c.addr, "/")+path, "application/json", body)
}
