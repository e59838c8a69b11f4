// Package fwimagetest is for tests only: seam's image server on
// loopback over TLS, serving a simulated firmware image per component,
// as the tests of what updates simulated BMCs start it.
package fwimagetest

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/fwimage"
	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/redfish/bmc"
)

// Images is a running image server and what a test needs of it.
type Images struct {
	Server *fwimage.Server
	// Roots trust the server's certificate (a simulated BMC's
	// ImageRootCAs).
	Roots *x509.CertPool
	// Files and Sums are each component's image file and its bare hex
	// sha256.
	Files, Sums map[string]string
}

// Serve starts the server on clk with a simulated image (16 KiB) of
// each component at its version; its grants last ttl (0: the server's
// default). It stops when the test ends.
func Serve(t testing.TB, clk clock.Clock, ttl time.Duration, versions map[string]string) *Images {
	t.Helper()
	dir := t.TempDir()
	crt, key := peer.SelfSigned(t, dir, "images")
	pair, err := tls.LoadX509KeyPair(crt, key)
	require.NoError(t, err)
	pem, err := os.ReadFile(crt)
	require.NoError(t, err)
	im := &Images{Roots: x509.NewCertPool(), Files: map[string]string{}, Sums: map[string]string{}}
	require.True(t, im.Roots.AppendCertsFromPEM(pem))
	var served []fwimage.Image
	for comp, v := range versions {
		data := bmc.MakeImage(comp, v, 16<<10)
		p := filepath.Join(dir, comp+"-"+v+".bin")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		sum := sha256.Sum256(data)
		im.Files[comp], im.Sums[comp] = p, hex.EncodeToString(sum[:])
		served = append(served, fwimage.Image{Digest: "sha256:" + im.Sums[comp], Path: p, Name: comp + " " + v})
	}
	im.Server, err = fwimage.New(served, fwimage.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, Clock: clk, TTL: ttl})
	require.NoError(t, err)
	im.Server.Serve()
	t.Cleanup(func() { im.Server.Close() })
	return im
}
