// Package tsa gets and checks RFC 3161 time-stamps: proof from an
// authority outside the site that some bytes existed by a time. It
// speaks the protocol through github.com/digitorus/timestamp (the
// library sigstore uses; docs/decisions.md) and adds what a site needs
// on top: the authority's certificate chained to the roots the site
// names, with the time-stamping key usage, at the stamp's time.
package tsa

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"time"

	"github.com/digitorus/pkcs7"
	"github.com/digitorus/timestamp"
)

// Authority is a time-stamping authority the site trusts.
type Authority struct {
	// URL takes a DER time-stamp request by HTTP POST
	// (application/timestamp-query).
	URL string
	// Roots are the certificates an authority's signing certificate
	// must chain to.
	Roots *x509.CertPool
	// Client sends the requests (nil: one with a 5 s timeout).
	Client *http.Client
}

// ParseRoots reads PEM certificates (the roots an authority must chain
// to); where names the file or field in errors.
func ParseRoots(where string, pemData []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	for rest := pemData; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %w", where, n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate: give the authority's root certificate(s)", where)
	}
	return pool, nil
}

// Stamp is a verified time-stamp token.
type Stamp struct {
	// Token is the TimeStampToken (DER CMS SignedData), as kept.
	Token []byte
	// Time is when the authority says the bytes existed.
	Time time.Time
	// Authority is the signing certificate's subject.
	Authority string
}

// Stamp asks the authority for a time-stamp of msg (its SHA-256) and
// checks the answer: the digest, the nonce, the signature and the
// certificate chain.
func (a *Authority) Stamp(ctx context.Context, msg []byte) (*Stamp, error) {
	nonce, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 64))
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(msg)
	req := timestamp.Request{HashAlgorithm: crypto.SHA256, HashedMessage: sum[:], Nonce: nonce, Certificates: true}
	der, err := req.Marshal()
	if err != nil {
		return nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(der))
	if err != nil {
		return nil, fmt.Errorf("time-stamp authority %s: %w", a.URL, err)
	}
	hreq.Header.Set("Content-Type", "application/timestamp-query")
	client := a.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return nil, fmt.Errorf("time-stamp authority %s: %w", a.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("time-stamp authority %s: %w", a.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("time-stamp authority %s: %s", a.URL, resp.Status)
	}
	ts, err := timestamp.ParseResponse(body)
	if err != nil {
		return nil, fmt.Errorf("time-stamp authority %s: its answer: %w", a.URL, err)
	}
	if ts.Nonce == nil || ts.Nonce.Cmp(nonce) != 0 {
		return nil, fmt.Errorf("time-stamp authority %s: the answer is not to this request (nonce)", a.URL)
	}
	st, err := check(ts, msg, a.Roots)
	if err != nil {
		return nil, fmt.Errorf("time-stamp authority %s: %w", a.URL, err)
	}
	return st, nil
}

// Verify checks a kept token offline: it stamps msg, it is signed by a
// certificate that chains to roots with the time-stamping usage at the
// stamp's time.
func Verify(token, msg []byte, roots *x509.CertPool) (*Stamp, error) {
	ts, err := timestamp.Parse(token)
	if err != nil {
		return nil, fmt.Errorf("not a time-stamp token: %w", err)
	}
	return check(ts, msg, roots)
}

func check(ts *timestamp.Timestamp, msg []byte, roots *x509.CertPool) (*Stamp, error) {
	if ts.HashAlgorithm != crypto.SHA256 && ts.HashAlgorithm != crypto.SHA384 && ts.HashAlgorithm != crypto.SHA512 {
		return nil, fmt.Errorf("the stamp uses hash %v: want SHA-256 or stronger", ts.HashAlgorithm)
	}
	h := ts.HashAlgorithm.New()
	h.Write(msg)
	if !bytes.Equal(h.Sum(nil), ts.HashedMessage) {
		return nil, errors.New("the stamp is of other bytes")
	}
	// the library checks the signature only against a certificate the
	// token carries: require one, and chain it to the site's roots
	if len(ts.Certificates) == 0 {
		return nil, errors.New("the token carries no certificate: it cannot be checked")
	}
	p7, err := pkcs7.Parse(ts.RawToken)
	if err != nil {
		return nil, fmt.Errorf("not a time-stamp token: %w", err)
	}
	signer := p7.GetOnlySigner()
	if signer == nil {
		return nil, errors.New("the token has not exactly one signer")
	}
	inter := x509.NewCertPool()
	for _, c := range ts.Certificates {
		if !c.Equal(signer) {
			inter.AddCert(c)
		}
	}
	if _, err := signer.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: ts.Time,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageTimeStamping}}); err != nil {
		return nil, fmt.Errorf("the stamp is signed by %q, which is not an authority the site trusts: %w", signer.Subject.String(), err)
	}
	return &Stamp{Token: ts.RawToken, Time: ts.Time.UTC(), Authority: signer.Subject.String()}, nil
}
