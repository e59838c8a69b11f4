package fwupdate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// conn is the BMC's session through gofish: a request whose session
// the BMC forgot (401 after its reboot) logs in again once and is sent
// again; a request that gets no answer, or a 503 the transport's
// retries did not outlast, is the BMC down (errDown).
type conn struct {
	ctx   context.Context
	c     *gofish.APIClient
	login func(ctx context.Context) (*gofish.APIClient, error)
	made  []*gofish.APIClient // sessions made here: logged out at the end
}

// errDown is a BMC that did not answer: rebooting, or gone.
type errDown struct{ err error }

func (e *errDown) Error() string { return "no answer: " + e.err.Error() }
func (e *errDown) Unwrap() error { return e.err }

// isDown reports whether err is the BMC not answering.
func isDown(err error) bool {
	var d *errDown
	return errors.As(err, &d)
}

// statusOf is the HTTP status of a BMC's error answer (0: none).
func statusOf(err error) int {
	var re *schemas.Error
	if errors.As(err, &re) {
		return re.HTTPReturnedStatusCode
	}
	return 0
}

// reply is a BMC's answer: its status, headers and JSON document.
type reply struct {
	status int
	header http.Header
	doc    map[string]any
}

// do sends a request with a JSON body (nil: none).
func (k *conn) do(method, uri string, body any) (reply, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return reply{}, err
		}
	}
	return k.raw(method, uri, payload, "application/json")
}

// raw sends a request with payload of contentType, logging in again
// once where the BMC forgot the session.
func (k *conn) raw(method, uri string, payload []byte, contentType string) (reply, error) {
	if k.c == nil {
		if err := k.relogin(); err != nil {
			return reply{}, err
		}
	}
	rep, err := k.send(method, uri, payload, contentType)
	if statusOf(err) == http.StatusUnauthorized && k.login != nil {
		if err := k.relogin(); err != nil {
			return reply{}, err
		}
		rep, err = k.send(method, uri, payload, contentType)
	}
	return rep, err
}

func (k *conn) send(method, uri string, payload []byte, contentType string) (reply, error) {
	var body io.ReadSeeker
	if payload != nil {
		body = bytes.NewReader(payload)
	}
	resp, err := k.c.RunRawRequestWithHeaders(method, uri, body, contentType, nil)
	if err != nil {
		return reply{}, k.classify(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return reply{}, &errDown{err}
	}
	rep := reply{status: resp.StatusCode, header: resp.Header}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &rep.doc); err != nil {
			return rep, fmt.Errorf("%s %s: %d with a body that is not JSON: %w", method, uri, resp.StatusCode, err)
		}
	}
	return rep, nil
}

// classify is a request's error: the BMC's answer, a context done, or
// the BMC down.
func (k *conn) classify(err error) error {
	if k.ctx.Err() != nil {
		return k.ctx.Err()
	}
	switch s := statusOf(err); {
	case s == http.StatusServiceUnavailable:
		return &errDown{err}
	case s != 0:
		return err
	}
	return &errDown{err}
}

// relogin logs in through the caller's function: a refused login is
// the BMC's answer, anything else the BMC down.
func (k *conn) relogin() error {
	if k.login == nil {
		return errors.New("no way to log in again: Options.Login is nil")
	}
	c, err := k.login(k.ctx)
	if err != nil {
		if bmchttp.RefusedLogin(err) || errors.Is(err, bmchttp.ErrCredentialLost) || k.ctx.Err() != nil {
			return fmt.Errorf("login: %w", err)
		}
		return &errDown{fmt.Errorf("login: %w", err)}
	}
	k.c = c
	k.made = append(k.made, c)
	return nil
}

// logout ends the sessions made here (the caller ends its own).
func (k *conn) logout() {
	for _, c := range k.made {
		c.Logout()
	}
}

// members are a collection's member URIs.
func members(doc map[string]any) []string {
	ms, _ := doc["Members"].([]any)
	var out []string
	for _, m := range ms {
		if id := odataID(m); id != "" {
			out = append(out, id)
		}
	}
	return out
}

// odataID is a reference's @odata.id.
func odataID(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["@odata.id"].(string)
	return s
}

// str is a document's string property.
func str(doc map[string]any, key string) string {
	s, _ := doc[key].(string)
	return s
}

// action is a document's action: its target and allowable reset
// types.
func action(doc map[string]any, name string) (string, []string) {
	acts, _ := doc["Actions"].(map[string]any)
	a, _ := acts[name].(map[string]any)
	target, _ := a["target"].(string)
	var types []string
	list, _ := a["ResetType@Redfish.AllowableValues"].([]any)
	for _, t := range list {
		if s, ok := t.(string); ok {
			types = append(types, s)
		}
	}
	return target, types
}

// trimURL is a URL without a trailing slash.
func trimURL(u string) string { return strings.TrimSuffix(u, "/") }
