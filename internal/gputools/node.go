// Package gputools prints what NVIDIA's GPU tools print about a node:
// `nvidia-smi --query-gpu … --format=csv` and `-L`, `dcgmi diag -r N
// -j` in DCGM 3.x's and 4.x's JSON shapes (and a plain table without
// -j), and nccl-tests' all_reduce_perf table, whose bus bandwidth
// follows the nodes' state (a slow scale-up link, a GPU throttled by
// heat, a job that leaves its scale-up domain). The state comes from
// the simulated fleet (internal/sim/fleet) through the simulator's
// control interface; the formats follow the public captures in
// ../shared/samples (nvidia-smi, nccl-tests) and, for dcgmi, whose
// output no public capture shows, the shapes described in
// ../shared/reference/operate.md section E. Run dispatches a tool's
// command line.
package gputools

import "time"

// Node is what the GPU tools see on one node.
type Node struct {
	Name    string    `json:"name"` // its host name: the Slurm name
	Key     string    `json:"key"`  // its inventory key, ma/r01/compute-03
	Powered bool      `json:"powered"`
	Time    time.Time `json:"time"` // the node's clock
	Driver  string    `json:"driver"`
	CUDA    string    `json:"cuda"`
	// DCGM is the version dcgmi reports; 3.x and 4.x print different
	// JSON.
	DCGM string `json:"dcgm"`
	// Domain is the node's scale-up (NVLink) domain; LinkFactor its
	// scale-up bandwidth as a share of healthy (1).
	Domain     string  `json:"domain"`
	LinkFactor float64 `json:"link_factor"`
	// ChassisSerial, Slot and TrayIndex are nvidia-smi's platform.*
	// fields: the tray's serial, its U slot, its index in the rack.
	ChassisSerial string        `json:"chassis_serial"`
	Slot          int           `json:"slot"`
	TrayIndex     int           `json:"tray_index"`
	GPUs          []GPU         `json:"gpus"`
	Failures      []DiagFailure `json:"diag_failures,omitempty"`
}

// GPU is one GPU of a node, as NVML reports it.
type GPU struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	Serial   string `json:"serial"`
	UUID     string `json:"uuid"`
	PCIBusID string `json:"pci_bus_id"` // 00000008:01:00.0
	ModuleID int    `json:"module_id"`
	// watts
	PowerW        float64 `json:"power_w"`
	LimitW        float64 `json:"limit_w"` // the enforced limit
	DefaultLimitW float64 `json:"default_limit_w"`
	MinLimitW     float64 `json:"min_limit_w"`
	MaxLimitW     float64 `json:"max_limit_w"`
	// degrees Celsius
	TempC    float64 `json:"temp_c"`
	MemTempC float64 `json:"mem_temp_c"`
	// MHz
	SMClock    int `json:"sm_clock_mhz"`
	MaxSMClock int `json:"max_sm_clock_mhz"`
	MemClock   int `json:"mem_clock_mhz"`
	// percent
	Utilization    int `json:"utilization"`
	MemUtilization int `json:"mem_utilization"`
	MemTotalMiB    int `json:"mem_total_mib"`
	MemUsedMiB     int `json:"mem_used_mib"`
	// Throttle is NVML's clocks event reasons bitmask (Throttle*).
	Throttle uint64 `json:"throttle"`
	// ECC error counts: volatile (since the driver loaded) and aggregate
	// (the GPU's lifetime)
	ECCCorrected        int  `json:"ecc_corrected"`
	ECCUncorrected      int  `json:"ecc_uncorrected"`
	ECCCorrectedTotal   int  `json:"ecc_corrected_aggregate"`
	ECCUncorrectedTotal int  `json:"ecc_uncorrected_aggregate"`
	RemappedUncorrected int  `json:"remapped_rows_uncorrectable"`
	RemapPending        bool `json:"remap_pending"`
}

// NVML's clocks event reasons (nvmlClocksEventReason*).
const (
	ThrottleIdle       uint64 = 0x1
	ThrottleAppClocks  uint64 = 0x2
	ThrottleSWPower    uint64 = 0x4
	ThrottleHWSlowdown uint64 = 0x8
	ThrottleSyncBoost  uint64 = 0x10
	ThrottleSWThermal  uint64 = 0x20
	ThrottleHWThermal  uint64 = 0x40
	ThrottlePowerBrake uint64 = 0x80
)

// DiagFailure is a DCGM diagnostic test that fails on a GPU (a defect
// of the simulated node), with the warning it prints.
type DiagFailure struct {
	Test    string `json:"test"` // a test's 3.x name: "GPU Memory", "Targeted Power", …
	GPU     int    `json:"gpu"`
	Warning string `json:"warning"`
}

// ClockRatio is how fast the GPU runs against its maximum clock (1 at
// full speed).
func (g GPU) ClockRatio() float64 {
	if g.MaxSMClock <= 0 {
		return 1
	}
	return float64(g.SMClock) / float64(g.MaxSMClock)
}
