package sim

import (
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Interop tests: third-party clients read and write the simulated
// devices. They need Debian's snmp (snmpget, snmpwalk), mbpoll and
// python3-pymodbus, which .ci/run installs; a missing tool fails the
// test, never skips it.

// served builds the example site and serves its devices.
func served(t *testing.T) *Sim {
	s := example(t, "")
	require.NoError(t, s.Start())
	t.Cleanup(s.Close)
	return s
}

func run(t *testing.T, name string, args ...string) (string, error) {
	return peer.Run(20*time.Second, append([]string{name}, args...)...)
}

func hostPort(t *testing.T, addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return h, p
}

func TestInteropSNMPv2cGetAndWalk(t *testing.T) {
	snmpget, snmpwalk := peer.Need(t, "snmpget"), peer.Need(t, "snmpwalk")
	s := served(t)
	apc := s.Device("pdu-ma-r01-a") // APC rPDU2, v2c
	target := "udp:" + apc.Addr()
	out, err := run(t, snmpget, "-v2c", "-c", "public", "-On", "-t", "2", "-r", "1", target,
		"1.3.6.1.4.1.318.1.1.26.6.3.1.6.1", "1.3.6.1.4.1.318.1.1.26.9.2.3.1.5.1")
	require.NoError(t, err)
	assert.Regexp(t, `\.1\.3\.6\.1\.4\.1\.318\.1\.1\.26\.6\.3\.1\.6\.1 = INTEGER: 415\n`, out, "phase 1 voltage, V")
	assert.Regexp(t, `\.1\.3\.6\.1\.4\.1\.318\.1\.1\.26\.9\.2\.3\.1\.5\.1 = INTEGER: 2\n`, out, "outlet 1 on")

	st := s.Device("pdu-mc-r01-a") // ServerTech Sentry4, v2c
	out, err = run(t, snmpwalk, "-v2c", "-c", "public", "-On", "-t", "2", "-r", "1", "udp:"+st.Addr(), "1.3.6.1.4.1.1718")
	require.NoError(t, err)
	assert.Equal(t, len(st.Profile().Points), varbinds(out), "one line per OID:\n%s", out)
	assert.Regexp(t, `\.1\.3\.6\.1\.4\.1\.1718\.4\.1\.5\.3\.1\.3\.1\.1\.2 = INTEGER: 4150\n`, out, "phase 2 voltage in tenths of V")

	_, err = run(t, snmpget, "-v2c", "-c", "wrong", "-t", "1", "-r", "0", target, "1.3.6.1.4.1.318.1.1.26.6.3.1.6.1")
	assert.ErrorContains(t, err, "Timeout", "a wrong community gets no answer")
}

func TestInteropSNMPv3AuthPriv(t *testing.T) {
	snmpget, snmpwalk := peer.Need(t, "snmpget"), peer.Need(t, "snmpwalk")
	s := served(t)
	rar := s.Device("pdu-mb-r01-a") // Raritan PX, v3 authPriv
	sec := SecretsFrom(func(string) (string, bool) { return "", false })
	v3 := []string{"-v3", "-l", "authPriv", "-u", "seam", "-a", "SHA", "-A", sec.AuthPass, "-x", "AES", "-X", sec.PrivPass,
		"-On", "-t", "2", "-r", "1", "udp:" + rar.Addr()}
	out, err := run(t, snmpwalk, append(v3, "1.3.6.1.4.1.13742")...)
	require.NoError(t, err)
	oids := map[string]bool{}
	for _, pt := range rar.Profile().Points {
		oids[pt.OID] = true
	}
	assert.Equal(t, len(oids), varbinds(out), "one line per OID:\n%s", out)
	// inlet voltage, 0 decimal digits: 415 V; frequency, 1 digit: 500
	assert.Regexp(t, `\.1\.3\.6\.1\.4\.1\.13742\.6\.5\.2\.3\.1\.4\.1\.1\.4 = Gauge32: 415\n`, out)
	assert.Regexp(t, `\.1\.3\.6\.1\.4\.1\.13742\.6\.5\.2\.3\.1\.4\.1\.1\.23 = Gauge32: 500\n`, out)
	assert.Regexp(t, `\.1\.3\.6\.1\.4\.1\.13742\.6\.3\.3\.4\.1\.7\.1\.1\.23 = Gauge32: 1\n`, out, "its decimal digits")

	bad := append([]string(nil), v3...)
	bad[8] = "not-the-auth-pass"
	bad[15], bad[17] = "1", "0" // one try of one second
	_, err = run(t, snmpget, append(bad, "1.3.6.1.4.1.13742.6.5.2.3.1.4.1.1.4")...)
	assert.Error(t, err, "a wrong authentication passphrase is refused")
	_, err = run(t, snmpget, "-v2c", "-c", "public", "-t", "1", "-r", "0", "udp:"+rar.Addr(), "1.3.6.1.4.1.13742.6.5.2.3.1.4.1.1.4")
	assert.Error(t, err, "a v3 agent does not answer v2c")
}

// varbinds counts the variables a walk printed; net-snmp ends a walk of
// an agent's last subtree with a "No more variables" line, which is not
// one.
func varbinds(out string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " = ") && !strings.Contains(l, "No more variables") {
			n++
		}
	}
	return n
}

var mbpollValue = regexp.MustCompile(`\[(\d+)\]:\s+(-?\d+)`)

// mbpollRead reads count 16-bit input registers from a 0-based address.
func mbpollRead(t *testing.T, mbpoll, addr string, start, count int) map[int]int {
	host, port := hostPort(t, addr)
	out, err := run(t, mbpoll, "-m", "tcp", "-p", port, "-a", "1", "-t", "3", "-0", "-r", strconv.Itoa(start),
		"-c", strconv.Itoa(count), "-1", "-o", "2", host)
	require.NoError(t, err)
	regs := map[int]int{}
	for _, m := range mbpollValue.FindAllStringSubmatch(out, -1) {
		a, _ := strconv.Atoi(m[1])
		v, _ := strconv.Atoi(m[2])
		regs[a] = v
	}
	require.Len(t, regs, count, out)
	return regs
}

func TestInteropMbpollReadsTheCDU(t *testing.T) {
	mbpoll := peer.Need(t, "mbpoll")
	s := served(t)
	cdu := s.Device("l1-cdu-1") // generic CDU, int16 × 10
	regs := mbpollRead(t, mbpoll, cdu.Addr(), 0, 24)
	assert.Equal(t, 260, regs[0], "primary supply 26.0 degC")
	assert.Equal(t, 300, regs[2], "secondary supply 30.0 degC")
	assert.Equal(t, 1200, regs[6], "secondary dp 120.0 kPa")
	assert.Equal(t, 0, regs[8], "secondary flow, high word")
	assert.Equal(t, 11000, regs[9], "1100.0 L/min: a third of the loop's 3300")
	assert.Equal(t, 1, regs[13], "pump 1 running")
	assert.Equal(t, 0, regs[20], "no alarm")

	require.NoError(t, s.Site.Inject(Fault{Kind: Leak, Target: "l1/loop/cdu-1"}))
	s.Site.Advance(1100 * time.Millisecond)
	regs = mbpollRead(t, mbpoll, cdu.Addr(), 20, 1)
	assert.Equal(t, 2, regs[20], "leak: bit 1 of the alarm word")
}

const pymodbusScript = `
import sys
from pymodbus.client import ModbusTcpClient
host, port = sys.argv[1], int(sys.argv[2])
c = ModbusTcpClient(host, port=port)
if not c.connect():
    sys.exit("cannot connect")
def check(r):
    if r.isError():
        sys.exit("modbus error: %s" % r)
    return r
# heartbeat (holding 3), enable (holding 0), setpoint 1250.0 kW as uint32 x 0.1 (holding 1..2)
check(c.write_register(3, 1, slave=1))
check(c.write_register(0, 1, slave=1))
check(c.write_registers(1, [0, 12500], slave=1))
r = check(c.read_holding_registers(0, 5, slave=1))
print("holding", *r.registers)
r = c.write_register(30, 1, slave=1)
print("write past the map:", "exception" if r.isError() else "accepted")
r = c.write_registers(1, [0xFFFF, 0xFFFF], slave=1)
print("setpoint above rating:", "exception" if r.isError() else "accepted")
c.close()
`

func TestInteropPymodbusWritesTheLoadBank(t *testing.T) {
	python := peer.Python(t, "pymodbus.client")
	s := served(t)
	lb := s.Device("lb-ma")
	host, port := hostPort(t, lb.Addr())
	out, err := run(t, python, "-c", pymodbusScript, host, port)
	require.NoError(t, err)
	assert.Contains(t, out, "holding 1 0 12500 1 0\n", "enable, setpoint (2 registers), heartbeat, fault-reset read back")
	assert.Contains(t, out, "write past the map: exception\n")
	assert.Contains(t, out, "setpoint above rating: exception\n")
	s.Site.Advance(time.Second)
	assert.Equal(t, 1250.0, s.Site.LoadBank("lb-ma").Applied(), "the written setpoint is the load the bank applies")
	v, err := s.ReadChannel("p1/ma/feed-a/power")
	require.NoError(t, err)
	assert.InDelta(t, 625, v, 0.1, "and half of it flows through feed A")
}
