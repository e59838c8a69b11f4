package sitegen

import (
	"net"
	"net/netip"
	"testing"
)

// Every generated BMC address is an IP address and every MAC a MAC,
// unique across modules, on both sides of the 255th module where an
// IPv4 octet would overflow (vet's INV023 refuses both).
func TestBMCAddressesStayValidPastModule255(t *testing.T) {
	addrs, macs := map[string]bool{}, map[string]bool{}
	for _, module := range []int{0, 1, 253, 254, 255, 256, 1000, 5555} {
		for rack := range 16 {
			for _, slot := range []int{1, 5, 48} {
				addr, mac := bmcAddress(module, rack, slot)
				if _, err := netip.ParseAddr(addr); err != nil {
					t.Errorf("module %d rack %d slot %d: %v", module, rack, slot, err)
				}
				if _, err := net.ParseMAC(mac); err != nil {
					t.Errorf("module %d rack %d slot %d: %v", module, rack, slot, err)
				}
				if addrs[addr] || macs[mac] {
					t.Errorf("module %d rack %d slot %d: %s or %s given twice", module, rack, slot, addr, mac)
				}
				addrs[addr], macs[mac] = true, true
			}
		}
	}
	if a, _ := bmcAddress(0, 0, 5); a != "10.1.1.5" {
		t.Errorf("the first module's addresses changed: %s", a)
	}
}
