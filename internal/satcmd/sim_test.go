package satcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/seamdc/seam/internal/sim"
)

// TestSimScripts runs `sat sim` end to end (testdata/sim/*.txtar) and
// reads the simulated site with `sat probe`, both in process. Commands:
//
//	sat ARGS...                       run sat (foreground)
//	simulate start OUTDIR ARGS...     start `sat sim ARGS... --out OUTDIR` in the
//	                                  background; returns once the binding is written
//	simulate stop                     interrupt it and check it exits 0
//	simwait D                         wait until D of sim time has passed
//	fault inject|clear KIND TARGET    drive its control interface
//	sleep DURATION                    wait (wall time)
func TestSimScripts(t *testing.T) {
	fixtures, err := filepath.Abs("../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/sim",
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
			"fault":    simCmdFault,
			"plan":     cmdPlan,
			"simwait":  simCmdWait,
		},
	})
}

func lookup(ts *testscript.TestScript) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v := ts.Getenv(k)
		return v, v != ""
	}
}

func simCmdSat(ts *testscript.TestScript, neg bool, args []string) {
	var code int
	switch {
	case len(args) > 0 && args[0] == "probe":
		code = runProbeEnv(args[1:], ts.Stdout(), ts.Stderr(), lookup(ts))
	case len(args) > 0 && args[0] == "sim":
		code = runSimCtx(context.Background(), args[1:], ts.Stdout(), ts.Stderr(), lookup(ts))
	default:
		code = Main(args, ts.Stdout(), ts.Stderr())
	}
	fmt.Fprintf(ts.Stderr(), "[exit %d]\n", code)
	if (code != 0) != neg {
		ts.Fatalf("sat exited %d", code)
	}
}

// background is a `sat sim` running in the script's process.
type background struct {
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan int
	out    string
	stderr bytes.Buffer
}

// said is what sat sim wrote to its standard error so far.
func (b *background) said() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stderr.String()
}

func (b *background) stop() {
	b.mu.Lock()
	cancel, done := b.cancel, b.done
	b.cancel = nil
	b.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

func simCmdSimulate(ts *testscript.TestScript, neg bool, args []string) {
	bg := ts.Value("sim").(*background)
	if len(args) == 1 && args[0] == "stop" {
		bg.mu.Lock()
		cancel, done := bg.cancel, bg.done
		bg.cancel = nil
		bg.mu.Unlock()
		if cancel == nil {
			ts.Fatalf("no simulation running")
		}
		cancel()
		if code := <-done; code != 0 {
			ts.Fatalf("sat sim exited %d:\n%s", code, bg.stderr.String())
		}
		return
	}
	if len(args) < 2 || args[0] != "start" {
		ts.Fatalf("usage: simulate start OUTDIR ARGS... | simulate stop")
	}
	out := ts.MkAbs(args[1])
	ctx, cancel := context.WithCancel(context.Background())
	bg.mu.Lock()
	bg.cancel, bg.done, bg.out = cancel, make(chan int, 1), out
	bg.stderr.Reset()
	bg.mu.Unlock()
	simArgs := append(append([]string{}, args[2:]...), "--out", out)
	// sat sim prints its first line once its binding is written
	serving := &announcer{ready: make(chan struct{})}
	go func() {
		bg.done <- runSimCtx(ctx, simArgs, serving, &syncWriter{b: bg}, lookup(ts))
	}()
	// a bound, not a measure: on a busy machine loading the contracts and
	// the inventory and opening 1,800 ports takes a while
	const within = 2 * time.Minute
	timeout := time.NewTimer(within)
	defer timeout.Stop()
	select {
	case <-serving.ready:
		if _, err := os.Stat(filepath.Join(out, "binding.cue")); err != nil {
			ts.Fatalf("sat sim says it serves, but wrote no binding: %v", err)
		}
	case code := <-bg.done:
		bg.mu.Lock()
		bg.cancel = nil // nothing left to stop
		bg.mu.Unlock()
		ts.Fatalf("sat sim exited %d before writing its binding:\n%s", code, bg.said())
	case <-timeout.C:
		ts.Fatalf("sat sim wrote no binding within %s:\n%s", within, bg.said())
	}
}

// announcer is a background sat sim's standard output: ready is closed
// at its first write.
type announcer struct {
	once  sync.Once
	ready chan struct{}
}

func (f *announcer) Write(p []byte) (int, error) {
	f.once.Do(func() { close(f.ready) })
	return len(p), nil
}

type syncWriter struct{ b *background }

func (w *syncWriter) Write(p []byte) (int, error) {
	w.b.mu.Lock()
	defer w.b.mu.Unlock()
	return w.b.stderr.Write(p)
}

func simCmdFault(ts *testscript.TestScript, neg bool, args []string) {
	bg := ts.Value("sim").(*background)
	if len(args) != 3 {
		ts.Fatalf("usage: fault inject|clear KIND TARGET")
	}
	url, err := os.ReadFile(filepath.Join(bg.out, "control.url"))
	ts.Check(err)
	c := &sim.Client{URL: strings.TrimSpace(string(url))}
	ctx := context.Background()
	switch args[0] {
	case "inject":
		err = c.Inject(ctx, sim.Fault{Kind: args[1], Target: args[2]})
	case "clear":
		err = c.Clear(ctx, args[1], args[2])
	default:
		ts.Fatalf("usage: fault inject|clear KIND TARGET")
	}
	if (err != nil) != neg {
		ts.Fatalf("fault %s: %v", args[0], err)
	}
	if err != nil {
		fmt.Fprintln(ts.Stderr(), err)
	}
}

// simCmdWait waits until the running simulator's time has moved on by D
// (its status over the control interface): a wait in site time, however
// busy the machine, bounded by a minute of wall time.
func simCmdWait(ts *testscript.TestScript, neg bool, args []string) {
	bg := ts.Value("sim").(*background)
	if len(args) != 1 {
		ts.Fatalf("usage: simwait DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	url, err := os.ReadFile(filepath.Join(bg.out, "control.url"))
	ts.Check(err)
	c := &sim.Client{URL: strings.TrimSpace(string(url))}
	const within = time.Minute
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	st, err := c.Status(ctx)
	ts.Check(err)
	until := st.SimSeconds + d.Seconds()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for st.SimSeconds < until {
		select {
		case <-ctx.Done():
			ts.Fatalf("the simulator's time did not move on by %s within %s of wall time (it stands at %.3f s, want %.3f s)", d, within, st.SimSeconds, until)
		case <-tick.C:
		}
		now, err := c.Status(ctx)
		if err != nil && ctx.Err() == nil {
			ts.Fatalf("simwait: %v", err)
		}
		if err == nil {
			st = now
		}
	}
}
