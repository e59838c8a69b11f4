package drain_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
	"github.com/seamdc/seam/internal/sign"
)

const example = "../../contracts/examples/threemodule"

var (
	indexOnce sync.Once
	index     *alarm.Index
)

func exampleIndex(t testing.TB) *alarm.Index {
	indexOnce.Do(func() {
		c, _, err := contract.Load(example)
		require.NoError(t, err)
		_, err = c.ReadInventory(nil)
		require.NoError(t, err)
		g, _ := c.Graph()
		index = alarm.NewIndex(g)
	})
	return index
}

var t0 = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// env is a controller on the example site with a fake scheduler, a fake
// clock, a state file, an in-memory journal and a signing person.
type env struct {
	t       *testing.T
	clk     *clock.Fake
	ix      *alarm.Index
	stream  *alarm.Stream
	sched   *schedtest.Fake
	ctl     *drain.Controller
	journal *drain.Memory
	store   *drain.Store
	cfg     drain.Config
	out     bytes.Buffer
	alive   bool // the alarm path
	sil     *fakeSilences

	keys     map[string]ssh.Signer
	verifier drain.Verifier
}

type fakeSilences struct {
	match *alarm.Silence
	err   error
}

func (f *fakeSilences) Matching(context.Context, alarm.Type, alarm.Domain) (*alarm.Silence, error) {
	return f.match, f.err
}

func newEnv(t *testing.T, mod func(*drain.Config)) *env {
	ix := exampleIndex(t)
	e := &env{t: t, clk: clock.NewFake(t0), ix: ix, stream: alarm.NewStream(), sched: schedtest.New(ix.Nodes(alarm.Domain{Kind: alarm.Site, Value: "threemodule"})),
		journal: &drain.Memory{}, store: &drain.Store{Path: filepath.Join(t.TempDir(), "state.json")}, alive: true, sil: &fakeSilences{},
		keys: map[string]ssh.Signer{}}
	e.cfg = drain.Config{ClearFor: time.Minute, Checkpoint: drain.Checkpoint{Enabled: true}, AlarmPath: func() bool { return e.alive }}
	if mod != nil {
		mod(&e.cfg)
	}
	var lines []string
	for _, who := range []string{"alice", "bob"} {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		require.NoError(t, err)
		s, err := ssh.NewSignerFromKey(priv)
		require.NoError(t, err)
		e.keys[who] = s
		if who == "alice" {
			lines = append(lines, fmt.Sprintf(`alice namespaces="seam-facilityd" %s`, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(s.PublicKey())))))
		}
	}
	as, err := sign.ParseAllowedSigners("allowed_signers", []byte(strings.Join(lines, "\n")+"\n"))
	require.NoError(t, err)
	e.verifier = drain.Verifier{Allowed: as, Site: "threemodule"}
	e.start(nil)
	return e
}

// start builds the controller (again: a restart) from the state file.
func (e *env) start(st *drain.State) {
	if st == nil {
		var err error
		st, err = e.store.Load("threemodule")
		require.NoError(e.t, err)
	}
	e.ctl = drain.New(e.cfg, drain.Deps{Index: e.ix, Scheduler: e.sched, Stream: e.stream, Journal: e.journal, Store: e.store, State: st, Clock: e.clk,
		Silences: e.sil, Raise: e.observe, Out: &e.out})
}

func (e *env) observe(o alarm.Observation) {
	e.ctl.Handle(context.Background(), e.stream.Observe(o))
}

func dom(s string) alarm.Domain {
	d, err := alarm.ParseDomain(s)
	if err != nil {
		panic(err)
	}
	return d
}

func (e *env) alarm(t alarm.Type, d string, active bool, src string) {
	e.observe(alarm.Observation{Type: t, Domain: dom(d), Active: active, Kind: alarm.FromDevice, Source: src, At: e.clk.Now()})
}

func (e *env) raise(t alarm.Type, d string) { e.alarm(t, d, true, "dev/"+string(t)) }
func (e *env) clear(t alarm.Type, d string) { e.alarm(t, d, false, "dev/"+string(t)) }

// request signs r as who and takes it.
func (e *env) request(who string, r drain.Request) (drain.Result, error) {
	e.t.Helper()
	s, err := drain.Sign(r, e.keys[who])
	require.NoError(e.t, err)
	a, err := e.verifier.Verify(s, e.clk.Now())
	if err != nil {
		return drain.Result{}, err
	}
	return e.ctl.Take(context.Background(), a)
}

func (e *env) release(who string, owner drain.Owner) (drain.Result, error) {
	r := drain.NewRequest("threemodule", drain.ActRelease, who, e.clk.Now())
	r.Owner, r.Why = owner, "checked on site"
	return e.request(who, r)
}

func refused(t *testing.T, err error, want string) {
	t.Helper()
	var re *drain.RefusedError
	require.True(t, errors.As(err, &re), "want a refusal, got %v", err)
	require.Contains(t, err.Error(), want)
}

var (
	l2Owner = drain.FacilityOwner(alarm.CoolingRedundancyLost, dom("cooling_loop=l2"))
	mbNodes = func() []string {
		var out []string
		for r := 1; r <= 16; r++ {
			for n := 1; n <= 18; n++ {
				out = append(out, fmt.Sprintf("gpu-b-r%02d-n%02d", r, n))
			}
		}
		return out
	}()
)

func clockAt(t time.Time) *clock.Fake { return clock.NewFake(t) }
