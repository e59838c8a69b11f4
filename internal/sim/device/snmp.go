package device

import (
	"fmt"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"
	GoSNMPServer "github.com/slayercat/GoSNMPServer"

	"github.com/seamdc/seam/internal/profile"
)

// snmpAgent serves a device as an SNMP agent. GoSNMPServer decodes
// requests, checks communities and USM (v3 authPriv) and encodes
// replies; the agent reads and answers UDP itself so that faults can
// drop or garble replies.
type snmpAgent struct {
	d      *Device
	mu     sync.Mutex
	conn   *net.UDPConn
	master *GoSNMPServer.MasterAgent
	boots  uint32
	done   chan struct{}
}

var snmpTypes = map[profile.DataType]gosnmp.Asn1BER{
	profile.Integer: gosnmp.Integer, profile.Gauge32: gosnmp.Gauge32, profile.Counter32: gosnmp.Counter32,
	profile.Counter64: gosnmp.Counter64, profile.OctetString: gosnmp.OctetString,
}

var authProtos = map[string]gosnmp.SnmpV3AuthProtocol{"": gosnmp.SHA, "SHA": gosnmp.SHA, "MD5": gosnmp.MD5, "SHA256": gosnmp.SHA256}
var privProtos = map[string]gosnmp.SnmpV3PrivProtocol{"": gosnmp.AES, "AES": gosnmp.AES, "DES": gosnmp.DES}

// newMaster builds the agent's MIB view: one item per OID of the
// profile, answered from the device's image.
func (a *snmpAgent) newMaster() (*GoSNMPServer.MasterAgent, error) {
	d := a.d
	var items []*GoSNMPServer.PDUValueControlItem
	seen := map[string]bool{}
	for _, pt := range d.spec.Profile.Points {
		if seen[pt.OID] {
			continue
		}
		seen[pt.OID] = true
		oid := pt.OID
		items = append(items, &GoSNMPServer.PDUValueControlItem{OID: oid, Type: snmpTypes[pt.Type],
			OnGet: func() (any, error) { return d.snmpValue(oid) }, Document: pt.Name})
	}
	sort.Slice(items, func(i, j int) bool { return profile.CompareOIDs(items[i].OID, items[j].OID) < 0 })
	cfg := d.spec.SNMP
	boots := a.boots
	booted := time.Now()
	sec := GoSNMPServer.SecurityConfig{AuthoritativeEngineBoots: boots,
		AuthoritativeEngineID:        GoSNMPServer.SNMPEngineID{EngineIDData: "seam-" + d.spec.Name},
		OnGetAuthoritativeEngineTime: func() uint32 { return uint32(time.Since(booted).Seconds()) }}
	sub := &GoSNMPServer.SubAgent{OIDs: items}
	if cfg.Version == "v3" {
		auth, ok := authProtos[cfg.AuthProto]
		priv, ok2 := privProtos[cfg.PrivProto]
		if !ok || !ok2 {
			return nil, fmt.Errorf("SNMP v3: auth %q priv %q: want SHA, MD5 or SHA256 and AES or DES", cfg.AuthProto, cfg.PrivProto)
		}
		sec.SnmpV3Only = true
		sec.Users = []gosnmp.UsmSecurityParameters{{UserName: cfg.User, AuthenticationProtocol: auth,
			AuthenticationPassphrase: cfg.AuthPass, PrivacyProtocol: priv, PrivacyPassphrase: cfg.PrivPass}}
		sub.CommunityIDs = []string{""} // v3 picks the sub-agent by context name, here empty
	} else {
		sub.CommunityIDs = []string{cfg.Community}
	}
	m := &GoSNMPServer.MasterAgent{SecurityConfig: sec, SubAgents: []*GoSNMPServer.SubAgent{sub},
		Logger: GoSNMPServer.NewDiscardLogger()}
	if err := m.ReadyForWork(); err != nil {
		return nil, err
	}
	return m, nil
}

// snmpValue is the image's value of oid, of the Go type its SNMP type
// needs (GoSNMPServer sends nothing for a wrong type).
func (d *Device) snmpValue(oid string) (any, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.oids[oid]
	if !ok {
		return nil, fmt.Errorf("no value for %s", oid)
	}
	return v, nil
}

func (a *snmpAgent) start(addr string) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.boots++
	m, err := a.newMaster()
	if err != nil {
		return "", err
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	udp, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return "", err
	}
	var conn *net.UDPConn
	for try := 0; try < 10; try++ {
		if conn, err = net.ListenUDP("udp", udp); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond) // a rebooting agent's port may linger briefly
	}
	if err != nil {
		return "", fmt.Errorf("snmp agent: %w", err)
	}
	a.conn, a.master, a.done = conn, m, make(chan struct{})
	go a.serve(conn, m, a.done)
	return conn.LocalAddr().String(), nil
}

func (a *snmpAgent) stop() {
	a.mu.Lock()
	conn, done := a.conn, a.done
	a.conn = nil
	a.mu.Unlock()
	if conn != nil {
		conn.Close()
		<-done
	}
}

// serve answers requests until the socket closes.
func (a *snmpAgent) serve(conn *net.UDPConn, m *GoSNMPServer.MasterAgent, done chan struct{}) {
	defer close(done)
	buf := make([]byte, 65535)
	for {
		n, from, err := conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if !a.accepts(buf[:n]) {
			continue
		}
		out := respond(m, buf[:n])
		if len(out) == 0 {
			continue // a wrong community, user or key gets no answer, as on a real agent
		}
		a.d.mu.Lock()
		garbled := a.d.faults.garbled
		a.d.mu.Unlock()
		if garbled {
			out = garble(out)
		}
		_, _ = conn.WriteToUDP(out, from)
	}
}

// accepts drops v1/v2c requests with a wrong community before the
// library sees them: it would answer them with an error PDU, where a
// real agent stays silent.
func (a *snmpAgent) accepts(req []byte) bool {
	cfg := a.d.spec.SNMP
	if cfg.Version == "v3" {
		return true
	}
	var g gosnmp.GoSNMP
	pkt, err := g.SnmpDecodePacket(req)
	return err == nil && pkt.Version != gosnmp.Version3 && pkt.Community == cfg.Community
}

// respond builds the reply to one request; a request the library cannot
// handle gets no reply.
func respond(m *GoSNMPServer.MasterAgent, req []byte) (out []byte) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	out, err := m.ResponseForBuffer(req)
	if err != nil && len(out) == 0 {
		return nil
	}
	return out
}

// garble corrupts a reply the way a faulty agent or a bad link does: it
// keeps the outer header but cuts the message short and flips a byte,
// so that a client's BER decoder fails.
func garble(b []byte) []byte {
	if len(b) < 8 {
		return []byte{0x30, 0x82}
	}
	out := append([]byte(nil), b[:len(b)*2/3]...)
	out[len(out)-1] ^= 0xA5
	return out
}
