package gputools

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// smiField is one property of nvidia-smi --query-gpu: its names (the
// first is what --help-query-gpu lists first, the rest its aliases),
// the unit its header and values carry, and its value.
type smiField struct {
	names []string
	unit  string // "W", "MHz", "MiB", "%": header "name [W]", value "1.00 W"
	value func(n *Node, g *GPU) string
}

// naValue is what nvidia-smi prints for a property the GPU does not
// report; it carries no unit.
const naValue = "[N/A]"

func num(f float64) string    { return strconv.FormatFloat(f, 'f', 2, 64) }
func integer(v int) string    { return strconv.Itoa(v) }
func round(f float64) string  { return strconv.Itoa(int(f + 0.5)) }
func yesNo(b bool) string     { return map[bool]string{true: "Yes", false: "No"}[b] }
func active(b bool) string    { return map[bool]string{true: "Active", false: "Not Active"}[b] }
func hexMask(m uint64) string { return fmt.Sprintf("0x%016X", m) }
func reason(bit uint64) func(*Node, *GPU) string {
	return func(_ *Node, g *GPU) string { return active(g.Throttle&bit != 0) }
}

// smiFields are the properties the simulated nvidia-smi answers, with
// the values' formats of driver 590's captures (samples/nvidia-smi):
// "631.95 W", "1980 MHz", "81559 MiB", "100 %", "0x0000000000000001",
// "Active"/"Not Active", "Enabled", integers without a unit.
var smiFields = []smiField{
	{[]string{"timestamp"}, "", func(n *Node, _ *GPU) string { return n.Time.Format("2006/01/02 15:04:05.000") }},
	{[]string{"driver_version"}, "", func(n *Node, _ *GPU) string { return n.Driver }},
	{[]string{"count"}, "", func(n *Node, _ *GPU) string { return integer(len(n.GPUs)) }},
	{[]string{"name", "gpu_name"}, "", func(_ *Node, g *GPU) string { return g.Name }},
	{[]string{"serial", "gpu_serial"}, "", func(_ *Node, g *GPU) string { return g.Serial }},
	{[]string{"uuid", "gpu_uuid"}, "", func(_ *Node, g *GPU) string { return g.UUID }},
	{[]string{"pci.bus_id", "gpu_bus_id"}, "", func(_ *Node, g *GPU) string { return g.PCIBusID }},
	{[]string{"index"}, "", func(_ *Node, g *GPU) string { return integer(g.Index) }},
	{[]string{"pstate"}, "", func(_ *Node, g *GPU) string { return "P0" }},
	{[]string{"persistence_mode"}, "", func(*Node, *GPU) string { return "Enabled" }},
	{[]string{"compute_mode"}, "", func(*Node, *GPU) string { return "Default" }},
	{[]string{"ecc.mode.current"}, "", func(*Node, *GPU) string { return "Enabled" }},
	{[]string{"ecc.mode.pending"}, "", func(*Node, *GPU) string { return "Enabled" }},
	{[]string{"fan.speed"}, "%", func(*Node, *GPU) string { return naValue }}, // liquid-cooled: no fan
	{[]string{"temperature.gpu"}, "", func(_ *Node, g *GPU) string { return round(g.TempC) }},
	{[]string{"temperature.memory"}, "", func(_ *Node, g *GPU) string { return round(g.MemTempC) }},
	{[]string{"power.management"}, "", func(*Node, *GPU) string { return "Enabled" }},
	{[]string{"power.draw"}, "W", func(_ *Node, g *GPU) string { return num(g.PowerW) }},
	{[]string{"power.draw.average"}, "W", func(_ *Node, g *GPU) string { return num(g.PowerW) }},
	{[]string{"power.draw.instant"}, "W", func(_ *Node, g *GPU) string { return num(g.PowerW) }},
	{[]string{"power.limit", "gpu.power.requested_limit"}, "W", func(_ *Node, g *GPU) string { return num(g.LimitW) }},
	{[]string{"enforced.power.limit", "gpu.power.current_limit"}, "W", func(_ *Node, g *GPU) string { return num(g.LimitW) }},
	{[]string{"power.default_limit", "gpu.power.default_limit"}, "W", func(_ *Node, g *GPU) string { return num(g.DefaultLimitW) }},
	{[]string{"power.min_limit", "gpu.power.min_limit"}, "W", func(_ *Node, g *GPU) string { return num(g.MinLimitW) }},
	{[]string{"power.max_limit", "gpu.power.max_limit"}, "W", func(_ *Node, g *GPU) string { return num(g.MaxLimitW) }},
	{[]string{"clocks.current.graphics", "clocks.gr"}, "MHz", func(_ *Node, g *GPU) string { return integer(g.SMClock) }},
	{[]string{"clocks.current.sm", "clocks.sm"}, "MHz", func(_ *Node, g *GPU) string { return integer(g.SMClock) }},
	{[]string{"clocks.current.memory", "clocks.mem"}, "MHz", func(_ *Node, g *GPU) string { return integer(g.MemClock) }},
	{[]string{"clocks.max.graphics", "clocks.max.gr"}, "MHz", func(_ *Node, g *GPU) string { return integer(g.MaxSMClock) }},
	{[]string{"clocks.max.sm"}, "MHz", func(_ *Node, g *GPU) string { return integer(g.MaxSMClock) }},
	{[]string{"clocks.max.memory", "clocks.max.mem"}, "MHz", func(_ *Node, g *GPU) string { return integer(g.MemClock) }},
	{[]string{"clocks_event_reasons.supported", "clocks_throttle_reasons.supported"}, "", func(*Node, *GPU) string { return hexMask(0x1FF) }},
	{[]string{"clocks_event_reasons.active", "clocks_throttle_reasons.active"}, "", func(_ *Node, g *GPU) string { return hexMask(g.Throttle) }},
	{[]string{"clocks_event_reasons.gpu_idle", "clocks_throttle_reasons.gpu_idle"}, "", reason(ThrottleIdle)},
	{[]string{"clocks_event_reasons.applications_clocks_setting", "clocks_throttle_reasons.applications_clocks_setting"}, "", reason(ThrottleAppClocks)},
	{[]string{"clocks_event_reasons.sw_power_cap", "clocks_throttle_reasons.sw_power_cap"}, "", reason(ThrottleSWPower)},
	{[]string{"clocks_event_reasons.hw_slowdown", "clocks_throttle_reasons.hw_slowdown"}, "", reason(ThrottleHWSlowdown)},
	{[]string{"clocks_event_reasons.hw_thermal_slowdown", "clocks_throttle_reasons.hw_thermal_slowdown"}, "", reason(ThrottleHWThermal)},
	{[]string{"clocks_event_reasons.hw_power_brake_slowdown", "clocks_throttle_reasons.hw_power_brake_slowdown"}, "", reason(ThrottlePowerBrake)},
	{[]string{"clocks_event_reasons.sw_thermal_slowdown", "clocks_throttle_reasons.sw_thermal_slowdown"}, "", reason(ThrottleSWThermal)},
	{[]string{"clocks_event_reasons.sync_boost", "clocks_throttle_reasons.sync_boost"}, "", reason(ThrottleSyncBoost)},
	{[]string{"utilization.gpu"}, "%", func(_ *Node, g *GPU) string { return integer(g.Utilization) }},
	{[]string{"utilization.memory"}, "%", func(_ *Node, g *GPU) string { return integer(g.MemUtilization) }},
	{[]string{"memory.total"}, "MiB", func(_ *Node, g *GPU) string { return integer(g.MemTotalMiB) }},
	{[]string{"memory.used"}, "MiB", func(_ *Node, g *GPU) string { return integer(g.MemUsedMiB) }},
	{[]string{"memory.free"}, "MiB", func(_ *Node, g *GPU) string { return integer(g.MemTotalMiB - g.MemUsedMiB) }},
	{[]string{"ecc.errors.corrected.volatile.total"}, "", func(_ *Node, g *GPU) string { return integer(g.ECCCorrected) }},
	{[]string{"ecc.errors.uncorrected.volatile.total"}, "", func(_ *Node, g *GPU) string { return integer(g.ECCUncorrected) }},
	{[]string{"ecc.errors.corrected.aggregate.total"}, "", func(_ *Node, g *GPU) string { return integer(g.ECCCorrectedTotal) }},
	{[]string{"ecc.errors.uncorrected.aggregate.total"}, "", func(_ *Node, g *GPU) string { return integer(g.ECCUncorrectedTotal) }},
	{[]string{"remapped_rows.correctable"}, "", func(*Node, *GPU) string { return "0" }},
	{[]string{"remapped_rows.uncorrectable"}, "", func(_ *Node, g *GPU) string { return integer(g.RemappedUncorrected) }},
	{[]string{"remapped_rows.pending"}, "", func(_ *Node, g *GPU) string { return yesNo(g.RemapPending) }},
	{[]string{"remapped_rows.failure"}, "", func(*Node, *GPU) string { return "No" }},
	{[]string{"fabric.state"}, "", func(*Node, *GPU) string { return "Completed" }},
	{[]string{"fabric.status"}, "", func(*Node, *GPU) string { return "Success" }},
	{[]string{"fabric.cliqueId"}, "", func(*Node, *GPU) string { return "1" }},
	{[]string{"fabric.clusterUuid"}, "", func(n *Node, _ *GPU) string { return uuidFor("cluster " + n.Domain) }},
	{[]string{"platform.chassis_serial_number"}, "", func(n *Node, _ *GPU) string { return n.ChassisSerial }},
	{[]string{"platform.slot_number"}, "", func(n *Node, _ *GPU) string { return integer(n.Slot) }},
	{[]string{"platform.tray_index"}, "", func(n *Node, _ *GPU) string { return integer(n.TrayIndex) }},
	{[]string{"platform.host_id"}, "", func(*Node, *GPU) string { return "1" }},
	{[]string{"platform.peer_type"}, "", func(*Node, *GPU) string { return "Switch Connected" }},
	{[]string{"platform.module_id"}, "", func(_ *Node, g *GPU) string { return integer(g.ModuleID) }},
}

// smiField finds a property by any of its names.
func findSMIField(name string) *smiField {
	for i := range smiFields {
		for _, n := range smiFields[i].names {
			if n == name {
				return &smiFields[i]
			}
		}
	}
	return nil
}

// SMIFields lists the properties --query-gpu answers, by their first
// names.
func SMIFields() []string {
	out := make([]string, len(smiFields))
	for i, f := range smiFields {
		out[i] = f.names[0]
	}
	return out
}

// Exit codes nvidia-smi uses.
const (
	smiOK          = 0
	smiBadArgs     = 2 // an invalid argument or field
	smiNoDevices   = 6
	smiDriverError = 9 // the driver does not answer (the node is off)
)

const smiNoDriver = "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\n"

// QueryGPU writes `nvidia-smi --query-gpu=fields --format=csv[,noheader][,nounits]`
// for the GPUs of n whose index is in ids (nil: all). Headers carry the
// requested names, with their unit in brackets; values are separated by
// ", " as nvidia-smi does. An unknown field is an error naming it, as
// nvidia-smi's.
func QueryGPU(w io.Writer, n *Node, fields []string, ids []int, header, units bool) error {
	var fs []*smiField
	for _, name := range fields {
		f := findSMIField(name)
		if f == nil {
			return fmt.Errorf("Field \"%s\" is not a valid field to query.", name) //nolint:staticcheck // nvidia-smi's message
		}
		fs = append(fs, f)
	}
	if header {
		cols := make([]string, len(fs))
		for i, f := range fs {
			cols[i] = fields[i]
			if f.unit != "" {
				cols[i] += " [" + f.unit + "]"
			}
		}
		fmt.Fprintln(w, strings.Join(cols, ", "))
	}
	for i := range n.GPUs {
		g := &n.GPUs[i]
		if ids != nil && !containsInt(ids, g.Index) {
			continue
		}
		cols := make([]string, len(fs))
		for j, f := range fs {
			v := f.value(n, g)
			if units && f.unit != "" && v != naValue {
				v += " " + f.unit
			}
			cols[j] = v
		}
		fmt.Fprintln(w, strings.Join(cols, ", "))
	}
	return nil
}

// ListGPUs writes `nvidia-smi -L`.
func ListGPUs(w io.Writer, n *Node) {
	for _, g := range n.GPUs {
		fmt.Fprintf(w, "GPU %d: %s (UUID: %s)\n", g.Index, g.Name, g.UUID)
	}
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
