package bmc

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

type session struct {
	id, token, user string
	last            time.Time
}

func token() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// expire ends the sessions unused for longer than the timeout; with
// b.mu held.
func (b *BMC) expire(now time.Time) {
	for id, s := range b.sessions {
		if now.Sub(s.last) > b.cfg.SessionTimeout {
			delete(b.sessions, id)
		}
	}
}

// authorized checks a request's X-Auth-Token or basic credentials, and
// answers 401 when they do not hold; it is who made the request.
func (b *BMC) authorized(w http.ResponseWriter, r *http.Request) (caller, bool) {
	now := b.src.Now()
	b.mu.Lock()
	b.expire(now)
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		for _, s := range b.sessions {
			if subtle.ConstantTimeCompare([]byte(s.token), []byte(tok)) == 1 {
				s.last = now
				b.mu.Unlock()
				return caller{user: s.user, session: s.id}, true
			}
		}
		b.stats.Unauthorized++
		b.mu.Unlock()
		unauthorized(w, "NoValidSession", "There is no valid session established with the implementation.",
			"Establish as session before attempting any operations.", nil)
		return caller{}, false
	}
	user, pass, ok := r.BasicAuth()
	if ok && b.credentialsOK(user, pass, now) {
		b.mu.Unlock()
		return caller{user: user}, true
	}
	b.stats.Unauthorized++
	b.mu.Unlock()
	unauthorized(w, "ResourceAtUriUnauthorized", fmt.Sprintf("While accessing the resource at %s, the service received an authorization error unauthorized.", r.URL.Path),
		"Ensure that the appropriate access is provided for the service in order for it to access the URI.", []string{r.URL.Path, "unauthorized"})
	return caller{}, false
}

func unauthorized(w http.ResponseWriter, id, msg, resolution string, args []string) {
	w.Header().Set("WWW-Authenticate", `Basic realm="seam simulated BMC"`)
	writeError(w, http.StatusUnauthorized, id, msg, resolution, args)
}

// login makes a session: POST /redfish/v1/SessionService/Sessions with
// {"UserName", "Password"}.
func (b *BMC) login(w http.ResponseWriter, r *http.Request) {
	var body struct{ UserName, Password string }
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14)).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
			"Ensure that the request body is valid JSON and resubmit the request.", nil)
		return
	}
	now := b.src.Now()
	b.mu.Lock()
	b.expire(now)
	if !b.credentialsOK(body.UserName, body.Password, now) {
		b.stats.Unauthorized++
		b.mu.Unlock()
		unauthorized(w, "ResourceAtUriUnauthorized", fmt.Sprintf("While accessing the resource at %s, the service received an authorization error unauthorized.", sessionsURI),
			"Ensure that the appropriate access is provided for the service in order for it to access the URI.", []string{sessionsURI, "unauthorized"})
		return
	}
	if len(b.sessions) >= b.cfg.MaxSessions {
		b.stats.Busy++
		b.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "SessionLimitExceeded",
			"The session establishment failed due to the number of simultaneous sessions exceeding the limit of the implementation.",
			"Reduce the number of other sessions before trying to establish the session or increase the limit of simultaneous sessions (if supported).", nil)
		return
	}
	b.nextID++
	s := &session{id: strconv.Itoa(b.nextID), token: token(), user: body.UserName, last: now}
	b.sessions[s.id] = s
	b.stats.SessionsMade++
	b.mu.Unlock()
	uri := sessionsURI + "/" + s.id
	w.Header().Set("X-Auth-Token", s.token)
	w.Header().Set("Location", uri)
	writeJSON(w, http.StatusCreated, sessionDoc(s))
}

func sessionDoc(s *session) map[string]any {
	return map[string]any{"@odata.id": sessionsURI + "/" + s.id, "@odata.type": "#Session.v1_7_0.Session", "Id": s.id,
		"Name": "User Session", "UserName": s.user}
}

// sessionsDoc is the collection of sessions.
func (b *BMC) sessionsDoc() map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	ids := make([]string, 0, len(b.sessions))
	for id := range b.sessions {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, c string) int { x, _ := strconv.Atoi(a); y, _ := strconv.Atoi(c); return x - y })
	uris := make([]string, len(ids))
	for i, id := range ids {
		uris[i] = sessionsURI + "/" + id
	}
	return collection(sessionsURI, "SessionCollection", "Session Collection", uris...)
}

func (b *BMC) sessionByURI(uri string) *session {
	id, ok := strings.CutPrefix(uri, sessionsURI+"/")
	if !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.sessions[id]
}

// logout ends a session: DELETE of its URI.
func (b *BMC) logout(w http.ResponseWriter, uri string) {
	s := b.sessionByURI(uri)
	if s == nil {
		notFound(w, uri)
		return
	}
	b.mu.Lock()
	delete(b.sessions, s.id)
	b.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func busy(w http.ResponseWriter, retry int) {
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	writeError(w, http.StatusServiceUnavailable, "ServiceTemporarilyUnavailable",
		fmt.Sprintf("The service is temporarily unavailable.  Retry in %d seconds.", retry),
		"Wait for the indicated retry duration and retry the operation.", []string{strconv.Itoa(retry)})
}

func notFound(w http.ResponseWriter, uri string) {
	writeError(w, http.StatusNotFound, "ResourceMissingAtURI", fmt.Sprintf("The resource at the URI %s was not found.", uri),
		"Place a valid resource at the URI or correct the URI and resubmit the request.", []string{uri})
}

// writeError writes a Redfish error with one message of the Base 1.5.0
// registry.
func writeError(w http.ResponseWriter, status int, id, message, resolution string, args []string) {
	msgID := "Base.1.5.0." + id
	info := map[string]any{"@odata.type": "#Message.v1_1_1.Message", "MessageId": msgID, "Message": message, "Resolution": resolution, "Severity": "Critical"}
	if args != nil {
		info["MessageArgs"] = args
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": msgID, "message": message, "@Message.ExtendedInfo": []any{info}}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := encode(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error": {"message": "encoding the response failed"}}`)
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json;charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
