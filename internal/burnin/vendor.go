package burnin

import (
	"bytes"
	"strconv"

	"github.com/seamdc/seam/internal/burnin/ingest"
)

// Vendor is one vendor's tools as burn-in runs them: the command lines
// and the adapters that read their output. NVIDIA's are the default;
// AMD's rccl-tests print nccl-tests' tables and would plug in with the
// same collective adapter and their own diagnostic and telemetry.
type Vendor struct {
	Name string
	// Diag runs the node's GPU diagnostic at level; ParseDiag reads it
	// with its exit code.
	Diag      func(level int) []string
	ParseDiag func(file string, out []byte, exit int) (*ingest.Diag, error)
	// Collective runs an all-reduce of size bytes over gpus GPUs per
	// node (one task per node).
	Collective      func(size int64, gpus int) []string
	ParseCollective func(file string, out []byte) (*ingest.NCCLRun, error)
	// Telemetry reads the GPUs' power, temperature, clocks, throttle
	// reasons and ECC counts.
	Telemetry      []string
	ParseTelemetry func(file string, out []byte) ([]ingest.GPUTelemetry, error)
}

// NVIDIA is dcgmi diag -r N -j, all_reduce_perf -b S -e S -g G, and
// nvidia-smi --query-gpu … --format=csv.
var NVIDIA = Vendor{
	Name: "nvidia",
	Diag: func(level int) []string { return []string{"dcgmi", "diag", "-r", strconv.Itoa(level), "-j"} },
	ParseDiag: func(file string, out []byte, exit int) (*ingest.Diag, error) {
		return ingest.ParseDiag(file, bytes.NewReader(out), exit)
	},
	Collective: func(size int64, gpus int) []string {
		s := strconv.FormatInt(size, 10)
		return []string{"all_reduce_perf", "-b", s, "-e", s, "-g", strconv.Itoa(gpus)}
	},
	ParseCollective: func(file string, out []byte) (*ingest.NCCLRun, error) {
		return ingest.ParseNCCL(file, bytes.NewReader(out))
	},
	Telemetry: []string{"nvidia-smi", "--query-gpu=" + join(ingest.TelemetryFields), "--format=csv"},
	ParseTelemetry: func(file string, out []byte) ([]ingest.GPUTelemetry, error) {
		t, err := ingest.ParseSMI(file, bytes.NewReader(out), nil)
		if err != nil {
			return nil, err
		}
		return t.Telemetry()
	},
}

func join(xs []string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(x)
	}
	return b.String()
}
