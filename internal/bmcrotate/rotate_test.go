package bmcrotate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bmcrotate"
	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish/bmc"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// source is the least a BMC needs to serve its AccountService: an empty
// graph, no readings, a clock tests move.
type source struct {
	mu  sync.Mutex
	now time.Time
}

func (s *source) Version() uint64 { return 1 }
func (s *source) Graph() (*inventory.Graph, error) {
	return inventory.NewGraph(&inventory.Site{Name: "t"}, 0), nil
}
func (s *source) Live() bmc.Live                       { return bmc.Live{} }
func (s *source) SetPowerLimit(*float64, string) error { return nil }
func (s *source) Reset(string) error                   { return nil }
func (s *source) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

const user, pass = "admin", "Initial-secret-1"

// site is n BMCs served on loopback and their secrets file: bmc-0,
// bmc-1, … with standby accounts on the even ones when twoAccounts.
type site struct {
	bmcs    []*bmc.Server
	targets []bmcrotate.Target
	file    *bmcsecret.File
	log     bytes.Buffer
}

func newSite(t testing.TB, n int, twoAccounts bool, configure ...func(*bmc.Config)) *site {
	t.Helper()
	s := &site{}
	f := &bmcsecret.File{Path: filepath.Join(t.TempDir(), "bmc-secrets.json"), Mode: 0o600, BMCs: map[string]bmcsecret.Entry{}}
	src := &source{now: time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)}
	for i := range n {
		name := fmt.Sprintf("bmc-%d", i)
		cfg := bmc.Config{Name: name, User: user, Password: pass}
		for _, c := range configure {
			c(&cfg)
		}
		srv, err := bmc.Serve(bmc.New(cfg, src), "127.0.0.1:0")
		require.NoError(t, err)
		t.Cleanup(func() { srv.Close() })
		s.bmcs = append(s.bmcs, srv)
		s.targets = append(s.targets, bmcrotate.Target{Name: name, URL: srv.URL()})
		e := bmcsecret.Entry{User: user, Active: pass}
		if twoAccounts && i%2 == 0 {
			e.Standby = user + "-b"
		}
		f.BMCs[name] = e
	}
	require.NoError(t, f.Save())
	s.file = f
	return s
}

func (s *site) options(dry *dryrun.Recorder) bmcrotate.Options {
	store := bmcsecret.NewStore(s.file)
	return bmcrotate.Options{
		Access:   bmchttp.Access{Secrets: s.file, Log: slog.New(slog.NewTextHandler(&s.log, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		Store:    store,
		Writable: (&binding.BMCs{WritableControls: []string{binding.ControlAccounts}}).Writable,
		Dry:      dry,
		By:       "alice",
		Settle:   10 * time.Second,
	}
}

// reachable asserts every BMC accepts a secret the file on disk holds,
// and that none was locked out.
func (s *site) reachable(t *testing.T) *bmcsecret.File {
	t.Helper()
	f, err := bmcsecret.Load(s.file.Path)
	require.NoError(t, err)
	for i, srv := range s.bmcs {
		e := f.BMCs[s.targets[i].Name]
		ok := srv.BMC.PasswordIs(e.User, e.Active) || e.Pending != "" && srv.BMC.PasswordIs(e.User, e.Pending)
		assert.True(t, ok, "BMC %s accepts none of the file's secrets for %s", s.targets[i].Name, e.User)
		assert.Zero(t, srv.BMC.Stats().Lockouts, "BMC %s locked an account out", s.targets[i].Name)
	}
	return f
}

func TestRotateBothSchemes(t *testing.T) {
	s := newSite(t, 4, true)
	opt := s.options(nil)
	results := bmcrotate.Run(context.Background(), s.targets, opt)
	f := s.reachable(t)
	for i, r := range results {
		require.Equal(t, bmcrotate.Rotated, r.Outcome, "%+v", r)
		e := f.BMCs[r.BMC]
		assert.NotEqual(t, pass, e.Active, "a new secret")
		assert.Empty(t, e.Pending)
		assert.False(t, e.Rotated.IsZero())
		srv := s.bmcs[i].BMC
		if i%2 == 0 {
			assert.Equal(t, bmcrotate.TwoAccounts, r.Scheme)
			assert.Equal(t, user+"-b", r.Account)
			assert.Equal(t, user, r.Previous)
			assert.Equal(t, user+"-b", e.User)
			assert.Equal(t, user, e.Standby, "the old account is the standby now")
			assert.True(t, srv.PasswordIs(user+"-b", e.Active))
			assert.False(t, srv.PasswordIs(user, pass), "the old account's secret is invalidated")
			enabled, _, ok := srv.Account(user)
			assert.True(t, ok)
			assert.False(t, enabled, "the old account is disabled")
		} else {
			assert.Equal(t, bmcrotate.OneAccount, r.Scheme)
			assert.True(t, srv.PasswordIs(user, e.Active))
		}
		assert.Zero(t, srv.Stats().Sessions, "sessions closed")
		assert.Zero(t, srv.Stats().FailedLogins, "no failed login")
	}

	// a second rotation swaps the two accounts back
	results = bmcrotate.Run(context.Background(), s.targets, s.options(nil))
	f = s.reachable(t)
	assert.Equal(t, bmcrotate.Rotated, results[0].Outcome, "%+v", results[0])
	assert.Equal(t, user, f.BMCs["bmc-0"].User)
	assert.Equal(t, user+"-b", f.BMCs["bmc-0"].Standby)
	s.noSecretIn(t, f, results)
}

// noSecretIn asserts that no secret the file has held appears in the
// results or the log.
func (s *site) noSecretIn(t *testing.T, f *bmcsecret.File, results []bmcrotate.Result) {
	t.Helper()
	out, err := json.Marshal(results)
	require.NoError(t, err)
	all := string(out) + s.log.String() + fmt.Sprint(results)
	for name, e := range f.BMCs {
		for _, sec := range []string{e.Active, e.Pending, pass} {
			if sec != "" {
				assert.NotContains(t, all, sec, "BMC %s's secret", name)
			}
		}
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	s := newSite(t, 2, true)
	before, err := os.ReadFile(s.file.Path)
	require.NoError(t, err)
	var out bytes.Buffer
	dry := dryrun.New(&out, nil)
	results := bmcrotate.Run(context.Background(), s.targets, s.options(dry))
	for _, r := range results {
		assert.Equal(t, bmcrotate.Would, r.Outcome, "%+v", r)
	}
	after, err := os.ReadFile(s.file.Path)
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after), "the secrets file is untouched")
	for _, srv := range s.bmcs {
		assert.Zero(t, srv.BMC.Stats().Writes, "no write reached BMC %s", srv.BMC.Name())
		assert.True(t, srv.BMC.PasswordIs(user, pass))
	}
	text := out.String()
	assert.Contains(t, text, `would POST `+s.targets[0].URL+`/redfish/v1/AccountService/Accounts {"Enabled":true,"Password":"(new secret)","RoleId":"Administrator","UserName":"admin-b"}`)
	assert.Contains(t, text, `would PATCH `+s.targets[1].URL+`/redfish/v1/AccountService/Accounts/1 {"Password":"(new secret)"}`)
	assert.Contains(t, text, "would write "+s.file.Path+": BMC bmc-1: a pending secret")
	assert.Contains(t, text, "would log in to BMC bmc-1 as admin with the new secret")
	assert.NotContains(t, text, pass)
}

func TestRotateFaults(t *testing.T) {
	for _, tc := range []struct {
		name, fault string
		two         bool
		want, step  string
		msg         string
	}{
		{"one account, password refused", bmc.FaultPasswordRefused, false, bmcrotate.Failed, "change the password", "used recently"},
		{"two accounts, password refused", bmc.FaultPasswordRefused, true, bmcrotate.Failed, "create the standby account", "used recently"},
		{"one account, reset during the change", bmc.FaultResetOnPassword, false, bmcrotate.Rotated, "", ""},
		{"two accounts, reset during the change", bmc.FaultResetOnPassword, true, bmcrotate.Rotated, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSite(t, 1, tc.two)
			srv := s.bmcs[0].BMC
			require.NoError(t, srv.SetFault(tc.fault, true))
			r := bmcrotate.Run(context.Background(), s.targets, s.options(nil))[0]
			assert.Equal(t, tc.want, r.Outcome, "%+v", r)
			assert.Equal(t, tc.step, r.Step)
			if tc.msg != "" {
				assert.Contains(t, r.Error, tc.msg, "the BMC's message")
				assert.Contains(t, r.Err.Error(), "BMC bmc-0: "+tc.step)
			}
			f := s.reachable(t)
			if tc.want == bmcrotate.Failed {
				assert.Empty(t, f.BMCs["bmc-0"].Pending, "a refused change leaves no pending secret")
				assert.Equal(t, pass, f.BMCs["bmc-0"].Active)
			}
			s.noSecretIn(t, f, []bmcrotate.Result{r})
		})
	}
}

// A run stopped after the BMC changed but before the file said so: the
// next finishes it without a second change; one stopped before the
// change sends the same pending secret again.
func TestPendingLeftByAnInterruptedRun(t *testing.T) {
	s := newSite(t, 2, false)
	e := s.file.BMCs["bmc-0"]
	e.Pending = "Pending-secret-22"
	s.file.BMCs["bmc-0"] = e
	e1 := s.file.BMCs["bmc-1"]
	e1.Pending = "Pending-secret-33"
	s.file.BMCs["bmc-1"] = e1
	require.NoError(t, s.file.Save())
	setPassword(t, s.bmcs[0], user, pass, "Pending-secret-22") // bmc-0 took it; bmc-1 did not

	results := bmcrotate.Run(context.Background(), s.targets, s.options(nil))
	f := s.reachable(t)
	assert.Equal(t, bmcrotate.Finished, results[0].Outcome, "%+v", results[0])
	assert.Equal(t, "Pending-secret-22", f.BMCs["bmc-0"].Active)
	assert.Equal(t, bmcrotate.Rotated, results[1].Outcome, "%+v", results[1])
	assert.Equal(t, "Pending-secret-33", f.BMCs["bmc-1"].Active, "the pending secret is sent again")
	assert.LessOrEqual(t, s.bmcs[0].BMC.Stats().FailedLogins, 1, "one failed login at most")
	assert.Zero(t, s.bmcs[1].BMC.Stats().FailedLogins)
	s.noSecretIn(t, f, results)
}

// setPassword changes an account's password on a BMC as another tool
// would, with basic authentication.
func setPassword(t *testing.T, srv *bmc.Server, user, old, secret string) {
	t.Helper()
	req, err := newPatch(srv.URL()+"/redfish/v1/AccountService/Accounts/1", `{"Password": "`+secret+`"}`)
	require.NoError(t, err)
	req.SetBasicAuth(user, old)
	resp, err := httpClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
}

func TestSkipsWhatTheRotationUnderWayRotated(t *testing.T) {
	s := newSite(t, 2, false)
	since := time.Now().UTC().Add(-time.Minute)
	e := s.file.BMCs["bmc-0"]
	e.Rotated = since.Add(time.Second)
	s.file.BMCs["bmc-0"] = e
	require.NoError(t, s.file.Save())
	opt := s.options(nil)
	opt.Since = since
	results := bmcrotate.Run(context.Background(), s.targets, opt)
	assert.Equal(t, bmcrotate.Skipped, results[0].Outcome)
	assert.Equal(t, bmcrotate.Rotated, results[1].Outcome)
	assert.True(t, s.bmcs[0].BMC.PasswordIs(user, pass), "a skipped BMC is not touched")
	assert.Zero(t, s.bmcs[0].BMC.Stats().Requests)
}

// A BMC that will not make the standby account is rotated with its
// one account, and the result says why.
func TestNoRoomForTheStandbyAccount(t *testing.T) {
	s := newSite(t, 1, true, func(c *bmc.Config) { c.MaxAccounts = 1 })
	r := bmcrotate.Run(context.Background(), s.targets, s.options(nil))[0]
	assert.Equal(t, bmcrotate.Rotated, r.Outcome, "%+v", r)
	assert.Equal(t, bmcrotate.OneAccount, r.Scheme)
	assert.Contains(t, r.Note, "would not create the standby account admin-b")
	f := s.reachable(t)
	assert.Equal(t, user, f.BMCs["bmc-0"].User)
	assert.True(t, s.bmcs[0].BMC.PasswordIs(user, f.BMCs["bmc-0"].Active))
}

// The BMC's policy is read and met: a BMC that wants 30 to 40
// characters of all four classes takes the new secret.
func TestMeetsTheBMCsPolicy(t *testing.T) {
	s := newSite(t, 2, true, func(c *bmc.Config) {
		c.Policy = bmc.PasswordPolicy{MinPasswordLength: 30, MaxPasswordLength: 40, CharacterClasses: 4}
	})
	for _, r := range bmcrotate.Run(context.Background(), s.targets, s.options(nil)) {
		assert.Equal(t, bmcrotate.Rotated, r.Outcome, "%+v", r)
	}
	f := s.reachable(t)
	assert.Len(t, f.BMCs["bmc-0"].Active, 30)
	assert.Len(t, f.BMCs["bmc-1"].Active, 30)
}

// A BMC whose password was changed behind the site's back accepts
// neither secret: credential_lost, named, with one failed login.
func TestCredentialLost(t *testing.T) {
	s := newSite(t, 1, false)
	setPassword(t, s.bmcs[0], user, pass, "Changed-elsewhere-9")
	r := bmcrotate.Run(context.Background(), s.targets, s.options(nil))[0]
	assert.Equal(t, bmcrotate.Failed, r.Outcome)
	assert.Equal(t, "log in", r.Step)
	assert.Contains(t, r.Error, "credential_lost: BMC bmc-0 refused every secret the site holds for it (admin (active secret))")
	assert.Equal(t, 1, s.bmcs[0].BMC.Stats().FailedLogins)
}

func TestRefusedWithoutAccountsWritable(t *testing.T) {
	s := newSite(t, 1, false)
	opt := s.options(nil)
	opt.Writable = (&binding.BMCs{WritableControls: []string{binding.ControlPowerLimit}}).Writable
	r := bmcrotate.Run(context.Background(), s.targets, opt)[0]
	assert.Equal(t, bmcrotate.Failed, r.Outcome)
	assert.Contains(t, r.Error, binding.RuleBMCWritable)
	assert.Contains(t, r.Error, `writable: ["Accounts"]`)
	assert.Zero(t, s.bmcs[0].BMC.Stats().Requests, "nothing is sent to it")
}

func TestNewSecretMeetsThePolicy(t *testing.T) {
	for _, tc := range []struct {
		p    bmcrotate.Policy
		n    int
		fail string
	}{
		{bmcrotate.Policy{}, 24, ""},
		{bmcrotate.Policy{MinLength: 12, MaxLength: 32, Classes: 3}, 24, ""},
		{bmcrotate.Policy{MinLength: 30}, 30, ""},
		{bmcrotate.Policy{MaxLength: 16}, 16, ""},
		{bmcrotate.Policy{MinLength: 20, MaxLength: 10}, 0, "cannot be met"},
		{bmcrotate.Policy{Classes: 5}, 0, "5 character classes"},
		{bmcrotate.Policy{MaxLength: 3}, 0, "at most 3 characters"},
	} {
		s, err := bmcrotate.NewSecret(tc.p, nil)
		if tc.fail != "" {
			assert.ErrorContains(t, err, tc.fail)
			continue
		}
		require.NoError(t, err)
		assert.Len(t, s, tc.n)
		for _, set := range []string{"ABCDEFGHJKLMNPQRSTUVWXYZ", "abcdefghijkmnopqrstuvwxyz", "23456789", "-_.~"} {
			assert.True(t, strings.ContainsAny(s, set), "%q has one of %q", s, set)
		}
	}
}
