// Package trap receives SNMP traps and informs (v2c with a community,
// v3 authPriv with USM users) through gosnmp's TrapListener and turns
// them into alarm observations by rules: the trap's snmpTrapOID names
// an alarm type raised or cleared, for the rule's domain or the one the
// sending agent is mapped to. A trap with a wrong community or v3 key,
// of an unknown OID, or for no known domain is refused, logged and
// counted, and observes nothing.
package trap

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/seamdc/seam/internal/alarm"
)

// TrapOID is snmpTrapOID.0, the varbind that names a v2 trap.
const TrapOID = "1.3.6.1.6.3.1.1.4.1.0"

// Rule maps a trap to an observation.
type Rule struct {
	OID    string     // the trap's snmpTrapOID value
	Type   alarm.Type // the alarm it raises or clears
	Active bool       // raises (true) or clears (false)
	// Domain is the domain written (cooling_loop=l2); "" takes the
	// sending agent's from Agents.
	Domain string
}

// User is a v3 USM user, its passphrases resolved.
type User struct {
	Name                       string
	AuthProtocol, AuthPassword string // SHA, SHA256, MD5, …
	PrivProtocol, PrivPassword string // AES, DES, …
}

// Receiver is a trap and inform listener.
type Receiver struct {
	Listen      string // host:port to listen on (UDP)
	Communities []string
	Users       []User
	// EngineID, if set, is the receiver's own engine id, which v3
	// informs need (their sender discovers it first).
	EngineID string
	Rules    []Rule
	Agents   map[string]string // agent IP → domain written
	Domains  alarm.Resolver
	Sink     func(alarm.Observation)
	// Reject is told of every refused trap: reason is bad_community,
	// v3_auth, malformed, version, unknown_trap or unknown_domain.
	Reject func(reason string, err error)
	Log    *slog.Logger
	Now    func() time.Time

	mu       sync.Mutex
	listener *gosnmp.TrapListener
	addr     string
	rules    map[string]Rule
	closed   bool
}

// Start listens; it returns once the socket is open.
func (r *Receiver) Start() error {
	r.rules = map[string]Rule{}
	for _, ru := range r.Rules {
		r.rules[normOID(ru.OID)+"|"+fmt.Sprint(ru.Active)] = ru
		if _, ok := alarm.Lookup(ru.Type); !ok {
			return fmt.Errorf("trap rule %s: %q is no alarm type of the vocabulary", ru.OID, ru.Type)
		}
	}
	logger := gosnmp.NewLogger(gsLog{r})
	table := gosnmp.NewSnmpV3SecurityParametersTable(logger)
	for _, u := range r.Users {
		sp, err := usm(u)
		if err != nil {
			return err
		}
		sp.Logger = logger
		if err := table.Add(u.Name, sp); err != nil {
			return fmt.Errorf("trap receiver: v3 user %s: %w", u.Name, err)
		}
	}
	// Version3: gosnmp authenticates v3 traps only on a v3 "connection";
	// each packet's own version is read from it, so v2c still decodes.
	params := &gosnmp.GoSNMP{Version: gosnmp.Version3, Timeout: 2 * time.Second, Logger: logger, SecurityModel: gosnmp.UserSecurityModel}
	if r.EngineID != "" {
		params.SecurityParameters = &gosnmp.UsmSecurityParameters{AuthoritativeEngineID: r.EngineID, Logger: logger}
	}
	params.SetTrapSecurityParametersTable(table)
	// bind first, so that a taken port is an error here, and the
	// listener gets the address that is free
	pc, err := net.ListenPacket("udp", r.Listen)
	if err != nil {
		return fmt.Errorf("trap receiver: listen %s: %w", r.Listen, err)
	}
	addr := pc.LocalAddr().String()
	pc.Close()
	r.mu.Lock()
	r.addr = addr
	r.mu.Unlock()
	return r.listen(params, addr)
}

func (r *Receiver) listen(params *gosnmp.GoSNMP, addr string) error {
	tl := gosnmp.NewTrapListener()
	tl.Params = params
	tl.OnNewTrap = r.handle
	r.mu.Lock()
	r.listener = tl
	r.mu.Unlock()
	errc := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				r.log().Error("trap listener panicked: restarting it", "panic", fmt.Sprint(p))
				r.reject("malformed", fmt.Errorf("trap listener panicked: %v", p))
				r.mu.Lock()
				closed := r.closed
				r.mu.Unlock()
				if !closed {
					go r.listen(params, addr)
				}
			}
		}()
		errc <- tl.Listen(addr)
	}()
	select {
	case <-tl.Listening():
		r.log().Info("listening for traps", "address", addr, "communities", len(r.Communities), "v3_users", len(r.Users), "rules", len(r.Rules))
		return nil
	case err := <-errc:
		return fmt.Errorf("trap receiver: listen %s: %w", addr, err)
	case <-time.After(5 * time.Second):
		return fmt.Errorf("trap receiver: listen %s: not listening after 5 s", addr)
	}
}

// Addr is the address listened on.
func (r *Receiver) Addr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.addr
}

// Close stops listening.
func (r *Receiver) Close() {
	r.mu.Lock()
	r.closed = true
	tl := r.listener
	r.mu.Unlock()
	if tl != nil {
		tl.Close()
	}
}

func usm(u User) (*gosnmp.UsmSecurityParameters, error) {
	auth, ok := map[string]gosnmp.SnmpV3AuthProtocol{"MD5": gosnmp.MD5, "SHA": gosnmp.SHA, "SHA224": gosnmp.SHA224, "SHA256": gosnmp.SHA256, "SHA384": gosnmp.SHA384, "SHA512": gosnmp.SHA512}[strings.ToUpper(u.AuthProtocol)]
	if !ok {
		return nil, fmt.Errorf("trap receiver: v3 user %s: auth protocol %q: want SHA, SHA224, SHA256, SHA384, SHA512 or MD5", u.Name, u.AuthProtocol)
	}
	priv, ok := map[string]gosnmp.SnmpV3PrivProtocol{"DES": gosnmp.DES, "AES": gosnmp.AES, "AES192": gosnmp.AES192, "AES256": gosnmp.AES256}[strings.ToUpper(u.PrivProtocol)]
	if !ok {
		return nil, fmt.Errorf("trap receiver: v3 user %s: priv protocol %q: want AES, AES192, AES256 or DES (authPriv only)", u.Name, u.PrivProtocol)
	}
	if u.AuthPassword == "" || u.PrivPassword == "" {
		return nil, fmt.Errorf("trap receiver: v3 user %s: authPriv needs both passphrases", u.Name)
	}
	return &gosnmp.UsmSecurityParameters{UserName: u.Name, AuthenticationProtocol: auth, AuthenticationPassphrase: u.AuthPassword,
		PrivacyProtocol: priv, PrivacyPassphrase: u.PrivPassword}, nil
}

func (r *Receiver) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

func (r *Receiver) reject(reason string, err error) {
	r.log().Warn("trap refused", "reason", reason, "error", err)
	if r.Reject != nil {
		r.Reject(reason, err)
	}
}

// handle is called by the listener for every trap it could decode (v3:
// authenticated and decrypted).
func (r *Receiver) handle(p *gosnmp.SnmpPacket, from *net.UDPAddr) {
	defer func() {
		if x := recover(); x != nil {
			r.reject("malformed", fmt.Errorf("trap from %s: %v", from, x))
		}
	}()
	agent := from.IP.String()
	switch p.Version {
	case gosnmp.Version2c:
		if !r.community(p.Community) {
			r.reject("bad_community", fmt.Errorf("v2c trap from %s with a community facilityd does not accept", agent))
			return
		}
	case gosnmp.Version3:
		if p.MsgFlags&gosnmp.AuthPriv != gosnmp.AuthPriv {
			r.reject("v3_auth", fmt.Errorf("v3 trap from %s without authPriv: refused", agent))
			return
		}
	default:
		r.reject("version", fmt.Errorf("%s trap from %s: facilityd takes v2c and v3", p.Version, agent))
		return
	}
	oid := ""
	for _, v := range p.Variables {
		if normOID(v.Name) == TrapOID {
			if s, ok := v.Value.(string); ok {
				oid = normOID(s)
			}
		}
	}
	if oid == "" {
		r.reject("malformed", fmt.Errorf("trap from %s has no snmpTrapOID.0", agent))
		return
	}
	rule, active, ok := r.rule(oid)
	if !ok {
		r.reject("unknown_trap", fmt.Errorf("trap %s from %s matches no rule", oid, agent))
		return
	}
	written := rule.Domain
	if written == "" {
		written = r.Agents[agent]
	}
	if written == "" {
		r.reject("unknown_domain", fmt.Errorf("trap %s from %s: the rule names no domain and agent %s is mapped to none", oid, agent, agent))
		return
	}
	d, err := r.Domains.Resolve(written)
	if err != nil {
		r.reject("unknown_domain", fmt.Errorf("trap %s from %s: %w", oid, agent, err))
		return
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	kind := "trap"
	if p.PDUType == gosnmp.InformRequest {
		kind = "inform"
	}
	r.Sink(alarm.Observation{Type: rule.Type, Domain: d, Active: active, Kind: alarm.FromTrap, Source: agent + "/" + oid, At: now(),
		Detail: fmt.Sprintf("%s %s %s from %s", p.Version, kind, oid, agent)})
}

func (r *Receiver) rule(oid string) (Rule, bool, bool) {
	if ru, ok := r.rules[oid+"|true"]; ok {
		return ru, true, true
	}
	if ru, ok := r.rules[oid+"|false"]; ok {
		return ru, false, true
	}
	return Rule{}, false, false
}

func (r *Receiver) community(c string) bool {
	ok := false
	for _, want := range r.Communities {
		if subtle.ConstantTimeCompare([]byte(c), []byte(want)) == 1 {
			ok = true
		}
	}
	return ok
}

func normOID(s string) string { return strings.TrimPrefix(strings.TrimSpace(s), ".") }

// gsLog takes gosnmp's log lines: those of a refused packet (a wrong v3
// key or user, a packet that does not decode) are refusals.
type gsLog struct{ r *Receiver }

func (g gsLog) Print(v ...any) { g.line(fmt.Sprint(v...)) }

func (g gsLog) Printf(format string, v ...any) { g.line(fmt.Sprintf(format, v...)) }

func (g gsLog) line(s string) {
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "TrapListener: error in UnmarshalTrap"):
		reason := "malformed"
		if strings.Contains(s, "auth") || strings.Contains(s, "credentials") || strings.Contains(s, "security parameters") || strings.Contains(s, "decrypt") {
			reason = "v3_auth"
		}
		g.r.reject(reason, errors.New(strings.TrimPrefix(s, "TrapListener: ")))
	case strings.HasPrefix(s, "TrapListener:"):
		g.r.log().Warn("trap listener", "message", strings.TrimPrefix(s, "TrapListener: "))
	default:
		g.r.log().Debug("gosnmp", "message", s)
	}
}
