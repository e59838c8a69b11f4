package satcmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/sim"
	"github.com/seamdc/seam/internal/sim/fleet"
)

// TestCapScripts runs `sat cap` end to end against `sat sim` in process
// (testdata/cap/*.txtar): caps written to the simulated fleet's BMCs
// lower the nodes' draw and the floor PDU's readings (sat probe), are
// read back by Debian's redfishtool, drift on a BMC reset. Commands,
// with those of TestDiscoverScripts:
//
//	capbmcs writable|readonly     write the served BMCs as the binding's bmcs.cue, PowerLimit declared writable or not
//	capdefect add|clear KIND BMC  put a power cap BMC defect (sim.CapDefects) in force, or end it
func TestCapScripts(t *testing.T) {
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/cap",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			env.Setenv("EXAMPLE", example)
			bg := &background{}
			env.Values["sim"] = bg
			env.Defer(bg.stop)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sat":       simCmdSat,
			"simulate":  simCmdSimulate,
			"simwait":   simCmdWait,
			"fault":     simCmdFault,
			"fleet":     cmdFleet,
			"capbmcs":   cmdCapBMCs,
			"capdefect": cmdCapDefect,
		},
	})
}

// cmdCapBMCs declares the power limit writable in the bmcs.cue sat sim
// wrote (as it writes it), or not (the one edit a test makes, to see a
// refusal).
func cmdCapBMCs(ts *testscript.TestScript, neg bool, args []string) {
	bg := ts.Value("sim").(*background)
	if len(args) != 1 || (args[0] != "writable" && args[0] != "readonly") {
		ts.Fatalf("usage: capbmcs writable|readonly")
	}
	b, diags, err := binding.LoadBMCs(bg.out)
	ts.Check(err)
	if len(diags) > 0 || b == nil {
		ts.Fatalf("sat sim's bmcs.cue: %v", diags)
	}
	b.WritableControls = nil
	if args[0] == "writable" {
		b.WritableControls = []string{binding.ControlPowerLimit}
	}
	ts.Check(os.WriteFile(filepath.Join(bg.out, "bmcs.cue"), binding.MarshalBMCs(b, "binding"), 0o644))
}

func cmdCapDefect(ts *testscript.TestScript, neg bool, args []string) {
	bg := ts.Value("sim").(*background)
	if len(args) != 3 || (args[0] != "add" && args[0] != "clear") {
		ts.Fatalf("usage: capdefect add|clear KIND BMC")
	}
	url, err := os.ReadFile(filepath.Join(bg.out, "control.url"))
	ts.Check(err)
	c := &sim.Client{URL: strings.TrimSpace(string(url))}
	if args[0] == "add" {
		err = c.AddDefect(context.Background(), fleet.Defect{Kind: args[1], Target: args[2]})
	} else {
		err = c.ClearDefect(context.Background(), args[1], args[2])
	}
	if (err != nil) != neg {
		ts.Fatalf("capdefect %s: %v", args[0], err)
	}
}
