package gputools

import (
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"
)

// NCCLArgs are all_reduce_perf's options.
type NCCLArgs struct {
	MinBytes, MaxBytes int64 // -b, -e
	Factor             int64 // -f: multiply the size by this each step
	StepBytes          int64 // -i: add this instead (when Factor is 0)
	GPUs               int   // -g: GPUs per process
	Iters, Warmup      int   // -n, -w
	Check              int   // -c
	Op, Type           string
}

// DefaultNCCLArgs are nccl-tests' defaults: 32 MB, one GPU per process.
func DefaultNCCLArgs() NCCLArgs {
	return NCCLArgs{MinBytes: 32 << 20, MaxBytes: 32 << 20, Factor: 1, StepBytes: 1 << 20, GPUs: 1, Iters: 20, Warmup: 5, Check: 1, Op: "sum", Type: "float"}
}

// The bus bandwidth model of an all-reduce: a latency, the size over
// the algorithm bandwidth, and a protocol overhead that grows to L1 for
// large messages. In one NVLink domain the peak is GB200 NVL72's
// measured 846 GB/s busbw (samples/nccl-tests, one rack, 8 GB); a job
// across domains runs at the scale-out network's ~410 GB/s (the 20-rack
// sample's 16 GB row).
type bwModel struct {
	peak   float64 // busbw, GB/s
	l0, l1 float64 // us
	s1     float64 // bytes
}

var (
	nvlModel = bwModel{peak: 858, l0: 15, l1: 600, s1: 64 << 20}
	netModel = bwModel{peak: 412, l0: 40, l1: 4000, s1: 256 << 20}
)

// Ranks are the job's GPUs, in rank order: every process's GPUs, the
// processes one per node in the order given.
type rank struct {
	node *Node
	gpu  *GPU
	pid  int
}

func ranks(nodes []*Node, perTask int) []rank {
	var out []rank
	for _, n := range nodes {
		pid := 1000 + int(hash32(n.Name)%60000)
		for i := 0; i < perTask && i < len(n.GPUs); i++ {
			out = append(out, rank{node: n, gpu: &n.GPUs[i], pid: pid})
		}
	}
	return out
}

// sameDomain reports whether every node is in one scale-up domain.
func sameDomain(nodes []*Node) bool {
	for _, n := range nodes {
		if n.Domain == "" || n.Domain != nodes[0].Domain {
			return false
		}
	}
	return len(nodes) > 0
}

// slowest is the bandwidth factor of the job's weakest link: a slow
// scale-up link, or a GPU held back by its clocks (an all-reduce runs
// at the pace of its slowest rank).
func slowest(rs []rank) float64 {
	f := 1.0
	for _, r := range rs {
		lf := r.node.LinkFactor
		if lf <= 0 {
			lf = 1
		}
		f = math.Min(f, lf)
		f = math.Min(f, 0.5+0.5*r.gpu.ClockRatio())
	}
	return f
}

// AllReducePerf writes nccl-tests' all_reduce_perf output for a job
// over nodes (one process per node, a.GPUs GPUs each), in the format of
// the nccl-tests 2.x samples: the header, a line per rank, the table
// of sizes with out-of-place and in-place time, algorithm and bus
// bandwidth, the out-of-bounds count and the average bus bandwidth over
// every row (which is not the bandwidth at a large size).
func AllReducePerf(w io.Writer, nodes []*Node, a NCCLArgs) {
	rs := ranks(nodes, a.GPUs)
	step := fmt.Sprintf("%d(factor)", a.Factor)
	if a.Factor <= 1 && a.StepBytes > 0 {
		step = fmt.Sprintf("%d(bytes)", a.StepBytes)
	}
	fmt.Fprintf(w, "# nThread 1 nGpus %d minBytes %d maxBytes %d step: %s warmup iters: %d iters: %d agg iters: 1 validation: %d graph: 0\n",
		a.GPUs, a.MinBytes, a.MaxBytes, step, a.Warmup, a.Iters, a.Check)
	fmt.Fprintln(w, "#")
	fmt.Fprintln(w, "# Using devices")
	for i, r := range rs {
		fmt.Fprintf(w, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s\n", i, r.pid, r.node.Name, r.gpu.Index, shortBus(r.gpu.PCIBusID), r.gpu.Name)
	}
	fmt.Fprintln(w, "#")
	fmt.Fprintln(w, "#                                                              out-of-place                       in-place          ")
	fmt.Fprintln(w, "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong")
	fmt.Fprintln(w, "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ")
	m := netModel
	if sameDomain(nodes) {
		m = nvlModel
	}
	n := float64(len(rs))
	factor := 0.0
	if n > 1 {
		factor = 2 * (n - 1) / n
	}
	algPeak := 0.0
	if factor > 0 {
		algPeak = m.peak * slowest(rs) / factor // GB/s
	}
	var sum float64
	var count int
	key := jobKey(nodes)
	for size := a.MinBytes; size <= a.MaxBytes && size > 0; size = nextSize(size, a) {
		elems := size / typeSize(a.Type)
		fmt.Fprintf(w, "%12d  %12d  %8s  %6s  %6d", size, elems, a.Type, a.Op, -1)
		for place := range 2 {
			t := m.l0 + m.l1*float64(size)/(float64(size)+m.s1)
			if algPeak > 0 {
				t += float64(size) / (algPeak * 1e3)
			}
			t *= 1 + jitter(key, size, place)
			alg := float64(size) / (t * 1e3)
			bus := alg * factor
			sum += bus
			count++
			fmt.Fprintf(w, "  %7s  %6.2f  %6.2f  %5s", usec(t), alg, bus, "0")
		}
		fmt.Fprintln(w)
		if a.Factor <= 1 && a.StepBytes <= 0 {
			break
		}
	}
	fmt.Fprintln(w, "# Out of bounds values : 0 OK")
	avg := 0.0
	if count > 0 {
		avg = sum / float64(count)
	}
	fmt.Fprintf(w, "# Avg bus bandwidth    : %s \n", strconv.FormatFloat(avg, 'g', 6, 64))
	fmt.Fprintln(w, "#")
}

func nextSize(size int64, a NCCLArgs) int64 {
	if a.Factor > 1 {
		return size * a.Factor
	}
	return size + a.StepBytes
}

func typeSize(t string) int64 {
	switch t {
	case "int8", "uint8", "fp8_e4m3", "fp8_e5m2":
		return 1
	case "half", "float16", "bfloat16":
		return 2
	case "double", "int64", "uint64":
		return 8
	}
	return 4
}

// usec formats a time as nccl-tests does: two decimals under 100 us,
// one under 10 ms, none above.
func usec(t float64) string {
	switch {
	case t >= 10000:
		return strconv.FormatFloat(t, 'f', 0, 64)
	case t >= 100:
		return strconv.FormatFloat(t, 'f', 1, 64)
	}
	return strconv.FormatFloat(t, 'f', 2, 64)
}

// shortBus is a PCI bus id as a rank line prints it: 0008:01:00.
func shortBus(id string) string {
	f := strings.Split(strings.TrimSuffix(id, ".0"), ":")
	if len(f) == 3 && len(f[0]) > 4 {
		f[0] = f[0][len(f[0])-4:]
	}
	return strings.ToLower(strings.Join(f, ":"))
}

func jobKey(nodes []*Node) string {
	var b strings.Builder
	for _, n := range nodes {
		b.WriteString(n.Name)
		b.WriteByte(',')
	}
	return b.String()
}

// jitter is a repeatable spread of ±0.8 % between runs of a size: real
// runs never repeat to the last digit, a test's golden file must.
func jitter(key string, size int64, place int) float64 {
	h := hash32(key + strconv.FormatInt(size, 10) + strconv.Itoa(place))
	return (float64(h%1601)/1600 - 0.5) * 0.016
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// ParseSize reads a size as nccl-tests does: a number of bytes with an
// optional K, M or G (powers of 1024).
func ParseSize(s string) (int64, error) {
	mult := int64(1)
	switch strings.ToUpper(s[len(s)-min(len(s), 1):]) {
	case "K":
		mult = 1 << 10
	case "M":
		mult = 1 << 20
	case "G":
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	return n * mult, nil
}
