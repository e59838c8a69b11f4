package fwupdate

import (
	"context"
	"crypto/x509"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/firmware"
	"github.com/seamdc/seam/internal/fwimage"
	"github.com/seamdc/seam/internal/fwimage/fwimagetest"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
	"github.com/seamdc/seam/internal/sim/fleet"
	"github.com/seamdc/seam/internal/sim/fleet/fleettest"
)

func exampleFleet(t testing.TB) *fleet.Fleet { return fleettest.Example(t) }

const (
	user, pass = "admin", "seam-sim-bmc"
	node       = "gpu-a-r01-n03"
	bmcName    = "bmc-a-r01-n03"
	biosMember = "/redfish/v1/UpdateService/FirmwareInventory/ma-r01-compute-03-bios"
	bmcMember  = "/redfish/v1/UpdateService/FirmwareInventory/ma-r01-compute-03-bmc"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is one simulated BMC on loopback, seam's image server over TLS
// (the BMC trusts its certificate) with the images of the updates, and
// the site's time: a Lockstep clock that Apply runs under, so every
// simulated wait is exact and costs no wall time.
type world struct {
	t      testing.TB
	clk    *clock.Lockstep
	srv    *bmc.Server
	images *fwimage.Server
	roots  *x509.CertPool    // trusts the image server
	files  map[string]string // component → the image's file
	sums   map[string]string // component → bare hex sha256
	access bmchttp.Access
}

// versions are the images the world serves, by component.
var versionsTo = map[string]string{"bmc": "25.09-2", "bios": "1.5.0"}

func newWorld(t testing.TB, cfg bmc.Config) *world {
	t.Helper()
	clk := clock.NewLockstep(start, nil, 0, nil)
	t.Cleanup(clk.Close)
	im := fwimagetest.Serve(t, clk, 0, versionsTo)
	w := &world{t: t, clk: clk, images: im.Server, roots: im.Roots, files: im.Files, sums: im.Sums}
	roots := im.Roots

	f := exampleFleet(t)
	src := fleettest.TraySource(f, "ma/r01/compute-03", clk)
	cfg.Name, cfg.User, cfg.Password, cfg.ImageRootCAs = bmcName, user, pass, roots
	var err error
	w.srv, err = bmc.Serve(bmc.New(cfg, src), "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { w.srv.Close() })
	w.access = bmchttp.Access{User: user, Password: pass, Clock: clk, Timeout: 10 * time.Second}.WithDefaults()
	return w
}

// update is the plan's update of component, with a fresh grant; the
// baseline's targets are those of the example baseline, which the
// simulated BMC does not have (Apply resolves them by component).
func (w *world) update(component, apply, reset string) Update {
	w.t.Helper()
	uri, err := w.images.Grant("sha256:"+w.sums[component], bmcName)
	require.NoError(w.t, err)
	from := map[string]string{"bmc": "25.06-1", "bios": "1.4.2"}[component]
	u := FromPlan(firmware.Update{Component: component, From: from, To: versionsTo[component], SHA256: w.sums[component],
		Targets:   []string{"/redfish/v1/UpdateService/FirmwareInventory/" + map[string]string{"bmc": "BMC", "bios": "BIOS"}[component]},
		ApplyTime: apply, Reset: reset}, uri)
	u.ImageFile = w.files[component]
	return u
}

// options allow both controls, log in through bmchttp, and wait at
// most the defaults.
func (w *world) options() Options {
	client, closeIdle := w.access.Client(nil)
	w.t.Cleanup(closeIdle)
	return Options{
		Login: func(ctx context.Context) (*gofish.APIClient, error) {
			return w.access.Connect(ctx, client, bmcName, w.srv.URL())
		},
		Writable: func(string, string) error { return nil },
		URL:      w.srv.URL(),
	}
}

// run is one Apply under the site's clock: the results, the error,
// the events and how much site time it took.
type run struct {
	results []Result
	err     error
	events  []Event
	took    time.Duration
}

func (w *world) apply(updates []Update, opt Options) run {
	w.t.Helper()
	var r run
	done := make(chan struct{})
	t0 := w.clk.Now()
	w.clk.Go(func() {
		defer close(done)
		r.results, r.err = Apply(context.Background(), w.clk, nil, node, bmcName, updates, opt, func(e Event) { r.events = append(r.events, e) })
	})
	<-done
	r.took = w.clk.Now().Sub(t0)
	return r
}

// pass lets d of site time go by.
func (w *world) pass(d time.Duration) {
	done := make(chan struct{})
	w.clk.Go(func() {
		defer close(done)
		_ = w.clk.Sleep(context.Background(), d)
	})
	<-done
}

// steps are the events' component and step, a run of the same one
// told once.
func (r run) steps() []string {
	var out []string
	for _, e := range r.events {
		s := e.Component + " " + e.Step
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// said reports whether an event says what (a part of it).
func (r run) said(what string) bool {
	for _, e := range r.events {
		if strings.Contains(e.What, what) {
			return true
		}
	}
	return false
}

// tokenOf is a granted URL's token.
func tokenOf(u Update) string { _, tok, _ := strings.Cut(u.ImageURI, "/images/"); return tok }

// noSecret fails if a token shows in the run's error or events.
func noSecret(t *testing.T, r run, us ...Update) {
	t.Helper()
	for _, u := range us {
		tok := tokenOf(u)
		require.NotEmpty(t, tok)
		if r.err != nil {
			require.NotContains(t, r.err.Error(), tok, "the token stays out of errors")
		}
		for _, e := range r.events {
			require.NotContains(t, fmt.Sprint(e), tok, "the token stays out of events")
		}
	}
}
