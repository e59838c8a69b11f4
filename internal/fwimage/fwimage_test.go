package fwimage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/fwimage"
	"github.com/seamdc/seam/internal/peer"
)

// image writes an image file and returns it with its digest.
func image(t *testing.T, dir, name string, body []byte) fwimage.Image {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, body, 0o644))
	sum := sha256.Sum256(body)
	return fwimage.Image{Digest: "sha256:" + hex.EncodeToString(sum[:]), Path: p, Name: name}
}

// tlsServer serves images over TLS on loopback with a fake clock and
// returns a client that trusts its certificate.
func tlsServer(t *testing.T, images []fwimage.Image, log *bytes.Buffer) (*fwimage.Server, *clock.Fake, *http.Client, string) {
	t.Helper()
	dir := t.TempDir()
	crt, key := peer.SelfSigned(t, dir, "images")
	pair, err := tls.LoadX509KeyPair(crt, key)
	require.NoError(t, err)
	clk := clock.NewFake(time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC))
	opt := fwimage.Options{TLS: &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}, Clock: clk, TTL: 10 * time.Minute}
	if log != nil {
		opt.Log = slog.New(slog.NewTextHandler(log, nil))
	}
	s, err := fwimage.New(images, opt)
	require.NoError(t, err)
	s.Serve()
	t.Cleanup(func() { s.Close() })
	pem, err := os.ReadFile(crt)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(pem))
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	t.Cleanup(c.CloseIdleConnections) // before the server's Close, which waits for open ones
	return s, clk, c, crt
}

func get(t *testing.T, c *http.Client, url string) (int, []byte) {
	t.Helper()
	resp, err := c.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// A granted URL serves its image once, over TLS; then, or after the
// token expires, or for a token never granted, the server answers 404
// and records who asked. Tokens never reach the log.
func TestOneTimeTokens(t *testing.T) {
	dir := t.TempDir()
	bmcImg := image(t, dir, "bmc-1.4.2.bin", bytes.Repeat([]byte("bmc 1.4.2 "), 5000))
	gpuImg := image(t, dir, "gpu-96.00.bin", []byte("gpu firmware 96.00"))
	var log bytes.Buffer
	s, clk, c, _ := tlsServer(t, []fwimage.Image{bmcImg, gpuImg}, &log)
	require.True(t, strings.HasPrefix(s.URL(), "https://127.0.0.1:"), s.URL())

	url, err := s.Grant(bmcImg.Digest, "bmc-a-r01-n01")
	require.NoError(t, err)
	code, body := get(t, c, url)
	require.Equal(t, http.StatusOK, code)
	sum := sha256.Sum256(body)
	assert.Equal(t, bmcImg.Digest, "sha256:"+hex.EncodeToString(sum[:]), "the image's bytes")
	code, _ = get(t, c, url)
	assert.Equal(t, http.StatusNotFound, code, "a token serves once")

	late, err := s.Grant(gpuImg.Digest, "bmc-a-r01-n02")
	require.NoError(t, err)
	clk.Advance(11 * time.Minute)
	code, _ = get(t, c, late)
	assert.Equal(t, http.StatusNotFound, code, "an expired token serves nothing")

	parts := strings.Split(url, "/")
	tok := parts[len(parts)-2]
	assert.Equal(t, "bmc-1.4.2.bin", parts[len(parts)-1], "the URL ends in the image's name, which a BMC shows")
	forged := strings.Replace(url, tok, strings.Repeat("A", len(tok)), 1)
	code, _ = get(t, c, forged)
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = get(t, c, s.URL()+"/images/")
	assert.Equal(t, http.StatusNotFound, code)

	f := s.Fetches()
	require.Len(t, f, 4, "a path without a token is not a fetch")
	assert.Equal(t, []int{200, 404, 404, 404}, []int{f[0].Status, f[1].Status, f[2].Status, f[3].Status})
	assert.Equal(t, int64(50000), f[0].Bytes)
	assert.Equal(t, bmcImg.Digest, f[0].Digest)
	assert.Equal(t, f[0].Token, f[1].Token, "the second try names the same token")
	assert.NotContains(t, log.String(), tok, "the token itself is never logged")
	assert.Contains(t, log.String(), f[0].Token)

	_, err = s.Grant("sha256:"+strings.Repeat("0", 64), "bmc-a-r01-n03")
	assert.ErrorIs(t, err, fwimage.ErrNotServed)
}

// An image whose file does not match its digest is refused when the
// server starts, and one changed on disk afterwards is not granted.
func TestDigestsChecked(t *testing.T) {
	dir := t.TempDir()
	good := image(t, dir, "bmc.bin", []byte("bmc 1.4.2"))
	bad := good
	bad.Digest = "sha256:" + strings.Repeat("ab", 32)
	_, err := fwimage.New([]fwimage.Image{bad}, fwimage.Options{})
	assert.ErrorContains(t, err, "not the baseline's sha256:abab")
	_, err = fwimage.New([]fwimage.Image{{Digest: "md5:0", Path: good.Path, Name: "bmc"}}, fwimage.Options{})
	assert.ErrorContains(t, err, "write sha256: and 64 hex digits")

	s, _, _, _ := tlsServer(t, []fwimage.Image{good}, nil)
	require.NoError(t, os.WriteFile(good.Path, []byte("bmc 6.6.6, patched"), 0o644))
	_, err = s.Grant(good.Digest, "bmc-a-r01-n01")
	assert.ErrorContains(t, err, "the file changed or is another image; it is not served")
}

// Beyond loopback the server listens only with TLS.
func TestTLSBeyondLoopback(t *testing.T) {
	_, err := fwimage.New(nil, fwimage.Options{Listen: "0.0.0.0:0"})
	assert.ErrorContains(t, err, "beyond loopback, where images are served only over TLS")
	s, err := fwimage.New(nil, fwimage.Options{})
	require.NoError(t, err)
	s.Serve()
	defer s.Close()
	assert.True(t, strings.HasPrefix(s.URL(), "http://127.0.0.1:"))
}

// 64 BMCs fetch at once, each its own grant, as a stage's updates do;
// curl (a client that is not Go's) fetches one over TLS too.
func TestManyAtOnceAndCurl(t *testing.T) {
	dir := t.TempDir()
	img := image(t, dir, "gpu.bin", bytes.Repeat([]byte{0x5a}, 1<<20))
	s, _, c, crt := tlsServer(t, []fwimage.Image{img}, nil)
	urls := make([]string, 64)
	for i := range urls {
		var err error
		urls[i], err = s.Grant(img.Digest, "bmc")
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	codes := make([]int, len(urls))
	for i, u := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := c.Get(u)
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if n == 1<<20 {
				codes[i] = resp.StatusCode
			}
		}()
	}
	wg.Wait()
	for i, code := range codes {
		assert.Equal(t, http.StatusOK, code, "fetch %d", i)
	}

	curl := peer.Need(t, "curl")
	u, err := s.Grant(img.Digest, "bmc-curl")
	require.NoError(t, err)
	out := filepath.Join(dir, "fetched.bin")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg, err := exec.CommandContext(ctx, curl, "-sS", "--fail", "--cacert", crt, "-o", out, u).CombinedOutput()
	require.NoError(t, err, "%s", msg)
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	sum := sha256.Sum256(got)
	assert.Equal(t, img.Digest, "sha256:"+hex.EncodeToString(sum[:]))
	msg, err = exec.CommandContext(ctx, curl, "-sS", "--fail", "--cacert", crt, "-o", out, u).CombinedOutput()
	assert.Error(t, err, "curl's second fetch of the same URL is refused")
	assert.Contains(t, string(msg), "404")
}
