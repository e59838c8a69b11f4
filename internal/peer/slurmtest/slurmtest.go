// Package slurmtest runs a real Slurm for tests, on loopback: munged
// with its own key and socket, slurmctld -D, and one slurmd -D -N NAME
// per node that should run (Debian's slurmd is built for several on one
// host), each on its own free port (below the kernel's ephemeral
// range, so no other process's connection takes it first), with Slurm's state, spool and
// configuration in the test's temporary directory. The cluster is ready
// when scontrol ping answers and sinfo shows every running node idle;
// the daemons' output is attached to a failing test, and they are
// stopped by process group when it ends. Nodes may be defined without a
// slurmd: Slurm then knows them (topology, sinfo) but marks them down.
package slurmtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/scheduler"
)

// Node is a node of the cluster.
type Node struct {
	Name     string
	Features []string
	Run      bool // start a slurmd for it
}

// Config is the cluster to start.
type Config struct {
	Nodes []Node
	// Topology is topology.conf's content; with it, TopologyPlugin is
	// topology/tree.
	Topology []byte
	// Extra lines for slurm.conf.
	Extra []string
	// Within bounds the wait for the cluster (default 60 s).
	Within time.Duration
}

// Cluster is a running Slurm.
type Cluster struct {
	Dir  string // Slurm's directory: slurm.conf, topology.conf, state, spool
	Conf string // slurm.conf
	t    testing.TB
	bin  map[string]string
	cfg  Config
}

// Start starts munged, slurmctld and the slurmds, ready.
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Within <= 0 {
		cfg.Within = 60 * time.Second
	}
	c := &Cluster{Dir: t.TempDir(), t: t, bin: map[string]string{}, cfg: cfg}
	for _, p := range []string{"munged", "slurmctld", "slurmd", "scontrol", "sinfo", "sbatch", "squeue", "scancel"} {
		c.bin[p] = peer.Need(t, p)
	}
	c.Conf = filepath.Join(c.Dir, "slurm.conf")
	// a job's steps outlive slurmd (slurmstepd runs in a session of its
	// own) and a test's `sleep 3600` would run on after it: once the
	// daemons are stopped (cleanups run last first), kill what is left
	t.Cleanup(func() { killJobs(c.Conf) })
	for _, d := range []string{"state", "spool", "run"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(c.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.startMunge()
	c.writeConf()
	c.StartController()
	c.startNodes()
	return c
}

func (c *Cluster) path(p string) string { return filepath.Join(c.Dir, p) }

func (c *Cluster) startMunge() {
	key := make([]byte, 1024)
	if _, err := rand.Read(key); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(c.path("munge.key"), key, 0o600); err != nil {
		c.t.Fatal(err)
	}
	sock := c.path("run/munge.socket")
	peer.Start(c.t, "munged", peer.Spec{
		Args: []string{c.bin["munged"], "--foreground", "--force", "--socket=" + sock, "--key-file=" + c.path("munge.key"),
			"--pid-file=" + c.path("run/munged.pid"), "--seed-file=" + c.path("run/munged.seed"), "--log-file=/dev/null", "--num-threads=2"},
		Ready: func(context.Context) error {
			_, err := os.Stat(sock)
			return err
		},
	})
}

// port is a free port for one of Slurm's daemons (peer.ListenTCP: not
// the kernel's choice, which another process's connection could take
// before the daemon binds it).
func (c *Cluster) port() int {
	_, p, _ := strings.Cut(peer.ListenTCP(c.t), ":")
	n, _ := strconv.Atoi(p)
	return n
}

// writeConf writes slurm.conf (after the recipe in the design brief's
// operate notes) and topology.conf.
func (c *Cluster) writeConf() {
	var b strings.Builder
	fmt.Fprintf(&b, `ClusterName=seamtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
StateSaveLocation=%s
SlurmdSpoolDir=%s/%%n
SlurmctldPidFile=%s
SlurmdPidFile=%s/slurmd-%%n.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
SlurmctldTimeout=30
SlurmdTimeout=300
`, c.port(), c.port(), c.path("run/munge.socket"), c.path("state"), c.path("spool"), c.path("run/slurmctld.pid"), c.path("run"))
	if c.cfg.Topology != nil {
		b.WriteString("TopologyPlugin=topology/tree\n")
		if err := os.WriteFile(c.path("topology.conf"), c.cfg.Topology, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	for _, l := range c.cfg.Extra {
		b.WriteString(l + "\n")
	}
	idle := c.port() // a port nothing listens on, for nodes without a slurmd
	for _, n := range c.cfg.Nodes {
		port := idle
		if n.Run {
			port = c.port()
		}
		fmt.Fprintf(&b, "NodeName=%s NodeHostname=localhost NodeAddr=127.0.0.1 Port=%d CPUs=1 RealMemory=100", n.Name, port)
		if len(n.Features) > 0 {
			fmt.Fprintf(&b, " Features=%s", strings.Join(n.Features, ","))
		}
		b.WriteString(" State=UNKNOWN\n")
	}
	b.WriteString("PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n")
	if err := os.WriteFile(c.Conf, []byte(b.String()), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// Env is the environment Slurm's commands need to reach the cluster.
func (c *Cluster) Env() []string { return []string{"SLURM_CONF=" + c.Conf} }

// StartController starts slurmctld (again, after it exited), ready when
// scontrol ping answers.
func (c *Cluster) StartController() {
	c.t.Helper()
	peer.Start(c.t, "slurmctld", peer.Spec{
		Args:   []string{c.bin["slurmctld"], "-D", "-f", c.Conf},
		Env:    c.Env(),
		Within: c.cfg.Within,
		Stop:   10 * time.Second,
		Ready: func(ctx context.Context) error {
			out, err := c.run(ctx, "scontrol", "ping")
			if err != nil {
				return err
			}
			if !strings.Contains(out, "is UP") {
				return fmt.Errorf("scontrol ping: %s", strings.TrimSpace(out))
			}
			return nil
		},
	})
}

func (c *Cluster) startNodes() {
	var running []string
	for _, n := range c.cfg.Nodes {
		if !n.Run {
			continue
		}
		if err := os.MkdirAll(c.path("spool/"+n.Name), 0o755); err != nil {
			c.t.Fatal(err)
		}
		peer.Start(c.t, "slurmd "+n.Name, peer.Spec{Args: []string{c.bin["slurmd"], "-D", "-N", n.Name, "-f", c.Conf}, Env: c.Env(), Stop: 10 * time.Second})
		running = append(running, n.Name)
	}
	if len(running) == 0 {
		return
	}
	deadline := time.Now().Add(c.cfg.Within)
	var last string
	for time.Now().Before(deadline) {
		out, err := c.run(context.Background(), "sinfo", "-h", "-N", "-o", "%N %t", "-n", strings.Join(running, ","))
		last = out
		if err == nil && idle(out, len(running)) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	c.t.Fatalf("slurm nodes not idle within %s:\n%s", c.cfg.Within, last)
}

func idle(sinfo string, want int) bool {
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(sinfo), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || f[1] != "idle" {
			return false
		}
		n++
	}
	return n == want
}

// run runs a Slurm command against the cluster.
func (c *Cluster) run(ctx context.Context, prog string, args ...string) (string, error) {
	bin := c.bin[prog]
	if bin == "" {
		bin = peer.Need(c.t, prog)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), c.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", prog, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Run runs a Slurm command (scontrol, sinfo, sbatch, squeue, scancel)
// against the cluster and returns its output.
func (c *Cluster) Run(prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.run(ctx, prog, args...)
}

// Must is Run failing the test on an error.
func (c *Cluster) Must(prog string, args ...string) string {
	c.t.Helper()
	out, err := c.Run(prog, args...)
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", prog, strings.Join(args, " "), err, out)
	}
	return out
}

// Slurm is the scheduler backend for the cluster.
func (c *Cluster) Slurm() *scheduler.Slurm {
	return &scheduler.Slurm{Conf: c.Conf, Bin: filepath.Dir(c.bin["scontrol"])}
}

// killJobs kills the job steps and scripts of a cluster whose daemons
// are gone.
func killJobs(conf string) {
	for _, pid := range jobProcesses(conf) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// jobProcesses are the processes (other than this one) whose
// environment names conf as their SLURM_CONF.
func jobProcesses(conf string) []int {
	want := []byte("SLURM_CONF=" + conf)
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// Unreachable writes a slurm.conf whose slurmctld is on a loopback port
// nothing listens on and returns its path: Slurm's commands read it and
// find no controller (scontrol ping says DOWN at once; with
// MessageTimeout=1 the other commands give up within a second, not 9).
func Unreachable(t testing.TB) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "slurm.conf")
	_, port, _ := strings.Cut(peer.ListenTCP(t), ":")
	conf := "ClusterName=seamtest\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=" + port + "\nMessageTimeout=1\n" +
		"NodeName=gpu-a-r01-n01 NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN\nPartitionName=main Nodes=ALL Default=YES\n"
	if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
