package liveview

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/seamdc/seam/internal/listen"
)

// Role is what a token may do.
type Role string

// The roles: an operator watches, pauses, resumes and aborts; a viewer
// only watches.
const (
	Operator Role = "operator"
	Viewer   Role = "viewer"
)

// Token lets its holder in: Name is who the records say acted.
type Token struct {
	Role  Role
	Name  string
	Value string
}

// minTokenLen is the shortest token accepted from a file: 16 random
// bytes written as hex are 32 characters.
const minTokenLen = 32

// ReadTokens reads a token file: one token a line, "operator NAME TOKEN"
// or "viewer NAME TOKEN"; blank lines and lines starting with # are
// ignored. NAME is who the run's records say paused or aborted.
func ReadTokens(path string) ([]Token, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("live view tokens: %w", err)
	}
	var out []Token
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: want \"operator NAME TOKEN\" or \"viewer NAME TOKEN\", got %d fields", path, n, len(f))
		}
		role := Role(f[0])
		if role != Operator && role != Viewer {
			return nil, fmt.Errorf("%s:%d: the role is operator or viewer, not %q", path, n, f[0])
		}
		if len(f[2]) < minTokenLen {
			return nil, fmt.Errorf("%s:%d: the token of %s is %d characters: use at least %d random ones (openssl rand -hex 16)", path, n, f[1], len(f[2]), minTokenLen)
		}
		if prev, dup := seen[f[2]]; dup {
			return nil, fmt.Errorf("%s:%d: the same token as line %d: give every person a token of their own", path, n, prev)
		}
		seen[f[2]] = n
		out = append(out, Token{Role: role, Name: f[1], Value: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no tokens: add a line \"operator NAME TOKEN\"", path)
	}
	return out, nil
}

// NewToken is a random token for role, held by name.
func NewToken(role Role, name string) Token {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return Token{Role: role, Name: name, Value: hex.EncodeToString(b)}
}

// find is the token whose value is v, compared in constant time.
func find(tokens []Token, v string) (Token, bool) {
	var got Token
	ok := false
	for _, t := range tokens {
		if subtle.ConstantTimeCompare([]byte(t.Value), []byte(v)) == 1 {
			got, ok = t, true
		}
	}
	return got, ok && v != ""
}

// CheckAddr refuses an address a browser on another host could reach
// unless the tokens were configured (a token file): generated tokens are
// printed on the operator's terminal, and only that machine should see
// the page then.
func CheckAddr(addr string, configured bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("live view address %q: %w (want HOST:PORT, e.g. 127.0.0.1:8642)", addr, err)
	}
	if listen.LoopbackHost(host) || configured {
		return nil
	}
	return fmt.Errorf("live view address %s is not loopback: anyone who can reach it could watch the run; give --ui-token-file FILE (lines \"operator NAME TOKEN\", \"viewer NAME TOKEN\") to serve it beyond this machine", addr)
}
