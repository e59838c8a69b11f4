package satcmd

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// TestDiscoverScripts runs `sat discover` and `sat sim-tools` end to end
// against `sat sim` in process (testdata/discover/*.txtar), with Debian's
// redfishtool (exec redfishtool) at the simulated BMCs. Commands, with
// those of TestSimScripts (sat, simulate, simwait, fault):
//
//	fleet defect KIND TARGET [key=value...]   put a node or tray defect in force
//	fleet nodes STATE NODE...                 set nodes' workload, in phase
//	fleet env                                 set CONTROL to the control interface's URL
//	fleet bmc NAME                            set BMC to that served BMC's host:port
func TestDiscoverScripts(t *testing.T) {
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/discover",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("EXAMPLE", example)
			bg := &background{}
			env.Values["sim"] = bg
			env.Defer(bg.stop)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sat":      simCmdSat,
			"simulate": simCmdSimulate,
			"simwait":  simCmdWait,
			"fault":    simCmdFault,
			"fleet":    cmdFleet,
		},
	})
}

func cmdFleet(ts *testscript.TestScript, neg bool, args []string) {
	bg := ts.Value("sim").(*background)
	url, err := os.ReadFile(filepath.Join(bg.out, "control.url"))
	ts.Check(err)
	c := &sim.Client{URL: strings.TrimSpace(string(url))}
	ctx := context.Background()
	if len(args) == 1 && args[0] == "env" {
		ts.Setenv("CONTROL", c.URL)
		return
	}
	if len(args) == 2 && args[0] == "bmc" {
		eps, err := c.BMCs(ctx)
		ts.Check(err)
		for _, e := range eps {
			if e.Name == args[1] {
				ts.Setenv("BMC", e.Address)
				return
			}
		}
		ts.Fatalf("no BMC %q served", args[1])
	}
	if len(args) < 2 {
		ts.Fatalf("usage: fleet defect KIND TARGET [key=value...] | fleet nodes STATE NODE...")
	}
	switch args[0] {
	case "defect":
		if len(args) < 3 {
			ts.Fatalf("usage: fleet defect KIND TARGET [key=value...]")
		}
		d := fleet.Defect{Kind: args[1], Target: args[2]}
		for _, kv := range args[3:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "with":
				d.With = v
			case "serial":
				d.Serial = v
			case "gpu":
				d.GPU, _ = strconv.Atoi(v)
			case "slot":
				d.Slot, _ = strconv.Atoi(v)
			case "value":
				d.Value, _ = strconv.ParseFloat(v, 64)
			case "test":
				d.Test = strings.ReplaceAll(v, "_", " ")
			case "component":
				d.Component = v
			case "version":
				d.Version = v
			default:
				ts.Fatalf("fleet defect: unknown %s", k)
			}
		}
		err = c.AddDefect(ctx, d)
	case "nodes":
		_, err = c.SetNodes(ctx, sim.NodeRequest{State: fleet.State(args[1]), Nodes: args[2:]})
	default:
		ts.Fatalf("usage: fleet defect KIND TARGET [key=value...] | fleet nodes STATE NODE...")
	}
	if (err != nil) != neg {
		ts.Fatalf("fleet %s: %v", args[0], err)
	}
	if err != nil {
		ts.Logf("%v", err)
	}
}
