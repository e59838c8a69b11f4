package fwupdate

import (
	"testing"

	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/redfish/bmc"
)

// BenchmarkApply is seam's own cost of one node's updates against a
// simulated BMC on loopback: wall time with every simulated wait (the
// tasks, the reboot, the boot) taken by the Lockstep clock at no wall
// cost, so what remains is Apply's requests, the BMC's answers and the
// BMC's fetch of the image over TLS. A fresh BMC for each (its updates
// stick). Reports requests per update.
func BenchmarkApply(b *testing.B) {
	for _, bc := range []struct {
		name    string
		updates func(*world) []Update
	}{
		{"bios-immediate", func(w *world) []Update { return []Update{w.update("bios", firmware.Immediate, firmware.ResetNone)} }},
		{"bmc-reboot+bios-system-reset", func(w *world) []Update {
			return []Update{w.update("bmc", firmware.Immediate, firmware.ResetManager), w.update("bios", firmware.OnReset, firmware.ResetSystem)}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			requests, updates := 0, 0
			for b.Loop() {
				b.StopTimer()
				w := newWorld(b, bmc.Config{})
				us := bc.updates(w)
				opt := w.options()
				b.StartTimer()
				r := w.apply(us, opt)
				b.StopTimer()
				if r.err != nil {
					b.Fatal(r.err)
				}
				requests += w.srv.BMC.Stats().Requests
				updates += len(us)
				b.StartTimer()
			}
			b.ReportMetric(float64(requests)/float64(updates), "requests/update")
		})
	}
}
