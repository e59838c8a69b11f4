package fwrollout

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/fwimage"
	"github.com/seamdc/seam/internal/fwimage/fwimagetest"
	"github.com/seamdc/seam/internal/fwupdate"
	"github.com/seamdc/seam/internal/hold"
	"github.com/seamdc/seam/internal/ledger"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
	"github.com/seamdc/seam/internal/scheduler/schedtest"
	"github.com/seamdc/seam/internal/sim/fleet/fleettest"
)

const user, pass = "admin", "seam-sim-bmc"

var (
	start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to    = map[string]string{"bmc": "25.09-2", "bios": "1.5.0"}
	from  = map[string]string{"bmc": "25.06-1", "bios": "1.4.2"}
)

// site is simulated BMCs of the example's trays on loopback, seam's
// image server over TLS, a ledger over a fake scheduler, and the
// site's time: a Lockstep clock the rollout runs under.
type site struct {
	t      testing.TB
	clk    *clock.Lockstep
	images *fwimage.Server
	sums   map[string]string // component → bare hex sha256
	files  map[string]string // bare hex sha256 → the image's file
	bmcs   map[string]*bmc.BMC
	urls   map[string]string
	access bmchttp.Access
	client *http.Client
	book   *hold.Book
	sched  *schedtest.Fake
	plan   *firmware.Plan
	key    ssh.Signer
}

// newSite serves a BMC for each of the trays, and a plan of one stage
// per rack of them (racks in order), each tray's BMC then BIOS.
func newSite(t testing.TB, trays []string, cfg bmc.Config) *site {
	t.Helper()
	clk := clock.NewLockstep(start, nil, 0, nil)
	t.Cleanup(clk.Close)
	im := fwimagetest.Serve(t, clk, 24*time.Hour, to)
	roots := im.Roots
	s := &site{t: t, clk: clk, images: im.Server, sums: im.Sums, files: map[string]string{}, bmcs: map[string]*bmc.BMC{}, urls: map[string]string{}}
	for comp, sum := range im.Sums {
		s.files[sum] = im.Files[comp]
	}

	f := fleettest.Example(t)
	var names []string
	for _, key := range trays {
		c := cfg
		c.Name, c.User, c.Password, c.ImageRootCAs = "bmc-"+key, user, pass, roots
		b := bmc.New(c, fleettest.TraySource(f, key, clk))
		srv, err := bmc.Serve(b, "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		s.bmcs[key], s.urls[key] = b, srv.URL()
		names = append(names, nodeName(key))
	}
	s.access = bmchttp.Access{User: user, Password: pass, Clock: clk, Timeout: 10 * time.Second}.WithDefaults()
	var closeIdle func()
	s.client, closeIdle = s.access.Client(nil)
	t.Cleanup(closeIdle)
	b := hold.NewBook()
	s.book = &b
	s.sched = schedtest.New(names)
	_, priv, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	s.key, err = ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	s.plan = s.makePlan(trays)
	return s
}

func nodeName(tray string) string {
	return "node-" + filepath.Base(filepath.Dir(tray)) + "-" + filepath.Base(tray)
}

// makePlan is one stage per rack, each tray's BMC then its BIOS.
func (s *site) makePlan(trays []string) *firmware.Plan {
	p := &firmware.Plan{Format: firmware.Format, Site: "test", Rollout: "fw-test", Baseline: firmware.Input{Digest: "sha256:00"}}
	byRack := map[string]*firmware.Stage{}
	for _, key := range trays {
		rack := filepath.Dir(key)
		st := byRack[rack]
		if st == nil {
			st = &firmware.Stage{Number: len(p.Stages) + 1, Racks: []string{rack}}
			st.Holds = []firmware.PlannedHold{{Owner: hold.Of(hold.Firmware, fmt.Sprintf("fw-test-s%02d", st.Number)), Why: "firmware rollout"}}
			byRack[rack] = st
			p.Stages = append(p.Stages, st)
		}
		st.Nodes = append(st.Nodes, firmware.StageNode{Key: key, Name: nodeName(key), Action: firmware.NodeUpdate})
		st.Holds[0].Nodes = append(st.Holds[0].Nodes, key)
		tp := &firmware.TrayPlan{Key: key, Kind: "compute", Node: key, Baseline: "GB300 compute tray"}
		tp.Updates = []firmware.Update{
			{Component: "bmc", From: from["bmc"], To: to["bmc"], SHA256: s.sums["bmc"], ApplyTime: firmware.Immediate, Reset: firmware.ResetManager},
			{Component: "bios", From: from["bios"], To: to["bios"], SHA256: s.sums["bios"], ApplyTime: firmware.OnReset, Reset: firmware.ResetSystem},
		}
		st.Trays = append(st.Trays, tp)
	}
	return p
}

// config is a rollout's on this site, journaled in j.
func (s *site) config(j Journal, st *State) Config {
	return Config{
		Plan: s.plan, PlanDigest: "sha256:test", Journal: j, State: st, Clock: s.clk, By: "test",
		Ledger: &ledger.Ledger{Backend: hold.NewMemory(s.book, nil, nil), Sched: s.sched, Clock: s.clk},
		Target: func(tray string) (Target, error) {
			u, ok := s.urls[tray]
			if !ok {
				return Target{}, fmt.Errorf("no BMC for %s", tray)
			}
			return Target{BMC: "bmc-" + tray, URL: u, Login: func(ctx context.Context) (*gofish.APIClient, error) {
				return s.access.Connect(ctx, s.client, "bmc-"+tray, u)
			}}, nil
		},
		Grant:  func(tray, b string, u firmware.Update) (string, error) { return s.images.Grant("sha256:"+u.SHA256, b) },
		Update: fwupdate.Options{Writable: func(string, string) error { return nil }},
	}
}

// run is one rollout under the site's clock.
func (s *site) run(cfg Config, ctx context.Context) (*Result, error) {
	var res *Result
	var err error
	done := make(chan struct{})
	s.clk.Go(func() {
		defer close(done)
		res, err = Run(ctx, cfg)
	})
	<-done
	return res, err
}

// bundle starts a signed journal in dir.
func (s *site) bundle(dir string) *evidence.Bundle {
	b, err := evidence.Create(dir, s.clk, evidence.Options{Signer: evidence.SSHSigner(s.key), By: "test"})
	require.NoError(s.t, err)
	return b
}

// bundleJournal is an evidence bundle as the rollout's journal.
type bundleJournal struct{ b *evidence.Bundle }

func (j bundleJournal) Append(kind string, data any) error {
	_, err := j.b.Append(kind, "", data)
	return err
}
func (j bundleJournal) Seal() error { return j.b.Seal() }

// dying is a journal that dies at its n-th append, as a killed process
// does: that record and everything after are lost, and the rollout's
// context ends.
type dying struct {
	bundleJournal
	mu     sync.Mutex
	n      int
	cancel context.CancelFunc
	dead   bool
}

var errKilled = errors.New("killed")

func (d *dying) Append(kind string, data any) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.n--; d.n < 0 || d.dead {
		d.dead = true
		d.cancel()
		return errKilled
	}
	return d.bundleJournal.Append(kind, data)
}

func (d *dying) Seal() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return errKilled
	}
	return d.bundleJournal.Seal()
}

// updates counts a tray's updates by component (its members are
// named tray-component).
func (s *site) updates(tray string) map[string]int {
	out := map[string]int{}
	for m, n := range s.bmcs[tray].Updates() {
		out[m[strings.LastIndexByte(m, '-')+1:]] += n
	}
	return out
}
