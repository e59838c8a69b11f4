package gputools

import (
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Tools are the programs Run answers as.
var Tools = []string{"nvidia-smi", "dcgmi", "all_reduce_perf"}

// Env is where a tool runs: the node it runs on and, for a job of
// several nodes, the job (Slurm's SLURM_PROCID and SLURM_JOB_NODELIST,
// expanded), and how to read nodes' state.
type Env struct {
	Node     string   // this node (SLURMD_NODENAME)
	Rank     int      // this task's rank in the job (SLURM_PROCID)
	JobNodes []string // the job's nodes; nil: this node alone
	Nodes    func(names ...string) ([]*Node, error)
}

// Run runs tool (nvidia-smi, dcgmi or all_reduce_perf) with args and
// returns its exit code, as the real program would for the node's
// state.
func Run(tool string, args []string, env Env, stdout, stderr io.Writer) int {
	switch tool {
	case "nvidia-smi":
		return runSMI(args, env, stdout, stderr)
	case "dcgmi":
		return runDCGMI(args, env, stdout, stderr)
	case "all_reduce_perf":
		return runAllReduce(args, env, stdout, stderr)
	}
	fmt.Fprintf(stderr, "%s: not a simulated GPU tool (tools: %s)\n", tool, strings.Join(Tools, ", "))
	return 127
}

func thisNode(env Env, stderr io.Writer) (*Node, int) {
	if env.Node == "" {
		fmt.Fprintln(stderr, "simulated GPU tool: no node: run it through Slurm (SLURMD_NODENAME) or name one with --node")
		return nil, 1
	}
	ns, err := env.Nodes(env.Node)
	if err != nil {
		fmt.Fprintf(stderr, "simulated GPU tool: node %s: %v\n", env.Node, err)
		return nil, 1
	}
	return ns[0], 0
}

// flagValue splits "--name=value" or takes the next argument.
func flagValue(args []string, i int) (string, int, bool) {
	a := args[i]
	if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(k, "-") {
		return v, i, true
	}
	if i+1 < len(args) {
		return args[i+1], i + 1, true
	}
	return "", i, false
}

func parseIDs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("invalid GPU id %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func runSMI(args []string, env Env, stdout, stderr io.Writer) int {
	var fields []string
	var ids []int
	list, csv, header, units := false, false, true, true
	for i := 0; i < len(args); i++ {
		name, _, _ := strings.Cut(args[i], "=")
		switch name {
		case "-L", "--list-gpus":
			list = true
		case "--query-gpu", "--format", "-i", "--id":
			v, j, ok := flagValue(args, i)
			if !ok {
				fmt.Fprintf(stderr, "Option %s requires a value.\n", name)
				return smiBadArgs
			}
			i = j
			switch name {
			case "--query-gpu":
				for _, f := range strings.Split(v, ",") {
					fields = append(fields, strings.TrimSpace(f))
				}
			case "--format":
				for _, f := range strings.Split(v, ",") {
					switch strings.TrimSpace(f) {
					case "csv":
						csv = true
					case "noheader":
						header = false
					case "nounits":
						units = false
					default:
						fmt.Fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
						return smiBadArgs
					}
				}
			default:
				var err error
				if ids, err = parseIDs(v); err != nil {
					fmt.Fprintf(stderr, "%v\n", err)
					return smiBadArgs
				}
			}
		default:
			fmt.Fprintf(stderr, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"+
				"(seam's simulated nvidia-smi answers -L and --query-gpu=… --format=csv[,noheader][,nounits] [-i IDS])\n")
			return smiBadArgs
		}
	}
	n, code := thisNode(env, stderr)
	if n == nil {
		return code
	}
	if !n.Powered {
		fmt.Fprint(stdout, smiNoDriver)
		return smiDriverError
	}
	if len(n.GPUs) == 0 {
		fmt.Fprintln(stdout, "No devices were found")
		return smiNoDevices
	}
	switch {
	case list:
		ListGPUs(stdout, n)
	case len(fields) > 0 && csv:
		if err := QueryGPU(stdout, n, fields, ids, header, units); err != nil {
			fmt.Fprintf(stdout, "%v\n\n", err)
			return smiBadArgs
		}
	default:
		fmt.Fprintf(stderr, "seam's simulated nvidia-smi answers -L and --query-gpu=… --format=csv only\n")
		return smiBadArgs
	}
	return smiOK
}

func runDCGMI(args []string, env Env, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-v" || args[0] == "--version") {
		n, code := thisNode(env, stderr)
		if n == nil {
			return code
		}
		fmt.Fprintf(stdout, "Version : %s\n", n.DCGM)
		return 0
	}
	if len(args) == 0 || args[0] != "diag" {
		fmt.Fprintln(stderr, "seam's simulated dcgmi answers: dcgmi diag -r LEVEL [-j] [-i GPUS], dcgmi --version")
		return 1
	}
	level, jsonOut := 1, false
	var ids []int
	for i := 1; i < len(args); i++ {
		name, _, _ := strings.Cut(args[i], "=")
		switch name {
		case "-j", "--json":
			jsonOut = true
		case "-r", "--run", "-i", "--gpuList":
			v, j, ok := flagValue(args, i)
			if !ok {
				fmt.Fprintf(stderr, "Error: option %s needs a value\n", name)
				return 1
			}
			i = j
			if name == "-r" || name == "--run" {
				l, err := diagLevel(v)
				if err != nil {
					fmt.Fprintf(stderr, "Error: %v\n", err)
					return 1
				}
				level = l
				continue
			}
			var err error
			if ids, err = parseIDs(v); err != nil {
				fmt.Fprintf(stderr, "Error: %v\n", err)
				return 1
			}
		default:
			fmt.Fprintf(stderr, "Error: unknown option %s\n", args[i])
			return 1
		}
	}
	n, code := thisNode(env, stderr)
	if n == nil {
		return code
	}
	if !n.Powered {
		fmt.Fprintln(stderr, "Error: unable to establish a connection to the specified host: localhost")
		return 255
	}
	return Diag(stdout, n, level, ids, jsonOut)
}

// diagLevel reads -r: 1 to 4, or the names short, medium, long, xlong.
func diagLevel(v string) (int, error) {
	switch v {
	case "1", "short", "quick":
		return 1, nil
	case "2", "medium":
		return 2, nil
	case "3", "long":
		return 3, nil
	case "4", "xlong":
		return 4, nil
	}
	return 0, fmt.Errorf("invalid diag level %q: want 1 to 4", v)
}

func runAllReduce(args []string, env Env, stdout, stderr io.Writer) int {
	a := DefaultNCCLArgs()
	for i := 0; i < len(args); i++ {
		name, _, _ := strings.Cut(args[i], "=")
		v, j, ok := flagValue(args, i)
		if !ok || !strings.HasPrefix(name, "-") {
			fmt.Fprintf(stderr, "invalid argument %q\n", args[i])
			return 1
		}
		i = j
		var err error
		switch name {
		case "-b", "--minbytes":
			a.MinBytes, err = ParseSize(v)
		case "-e", "--maxbytes":
			a.MaxBytes, err = ParseSize(v)
		case "-f", "--stepfactor":
			a.Factor, err = strconv.ParseInt(v, 10, 64)
		case "-i", "--stepbytes":
			a.StepBytes, err = ParseSize(v)
			a.Factor = 1
		case "-g", "--ngpus":
			a.GPUs, err = strconv.Atoi(v)
		case "-n", "--iters":
			a.Iters, err = strconv.Atoi(v)
		case "-w", "--warmup_iters":
			a.Warmup, err = strconv.Atoi(v)
		case "-c", "--check":
			a.Check, err = strconv.Atoi(v)
		case "-o", "--op":
			a.Op = v
		case "-d", "--datatype":
			a.Type = v
		case "-t", "--nthreads", "-G", "--cudagraph", "-a", "--average", "-z", "--blocking":
		default:
			err = fmt.Errorf("unknown option")
		}
		if err != nil {
			fmt.Fprintf(stderr, "invalid value for %s: %q: %v\n", name, v, err)
			return 1
		}
	}
	if a.Factor > 1 {
		a.StepBytes = 0
	}
	if env.Rank != 0 {
		return 0 // rank 0 prints for the job
	}
	names := env.JobNodes
	if len(names) == 0 {
		if env.Node == "" {
			fmt.Fprintln(stderr, "all_reduce_perf: no node: run it through Slurm (SLURMD_NODENAME) or name one with --node")
			return 1
		}
		names = []string{env.Node}
	}
	nodes, err := env.Nodes(names...)
	if err != nil {
		fmt.Fprintf(stderr, "all_reduce_perf: %v\n", err)
		return 1
	}
	for _, n := range nodes {
		if !n.Powered || len(n.GPUs) == 0 {
			fmt.Fprintf(stderr, "%s: Test CUDA failure common.cu:1030 'no CUDA-capable device is detected'\n", n.Name)
			return 2
		}
		if a.GPUs > len(n.GPUs) {
			fmt.Fprintf(stderr, "%s: Test CUDA failure common.cu:1030 'invalid device ordinal' (-g %d on a node of %d GPUs)\n", n.Name, a.GPUs, len(n.GPUs))
			return 2
		}
	}
	AllReducePerf(stdout, nodes, a)
	return 0
}

// uuidFor is a stable UUID for name (the layout of RFC 9562's version
// 8, from SHA-256).
func uuidFor(name string) string {
	s := sha256.Sum256([]byte(name))
	s[6] = s[6]&0x0f | 0x80
	s[8] = s[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
}

// GPUUUID is a GPU's UUID as NVML prints it, stable for its serial.
func GPUUUID(serial string) string { return "GPU-" + uuidFor("gpu "+serial) }
