package satcmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/gosnmp/gosnmp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/probe/probetest"
)

// TestProbeScripts runs `sat probe` on real bindings against in-process
// devices on loopback (testdata/probe/*.txtar). Commands:
//
//	sat ARGS...                    run sat (in process, with the script's environment)
//	devices start BINDING OUTDIR   start a device for each device of BINDING and write
//	                               OUTDIR/binding.cue with the ports they listen on
//	devices stop NAME              stop a device (it refuses connections)
//	devices set NAME POINT VALUE   set a point (canonical units)
func TestProbeScripts(t *testing.T) {
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/probe",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FIXTURES", fixtures)
			// script files refer to ../fixtures/profiles
			if err := os.Symlink(fixtures, filepath.Join(env.WorkDir, "fixtures")); err != nil {
				return err
			}
			devs := &devices{modbus: map[string]*probetest.Modbus{}, snmp: map[string]*probetest.Agent{}}
			env.Values["devices"] = devs
			env.Defer(devs.stopAll)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"sat":     cmdSat,
			"devices": cmdDevices,
		},
	})
}

// cmdSat runs sat in process; credentials come from the script's
// environment. It prints the exit code to stderr as "[exit N]".
func cmdSat(ts *testscript.TestScript, neg bool, args []string) {
	var code int
	if len(args) > 0 && args[0] == "probe" {
		code = runProbeEnv(args[1:], ts.Stdout(), ts.Stderr(), func(k string) (string, bool) {
			v := ts.Getenv(k)
			return v, v != ""
		})
	} else {
		code = Main(args, ts.Stdout(), ts.Stderr())
	}
	fmt.Fprintf(ts.Stderr(), "[exit %d]\n", code)
	if (code != 0) != neg {
		ts.Fatalf("sat exited %d", code)
	}
}

type devices struct {
	mu     sync.Mutex
	modbus map[string]*probetest.Modbus
	snmp   map[string]*probetest.Agent
}

func (d *devices) stopAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.modbus {
		s.Stop()
	}
	for _, a := range d.snmp {
		a.Stop()
	}
}

func cmdDevices(ts *testscript.TestScript, neg bool, args []string) {
	devs := ts.Value("devices").(*devices)
	if len(args) == 0 {
		ts.Fatalf("usage: devices start|stop|set ...")
	}
	switch {
	case args[0] == "start" && len(args) == 3:
		startDevices(ts, devs, ts.MkAbs(args[1]), ts.MkAbs(args[2]))
	case args[0] == "stop" && len(args) == 2:
		devs.mu.Lock()
		defer devs.mu.Unlock()
		if s, ok := devs.modbus[args[1]]; ok {
			s.Stop()
		} else if a, ok := devs.snmp[args[1]]; ok {
			a.Stop()
		} else {
			ts.Fatalf("no device %s", args[1])
		}
	case args[0] == "set" && len(args) == 4:
		v, err := strconv.ParseFloat(args[3], 64)
		ts.Check(err)
		devs.mu.Lock()
		defer devs.mu.Unlock()
		if s, ok := devs.modbus[args[1]]; ok {
			ts.Check(s.Set(args[2], v))
		} else if a, ok := devs.snmp[args[1]]; ok {
			ts.Check(a.Set(args[2], v))
		} else {
			ts.Fatalf("no device %s", args[1])
		}
	default:
		ts.Fatalf("usage: devices start BINDING OUTDIR | stop NAME | set NAME POINT VALUE")
	}
}

// startDevices serves every device of a binding on a free port, with
// the credentials the binding names (resolved from the script's
// environment), and writes the binding with the real addresses.
func startDevices(ts *testscript.TestScript, devs *devices, from, to string) {
	b, diags, err := binding.Load(from)
	ts.Check(err)
	if len(diags) > 0 {
		ts.Fatalf("%s: %v", from, diags)
	}
	lookup := func(k string) (string, bool) { v := ts.Getenv(k); return v, v != "" }
	devs.mu.Lock()
	defer devs.mu.Unlock()
	for _, dev := range b.Devices {
		switch dev.Protocol.Family() {
		case "modbus":
			s, err := probetest.NewModbus(dev.Profile, nil, true)
			ts.Check(err)
			devs.modbus[dev.Name] = s
			dev.Address = s.Addr
		default:
			community := ""
			var users []probetest.User
			if dev.V3 != nil {
				auth, err := dev.V3.AuthPass.Resolve(lookup)
				ts.Check(err)
				priv, err := dev.V3.PrivPass.Resolve(lookup)
				ts.Check(err)
				users = append(users, probetest.User{Name: dev.V3.User, Auth: gosnmp.SHA, AuthPass: auth, Priv: gosnmp.AES, PrivPass: priv})
			} else {
				c, err := dev.Community.Resolve(lookup)
				ts.Check(err)
				community = c
			}
			a, err := probetest.NewAgent(dev.Profile, nil, community, users...)
			ts.Check(err)
			devs.snmp[dev.Name] = a
			dev.Address = a.Addr
		}
	}
	ts.Check(os.MkdirAll(to, 0o755))
	ts.Check(os.WriteFile(filepath.Join(to, "binding.cue"), binding.Marshal(b, "site"), 0o644))
}
