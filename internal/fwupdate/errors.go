package fwupdate

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/stmcginnis/gofish/schemas"
)

// What to do next, in one clause.
const (
	nextRetry      = "retry the stage"
	nextImage      = "check the image (its component, version and signature), then retry the stage"
	nextTransfer   = "check that the BMC reaches the image server and that the grant is fresh, then retry the stage"
	nextLookAtBMC  = "look at the BMC"
	nextRunning    = "look at the BMC: its task still runs there; let it end or cancel it before retrying the stage"
	nextUnchanged  = "check that the image is the version the baseline says, then retry the stage"
	nextReboot     = "look at the BMC (its console or its power): it may still be rebooting; retry the stage once it answers"
	nextPrivilege  = "log in with an Administrator's account"
	nextNoChassis  = "reset the tray by hand, or give the component another reset in the baseline"
	nextUnanswered = "look at the BMC's TaskService before retrying the stage: the update may have been taken"
)

// Error is an update that failed: the node, its BMC, the component and
// version, the step, what happened, the BMC's own message and what to
// do next. Its text never holds a secret (an image URL's token).
type Error struct {
	Node, BMC, Component, Version, Step string
	Msg                                 string
	// BMCMessage is the BMC's own: a task's messages, an error's
	// ExtendedInfo (redacted).
	BMCMessage string
	Next       string
	Err        error
	red        *redactor
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): ", e.Node, e.BMC)
	if e.Component != "" {
		fmt.Fprintf(&b, "%s %s, ", e.Component, e.Version)
	}
	fmt.Fprintf(&b, "step %s: %s", e.Step, e.Msg)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	if e.BMCMessage != "" {
		fmt.Fprintf(&b, ": %s", e.BMCMessage)
	}
	if e.Next != "" {
		fmt.Fprintf(&b, "; %s", e.Next)
	}
	return e.red.text(b.String())
}

func (e *Error) Unwrap() error { return e.Err }

// redactor takes the image URLs' secrets out of text: each URL's token
// (the path segment after /images/ of fwimage's /images/TOKEN/NAME), its query and its
// password, which the BMC may repeat in its messages.
type redactor struct{ secrets []string }

func newRedactor(updates []Update) *redactor {
	r := &redactor{}
	for _, u := range updates {
		p, err := url.Parse(u.ImageURI)
		if err != nil || u.ImageURI == "" {
			if u.ImageURI != "" {
				r.secrets = append(r.secrets, u.ImageURI)
			}
			continue
		}
		if tok := token(p); tok != "" {
			r.secrets = append(r.secrets, tok)
		}
		if p.RawQuery != "" {
			r.secrets = append(r.secrets, p.RawQuery)
		}
		if pw, ok := p.User.Password(); ok && pw != "" {
			r.secrets = append(r.secrets, pw)
		}
	}
	return r
}

// token is an image URL's one-time token: fwimage's /images/TOKEN/NAME.
func token(u *url.URL) string {
	rest, ok := strings.CutPrefix(u.Path, "/images/")
	tok, name, _ := strings.Cut(rest, "/")
	if !ok || tok == "" || name == "" {
		return ""
	}
	return tok
}

// text is s without the secrets.
func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "…")
	}
	return s
}

// shownURL is an image URL fit for an event or a record: host and
// "/images/…/NAME", no credentials, no query.
func shownURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(an image URL that does not parse)"
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment = nil, "", false, ""
	if tok := token(u); tok != "" {
		name := strings.TrimPrefix(u.Path, "/images/"+tok+"/")
		c.Path, c.RawPath = "", ""
		return c.String() + "/images/…/" + name
	}
	return c.String()
}

// message is one Redfish message: its id and text with its resolution
// when it says more than "None".
type message struct{ id, text string }

func (m message) String() string { return m.text }

func msgText(id, msg, resolution string) message {
	t := strings.TrimSpace(msg)
	if r := strings.TrimSpace(resolution); r != "" && r != "None." && r != "None" {
		t += " (" + r + ")"
	}
	return message{id: id, text: t}
}

// taskMessages are a Task's messages that say something went wrong
// (Severity or MessageSeverity not OK), else all of its last.
func taskMessages(doc map[string]any) []message {
	list, _ := doc["Messages"].([]any)
	var out []message
	for _, v := range list {
		m, _ := v.(map[string]any)
		sev := str(m, "MessageSeverity")
		if sev == "" {
			sev = str(m, "Severity")
		}
		if sev == "OK" || sev == "" {
			continue
		}
		out = append(out, msgText(str(m, "MessageId"), str(m, "Message"), str(m, "Resolution")))
	}
	return out
}

// errorMessages are a Redfish error answer's ExtendedInfo messages, or
// its message.
func errorMessages(err error) []message {
	var re *schemas.Error
	if !errors.As(err, &re) {
		return nil
	}
	var out []message
	for _, m := range re.ExtendedInfos {
		out = append(out, msgText(m.MessageID, m.Message, m.Resolution))
	}
	if len(out) == 0 && strings.TrimSpace(re.Message) != "" {
		out = append(out, message{id: re.Code, text: strings.TrimSpace(re.Message)})
	}
	return out
}

// joinMessages is the messages' text, one after the other.
func joinMessages(ms []message) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.text
	}
	return strings.Join(parts, " ")
}

// nextFor is what to do after the messages: an image refused or
// unreadable, a transfer that failed, else retry.
func nextFor(ms []message, fallback string) string {
	for _, m := range ms {
		switch {
		case strings.HasSuffix(m.id, ".VerificationFailed"), strings.HasSuffix(m.id, ".ResourceAtUriInUnknownFormat"):
			return nextImage
		case strings.HasSuffix(m.id, ".TransferFailed"), strings.HasSuffix(m.id, ".CouldNotEstablishConnection"),
			strings.HasSuffix(m.id, ".ResourceAtUriUnauthorized"), strings.HasSuffix(m.id, ".ResourceMissingAtURI"):
			return nextTransfer
		case strings.HasSuffix(m.id, ".InsufficientPrivilege"):
			return nextPrivilege
		}
	}
	return fallback
}
