package trap_test

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gosnmp/gosnmp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/trap"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/peer"
)

// upsOnBattery and upsReturn are RFC 1628's upsTrapOnBattery and a
// vendor's return-from-battery trap.
const (
	upsOnBattery = "1.3.6.1.2.1.33.2.0.1"
	upsReturn    = "1.3.6.1.4.1.99999.0.2"
	unknownTrap  = "1.3.6.1.4.1.99999.0.9"
)

type rec struct {
	mu       sync.Mutex
	got      []alarm.Observation
	rejected map[string]int
}

func (r *rec) sink(o alarm.Observation) { r.mu.Lock(); r.got = append(r.got, o); r.mu.Unlock() }
func (r *rec) reject(reason string, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected[reason]++
}
func (r *rec) counts() (int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.rejected {
		out[k] = v
	}
	return len(r.got), out
}

func start(t *testing.T) (*trap.Receiver, *rec, int) {
	c, diags, err := contract.Load("../../../contracts/examples/threemodule")
	require.NoError(t, err)
	require.Empty(t, diags)
	_, err = c.ReadInventory(nil)
	require.NoError(t, err)
	g, _ := c.Graph()
	r := &rec{rejected: map[string]int{}}
	recv := &trap.Receiver{Listen: "127.0.0.1:0", Communities: []string{"s3cret"},
		Users:   []trap.User{{Name: "seam", AuthProtocol: "SHA", AuthPassword: "auth-pass-1", PrivProtocol: "AES", PrivPassword: "priv-pass-1"}},
		Rules:   []trap.Rule{{OID: upsOnBattery, Type: alarm.UPSOnBattery, Active: true}, {OID: upsReturn, Type: alarm.UPSOnBattery, Active: false}, {OID: "1.3.6.1.4.1.99999.0.3", Type: alarm.LeakDetected, Active: true, Domain: "cooling_loop=l9"}},
		Agents:  map[string]string{"127.0.0.1": "power_block=p1"},
		Domains: alarm.NewIndex(g), Sink: r.sink, Reject: r.reject}
	require.NoError(t, recv.Start())
	t.Cleanup(recv.Close)
	_, p, _ := net.SplitHostPort(recv.Addr())
	port, _ := strconv.Atoi(p)
	return recv, r, port
}

func vars(oid string) []gosnmp.SnmpPDU {
	return []gosnmp.SnmpPDU{
		{Name: ".1.3.6.1.2.1.1.3.0", Type: gosnmp.TimeTicks, Value: uint32(100)},
		{Name: "." + trap.TrapOID, Type: gosnmp.ObjectIdentifier, Value: "." + oid},
	}
}

func v2c(t *testing.T, port int, community, oid string, inform bool) error {
	g := &gosnmp.GoSNMP{Target: "127.0.0.1", Port: uint16(port), Version: gosnmp.Version2c, Community: community, Timeout: 2 * time.Second, Retries: 0}
	require.NoError(t, g.Connect())
	defer g.Conn.Close()
	_, err := g.SendTrap(gosnmp.SnmpTrap{Variables: vars(oid), IsInform: inform})
	return err
}

func v3(t *testing.T, port int, auth, priv, oid string) {
	g := &gosnmp.GoSNMP{Target: "127.0.0.1", Port: uint16(port), Version: gosnmp.Version3, Timeout: 2 * time.Second, SecurityModel: gosnmp.UserSecurityModel,
		MsgFlags: gosnmp.AuthPriv, SecurityParameters: &gosnmp.UsmSecurityParameters{UserName: "seam", AuthoritativeEngineID: "\x80\x00\x00\x00\x01\x02\x03\x04",
			AuthenticationProtocol: gosnmp.SHA, AuthenticationPassphrase: auth, PrivacyProtocol: gosnmp.AES, PrivacyPassphrase: priv}}
	require.NoError(t, g.Connect())
	defer g.Conn.Close()
	_, err := g.SendTrap(gosnmp.SnmpTrap{Variables: vars(oid)})
	require.NoError(t, err)
}

// Traps and informs, v2c with a community and v3 authPriv, become
// observations of the rule's type for the sending agent's domain; a
// wrong community or v3 key, an unknown OID and a domain that does not
// exist are refused and counted, and observe nothing.
func TestTraps(t *testing.T) {
	_, r, port := start(t)
	wait := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool { got, _ := r.counts(); return got == n }, 5*time.Second, 10*time.Millisecond)
	}
	require.NoError(t, v2c(t, port, "s3cret", upsOnBattery, false))
	wait(1)
	require.NoError(t, v2c(t, port, "s3cret", upsReturn, true), "an inform is answered")
	wait(2)
	v3(t, port, "auth-pass-1", "priv-pass-1", upsOnBattery)
	wait(3)
	r.mu.Lock()
	assert.Equal(t, alarm.UPSOnBattery, r.got[0].Type)
	assert.Equal(t, "power_block=p1", r.got[0].Domain.String())
	assert.True(t, r.got[0].Active)
	assert.False(t, r.got[1].Active)
	assert.Contains(t, r.got[1].Detail, "inform")
	assert.Equal(t, "trap:127.0.0.1/"+upsOnBattery, r.got[2].SourceID())
	r.mu.Unlock()

	require.NoError(t, v2c(t, port, "public", upsOnBattery, false))
	v3(t, port, "auth-pass-1", "wrong-priv-key", upsOnBattery)
	v3(t, port, "wrong-auth-key", "priv-pass-1", upsOnBattery)
	require.NoError(t, v2c(t, port, "s3cret", unknownTrap, false))
	require.NoError(t, v2c(t, port, "s3cret", "1.3.6.1.4.1.99999.0.3", false))
	require.Eventually(t, func() bool {
		_, rej := r.counts()
		return rej["bad_community"] == 1 && rej["v3_auth"] == 2 && rej["unknown_trap"] == 1 && rej["unknown_domain"] == 1
	}, 5*time.Second, 10*time.Millisecond)
	got, rej := r.counts()
	assert.Equal(t, 3, got, "refused traps observe nothing: %v", rej)

	// garbage on the port: counted, the listener lives on
	c, err := net.Dial("udp", "127.0.0.1:"+strconv.Itoa(port))
	require.NoError(t, err)
	_, _ = c.Write([]byte{0x30, 0x82, 0xff, 0xff, 0x02})
	c.Close()
	require.Eventually(t, func() bool { _, rej := r.counts(); return rej["malformed"] >= 1 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, v2c(t, port, "s3cret", upsOnBattery, false))
	wait(4)
}

// net-snmp's snmptrap (v2c, and v3 authPriv) is received the same way.
func TestNetSNMPTraps(t *testing.T) {
	snmptrap := peer.Need(t, "snmptrap")
	_, r, port := start(t)
	target := "127.0.0.1:" + strconv.Itoa(port)
	_, err := peer.Run(10*time.Second, snmptrap, "-v", "2c", "-c", "s3cret", target, "", upsOnBattery)
	require.NoError(t, err)
	_, err = peer.Run(10*time.Second, snmptrap, "-v", "3", "-u", "seam", "-l", "authPriv", "-a", "SHA", "-A", "auth-pass-1", "-x", "AES", "-X", "priv-pass-1",
		"-e", "0x8000000001020304", target, "", upsReturn)
	require.NoError(t, err)
	require.Eventually(t, func() bool { got, _ := r.counts(); return got == 2 }, 5*time.Second, 10*time.Millisecond)
	_, err = peer.Run(10*time.Second, snmptrap, "-v", "3", "-u", "seam", "-l", "authPriv", "-a", "SHA", "-A", "not-the-key", "-x", "AES", "-X", "priv-pass-1",
		"-e", "0x8000000001020304", target, "", upsOnBattery)
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, rej := r.counts(); return rej["v3_auth"] == 1 }, 5*time.Second, 10*time.Millisecond)
	got, _ := r.counts()
	assert.Equal(t, 2, got)
}
