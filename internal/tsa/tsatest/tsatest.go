// Package tsatest runs a real RFC 3161 time-stamping authority on
// loopback for tests: Debian's `openssl ts -reply` behind a minimal HTTP
// responder, with a root CA and a time-stamping certificate made for the
// test.
package tsatest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"
)

// Server is an authority on loopback.
type Server struct {
	URL string
	// RootPEM is its root certificate: what a site names to trust it.
	RootPEM []byte
	// Requests counts the stamps it gave.
	Requests atomic.Int64
	// Down makes it answer 503, as an authority in an outage.
	Down atomic.Bool

	openssl, config, dir string
	mu                   sync.Mutex // openssl ts keeps a serial file
	n                    int
}

// Start starts an authority named name; it stops with the test.
func Start(t testing.TB, name string) *Server {
	t.Helper()
	s := &Server{openssl: peer.Need(t, "openssl"), dir: t.TempDir()}
	rootKey, root := cert(t, nil, nil, name+" root", true)
	tsaKey, tsaCert := cert(t, root, rootKey, name+" time-stamping", false)
	s.RootPEM = pemCert(root)
	write(t, filepath.Join(s.dir, "root.crt"), s.RootPEM)
	write(t, filepath.Join(s.dir, "tsa.crt"), pemCert(tsaCert))
	kder, err := x509.MarshalPKCS8PrivateKey(tsaKey)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(s.dir, "tsa.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}))
	write(t, filepath.Join(s.dir, "serial"), []byte("01\n"))
	s.config = filepath.Join(s.dir, "ts.cnf")
	write(t, s.config, fmt.Appendf(nil, `[ tsa ]
default_tsa = tsa_config
[ tsa_config ]
dir = %s
serial = $dir/serial
crypto_device = builtin
signer_cert = $dir/tsa.crt
certs = $dir/root.crt
signer_key = $dir/tsa.key
signer_digest = sha256
default_policy = 1.3.6.1.4.1.99999.1
digests = sha256, sha384, sha512
accuracy = secs:1
ordering = yes
tsa_name = yes
ess_cert_id_chain = no
ess_cert_id_alg = sha256
`, s.dir))
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/tsr"
	return s
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/timestamp-query" {
		http.Error(w, "POST an application/timestamp-query", http.StatusBadRequest)
		return
	}
	if s.Down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	query, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	q, out := filepath.Join(s.dir, fmt.Sprintf("q%d.tsq", s.n)), filepath.Join(s.dir, fmt.Sprintf("r%d.tsr", s.n))
	defer os.Remove(q)
	defer os.Remove(out)
	if err := os.WriteFile(q, query, 0o600); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cmd := exec.Command(s.openssl, "ts", "-reply", "-config", s.config, "-queryfile", q, "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		http.Error(w, fmt.Sprintf("openssl ts: %v: %s", err, b), http.StatusInternalServerError)
		return
	}
	reply, err := os.ReadFile(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s.Requests.Add(1)
	w.Header().Set("Content-Type", "application/timestamp-reply")
	_, _ = w.Write(reply)
}

func cert(t testing.TB, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, cn string, ca bool) (*ecdsa.PrivateKey, *x509.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big63)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn, Organization: []string{"seam tests"}},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour), BasicConstraintsValid: true}
	if ca {
		tmpl.IsCA, tmpl.KeyUsage = true, x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature
		parent, parentKey = tmpl, k
	} else {
		// RFC 3161 2.3: the one extended key usage, critical (openssl
		// refuses a signer without it; Go marks its own non-critical)
		eku, err := asn1.Marshal([]asn1.ObjectIdentifier{{1, 3, 6, 1, 5, 5, 7, 3, 8}})
		if err != nil {
			t.Fatal(err)
		}
		tmpl.KeyUsage = x509.KeyUsageDigitalSignature
		tmpl.ExtraExtensions = []pkix.Extension{{Id: asn1.ObjectIdentifier{2, 5, 29, 37}, Critical: true, Value: eku}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &k.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return k, c
}

var big63 = new(big.Int).Lsh(big.NewInt(1), 62)

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
