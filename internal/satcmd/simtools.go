package satcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/gputools"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/topology/hostlist"
)

func init() {
	register("sim-tools", "the simulated nodes' GPU tools: nvidia-smi, dcgmi, all_reduce_perf", runSimTools).
		WithExample("sat sim-tools install /tmp/gpu --site /tmp/site").
		Sub("install", "write nvidia-smi, dcgmi and all_reduce_perf into a directory, for a job's PATH",
			"sat sim-tools install /tmp/gpu --site /tmp/site").
		Sub("run", "run one simulated tool as the node --node (or SLURMD_NODENAME) would",
			"sat sim-tools run --control http://127.0.0.1:9000 --node gpu-a-r01-n01 nvidia-smi -L")
}

const simToolsHelp = `The GPU tools of the simulated site's nodes, printing what NVIDIA's
print for the node's state in the simulator (its workload, power cap
and defects):

  sat sim-tools install DIR --control URL | --site BINDING [--sat PATH]
      write nvidia-smi, dcgmi and all_reduce_perf into DIR: put DIR first
      on a job's PATH (srun --export=ALL,PATH=DIR:$PATH) and they run on
      the node Slurm runs them on
  sat sim-tools run [--control URL] [--node NAME] TOOL [ARGS...]
      run one: the node is --node, else SLURMD_NODENAME; the simulator is
      --control, else SEAM_SIM_CONTROL; a job's nodes (all_reduce_perf)
      are SLURM_STEP_NODELIST or SLURM_JOB_NODELIST, and only rank 0
      (SLURM_PROCID) prints

Supported: nvidia-smi -L and --query-gpu=… --format=csv[,noheader][,nounits]
[-i IDS]; dcgmi diag -r 1..4 [-j] [-i IDS], dcgmi --version (the node's
DCGM version decides the JSON's shape); all_reduce_perf -b -e -f -i -g
-n -w -c -o -d. The exit code is the tool's.`

// EnvSimControl names the simulator's control interface for the tools.
const EnvSimControl = "SEAM_SIM_CONTROL"

func runSimTools(args []string, stdout, stderr io.Writer) int {
	return runSimToolsEnv(args, stdout, stderr, os.LookupEnv)
}

func runSimToolsEnv(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	if code, done := subcommand(args, stderr, "sim-tools", simToolsHelp, "install", "run"); done {
		return code
	}
	if args[0] == "install" {
		return simToolsInstall(args[1:], stdout, stderr)
	}
	return simToolsRun(args[1:], stdout, stderr, lookupEnv)
}

func simToolsInstall(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR --control URL | --site BINDING [--sat PATH]", flag.ContinueOnError)
	control := fs.String("control", "", "the simulator's control interface, http://127.0.0.1:PORT")
	site := fs.String("site", "", "a binding written by sat sim (its simulator block names the control interface)")
	satPath := fs.String("sat", "", "the sat program the tools run (default: this one)")
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 1:
		err = cli.Usagef("want one directory, got %d arguments", len(pos))
	case (*control == "") == (*site == ""):
		err = cli.Usagef("give --control URL or --site BINDING")
	}
	if err != nil {
		return fail(stderr, "sim-tools install", fs, err)
	}
	if *site != "" {
		b, diags, err := binding.Load(*site)
		switch {
		case err != nil:
		case diags.Count(diag.Error) > 0 || b == nil:
			err = fmt.Errorf("the binding in %s does not load", *site)
		case b.Simulator == nil:
			err = fmt.Errorf("the binding in %s names no simulator: write it with sat sim", *site)
		default:
			*control = b.Simulator.Control
		}
		if err != nil {
			fmt.Fprintf(stderr, "sat sim-tools: %v\n", err)
			return cli.ExitTool
		}
	}
	if *satPath == "" {
		p, err := os.Executable()
		if err != nil {
			fmt.Fprintf(stderr, "sat sim-tools: %v\n", err)
			return cli.ExitTool
		}
		*satPath = p
	}
	dir, err := installTools(pos[0], *satPath, *control)
	if err != nil {
		fmt.Fprintf(stderr, "sat sim-tools: %v\n", err)
		return cli.ExitTool
	}
	fmt.Fprintf(stdout, "%s: %s (the simulator at %s)\n", dir, strings.Join(gputools.Tools, ", "), *control)
	return cli.ExitOK
}

// installTools writes a shell wrapper per tool into dir that runs sat
// sim-tools run with the control interface.
func installTools(dir, satPath, control string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	sat, err := filepath.Abs(satPath)
	if err != nil {
		return "", err
	}
	for _, tool := range gputools.Tools {
		script := fmt.Sprintf("#!/bin/sh\n# seam's simulated %s: the node's state in the simulator at %s\nexec %s sim-tools run --control %s %s \"$@\"\n",
			tool, control, shellQuote(sat), shellQuote(control), tool)
		if err := os.WriteFile(filepath.Join(dir, tool), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func simToolsRun(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("[--control URL] [--node NAME] TOOL [ARGS...]", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	control := fs.String("control", "", "the simulator's control interface (default $"+EnvSimControl+")")
	node := fs.String("node", "", "the node (default $SLURMD_NODENAME)")
	if err := fs.Parse(args); err != nil { // stops at the tool: its arguments are its own
		if !errors.Is(err, flag.ErrHelp) {
			err = cli.Usagef("%v", err)
		}
		return fail(stderr, "sim-tools run", fs, err)
	}
	env := func(k string) string { v, _ := lookupEnv(k); return v }
	if *control == "" {
		*control = env(EnvSimControl)
	}
	if *node == "" {
		*node = env("SLURMD_NODENAME")
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return fail(stderr, "sim-tools run", fs, cli.Usagef("name a tool: %s", strings.Join(gputools.Tools, ", ")))
	}
	if *control == "" {
		fmt.Fprintf(stderr, "%s: no simulator: give --control or set %s\n", rest[0], EnvSimControl)
		return cli.ExitTool
	}
	e, err := toolEnv(*node, env, &sim.Client{URL: *control})
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", rest[0], err)
		return cli.ExitTool
	}
	return gputools.Run(rest[0], rest[1:], e, stdout, stderr)
}

// toolEnv is where a tool runs: the node, its rank and its job's nodes
// from Slurm's environment, the nodes' state from the simulator.
func toolEnv(node string, env func(string) string, c *sim.Client) (gputools.Env, error) {
	e := gputools.Env{Node: node}
	if v := env("SLURM_PROCID"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return e, fmt.Errorf("SLURM_PROCID=%q: not a rank", v)
		}
		e.Rank = n
	}
	list := env("SLURM_STEP_NODELIST")
	if list == "" {
		list = env("SLURM_JOB_NODELIST")
	}
	if list != "" {
		nodes, err := hostlist.Expand(list)
		if err != nil {
			return e, fmt.Errorf("the job's nodes %q: %w", list, err)
		}
		if len(nodes) > 1 {
			e.JobNodes = nodes
		}
	}
	e.Nodes = func(names ...string) ([]*gputools.Node, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ns, err := c.GPUViews(ctx, names...)
		if err == nil && len(ns) != len(names) {
			err = errors.New("the simulator answered for other nodes")
		}
		return ns, err
	}
	return e, nil
}
