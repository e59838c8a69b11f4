package probetest

import (
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"sync/atomic"
	"time"

	GoSNMPServer "github.com/slayercat/GoSNMPServer"

	"github.com/gosnmp/gosnmp"

	"github.com/seamdc/seam/internal/profile"
)

// Action is how the agent answers one v2c request.
type Action struct {
	Drop   bool                // say nothing: the client times out
	Delay  time.Duration       // answer late
	Status gosnmp.SNMPError    // answer with this error status (tooBig, genErr…)
	Reply  func([]byte) []byte // rewrite the encoded reply (garbage)
}

// SNMPFault decides the action for a decoded v2c request; v3 requests
// (encrypted) are always answered.
type SNMPFault func(req *gosnmp.SnmpPacket) Action

// User is an SNMP v3 user of the agent.
type User struct {
	Name     string
	Auth     gosnmp.SnmpV3AuthProtocol
	AuthPass string
	Priv     gosnmp.SnmpV3PrivProtocol // gosnmp.NoPriv: authNoPriv
	PrivPass string
}

// Set is one SET the agent accepted.
type Set struct {
	OID   string
	Value any
}

// Agent is an SNMP agent (GoSNMPServer behind our own UDP loop, so that
// it can misbehave) serving a profile's OIDs, v2c and v3.
type Agent struct {
	Addr      string
	Profile   *profile.Profile
	Community string
	Users     []User

	mu      sync.Mutex
	values  map[string]any // OID → value of the GoSNMPServer type
	sets    []Set
	fault   SNMPFault
	conn    *net.UDPConn
	boots   uint32
	Packets atomic.Int64 // requests received
}

// NewAgent starts an agent on a free loopback port serving p's points
// at values (canonical, by point name; others at their Default, raw
// points 0). A point with decimal
// digits is encoded with the digits its digits point holds.
func NewAgent(p *profile.Profile, values map[string]float64, community string, users ...User) (*Agent, error) {
	a := &Agent{Profile: p, Community: community, Users: users, values: map[string]any{}}
	for _, pt := range p.Points {
		v, err := pt.ToSNMP(0)
		if err != nil {
			return nil, err
		}
		a.values[pt.OID] = v
	}
	for _, pt := range p.Points {
		if pt.Dim != profile.Alarm && pt.Dim != profile.Raw {
			if err := a.Set(pt.Name, pt.Default()); err != nil {
				return nil, err
			}
		}
	}
	// digits first: other points' encodings depend on them
	for _, pass := range []bool{true, false} {
		for name, v := range values {
			pt := p.Point(name)
			if pt == nil {
				return nil, fmt.Errorf("profile %s has no point %q", p.Name, name)
			}
			if isDigits(p, name) == pass {
				if err := a.Set(name, v); err != nil {
					return nil, err
				}
			}
		}
	}
	return a, a.Start()
}

func isDigits(p *profile.Profile, name string) bool {
	for _, pt := range p.Points {
		if pt.Digits == name {
			return true
		}
	}
	return false
}

// Set puts a canonical value into a point's OID.
func (a *Agent) Set(point string, value float64) error {
	pt := a.Profile.Point(point)
	if pt == nil {
		return fmt.Errorf("profile %s has no point %q", a.Profile.Name, point)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	digits := 0
	if pt.Digits != "" {
		d, err := a.Profile.Point(pt.Digits).FromSNMP(a.values[a.Profile.Point(pt.Digits).OID])
		if err != nil {
			return err
		}
		digits = int(d)
	}
	raw, err := pt.Raw(value, digits)
	if err != nil {
		return err
	}
	v, err := pt.ToSNMP(raw)
	if err != nil {
		return err
	}
	a.values[pt.OID] = v
	return nil
}

// SetRaw puts a Go value of the GoSNMPServer type (int, uint, uint64,
// string) at an OID, for tests that must not trust the codec.
func (a *Agent) SetRaw(oid string, v any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.values[oid] = v
}

// SetFault installs f (nil: behave).
func (a *Agent) SetFault(f SNMPFault) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fault = f
}

// Sets returns the SETs accepted so far.
func (a *Agent) Sets() []Set {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Set(nil), a.sets...)
}

var asn1Types = map[profile.DataType]gosnmp.Asn1BER{profile.Integer: gosnmp.Integer, profile.Gauge32: gosnmp.Gauge32,
	profile.Counter32: gosnmp.Counter32, profile.Counter64: gosnmp.Counter64, profile.OctetString: gosnmp.OctetString}

func (a *Agent) master() (*GoSNMPServer.MasterAgent, error) {
	var items []*GoSNMPServer.PDUValueControlItem
	seen := map[string]bool{}
	for _, pt := range a.Profile.Points {
		if seen[pt.OID] {
			continue
		}
		seen[pt.OID] = true
		oid, writable := pt.OID, pt.Writable()
		item := &GoSNMPServer.PDUValueControlItem{OID: oid, Type: asn1Types[pt.Type], OnGet: func() (any, error) {
			a.mu.Lock()
			defer a.mu.Unlock()
			return a.values[oid], nil
		}}
		if writable {
			item.OnSet = func(v any) error {
				a.mu.Lock()
				defer a.mu.Unlock()
				a.sets = append(a.sets, Set{OID: oid, Value: v})
				a.values[oid] = v
				return nil
			}
		}
		items = append(items, item)
	}
	a.boots++
	var usm []gosnmp.UsmSecurityParameters
	for _, u := range a.Users {
		usm = append(usm, gosnmp.UsmSecurityParameters{UserName: u.Name, AuthenticationProtocol: u.Auth,
			AuthenticationPassphrase: u.AuthPass, PrivacyProtocol: u.Priv, PrivacyPassphrase: u.PrivPass})
	}
	communities := []string{""} // v3 with an empty context name lands here
	if a.Community != "" {
		communities = append(communities, a.Community)
	}
	// our own engine id and time: the library's defaults ask gopsutil for
	// the host id and uptime, which takes about 0.2 s per agent
	started := time.Now()
	m := &GoSNMPServer.MasterAgent{Logger: GoSNMPServer.NewDiscardLogger(),
		SecurityConfig: GoSNMPServer.SecurityConfig{AuthoritativeEngineBoots: a.boots, Users: usm,
			AuthoritativeEngineID:        GoSNMPServer.SNMPEngineID{EngineIDData: fmt.Sprintf("seam-%p", a)},
			OnGetAuthoritativeEngineTime: func() uint32 { return uint32(time.Since(started).Seconds()) }},
		SubAgents: []*GoSNMPServer.SubAgent{{CommunityIDs: communities, OIDs: items,
			UserErrorMarkPacket: true, Logger: GoSNMPServer.NewDiscardLogger()}}}
	return m, m.ReadyForWork()
}

// Start listens (again, after Stop: an agent restart on the same port,
// with its engine boots counter increased).
func (a *Agent) Start() error {
	m, err := a.master()
	if err != nil {
		return err
	}
	addr := a.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return err
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return fmt.Errorf("snmp agent: %w", err)
	}
	a.Addr = conn.LocalAddr().String()
	a.mu.Lock()
	a.conn = conn
	a.mu.Unlock()
	go a.serve(conn, m)
	return nil
}

// Stop closes the socket: the agent is gone until Start.
func (a *Agent) Stop() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.conn != nil {
		a.conn.Close()
		a.conn = nil
	}
}

// decode decodes a v2c request (a fresh decoder each time: GoSNMP values
// must not be shared between goroutines).
func decode(in []byte) (*gosnmp.SnmpPacket, error) {
	d := &gosnmp.GoSNMP{Logger: gosnmp.NewLogger(log.New(io.Discard, "", 0))}
	return d.SnmpDecodePacket(in)
}

func (a *Agent) serve(conn *net.UDPConn, m *GoSNMPServer.MasterAgent) {
	buf := make([]byte, 65536)
	for {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		a.Packets.Add(1)
		in := append([]byte(nil), buf[:n]...)
		act := a.action(in)
		if act.Drop {
			continue
		}
		out, err := a.answer(in, act, m)
		if err != nil || len(out) == 0 {
			continue
		}
		if act.Reply != nil {
			out = act.Reply(out)
		}
		if act.Delay > 0 {
			go func() { time.Sleep(act.Delay); conn.WriteToUDP(out, from) }()
			continue
		}
		conn.WriteToUDP(out, from)
	}
}

func (a *Agent) action(in []byte) Action {
	a.mu.Lock()
	f := a.fault
	a.mu.Unlock()
	if f == nil {
		return Action{}
	}
	req, err := decode(in)
	if err != nil || req.Version == gosnmp.Version3 {
		return Action{}
	}
	return f(req)
}

func (a *Agent) answer(in []byte, act Action, m *GoSNMPServer.MasterAgent) ([]byte, error) {
	if act.Status == gosnmp.NoError {
		return m.ResponseForBuffer(in)
	}
	req, err := decode(in)
	if err != nil {
		return nil, err
	}
	req.PDUType, req.Error, req.ErrorIndex = gosnmp.GetResponse, act.Status, 0
	req.NonRepeaters, req.MaxRepetitions = 0, 0
	return req.MarshalMsg()
}
