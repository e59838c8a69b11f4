// Package bmcrotate rotates the credentials of a site's BMCs through
// Redfish's AccountService, so that at every moment (a crash, a kill, a
// BMC reset half-way) each BMC accepts a secret the site's secrets file
// holds: its active one or its pending one.
//
// Two schemes, chosen per BMC by its secrets entry and what its
// AccountService allows:
//
//   - two accounts (the entry names a standby account): a new secret is
//     set on the standby account (made when the BMC lacks it), a login
//     with it verified, the file made to hold it as the active one, and
//     only then the old account's secret replaced by one nobody keeps
//     and the account disabled;
//   - one account: the new secret is written to the file as pending
//     before the BMC changes, the BMC's password changed, a login with
//     it verified, and pending made active.
//
// A BMC whose entry still has a pending secret (a run stopped
// half-way) is finished first: the login says which secret the BMC
// took. Every login that can fail is tried at most once per run, so a
// rotation never locks an account out. Secrets reach the BMC and the
// file, never a log, a result or an error (they are scrubbed from the
// BMC's messages too).
package bmcrotate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stmcginnis/gofish/schemas"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/bmcsecret"
	"github.com/seamdc/seam/internal/dryrun"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

// The schemes.
const (
	TwoAccounts = "two-accounts"
	OneAccount  = "one-account"
)

// The outcomes of one BMC.
const (
	Rotated  = "rotated"
	Finished = "finished" // an earlier run's pending secret, which the BMC had taken, made active
	Skipped  = "skipped"  // rotated since the rotation under way started
	Failed   = "failed"
	Would    = "would" // a dry run's
)

// Target is one BMC: its name (as the secrets file and the binding
// have it) and its service URL.
type Target struct{ Name, URL string }

// Options are a rotation's settings.
type Options struct {
	Access bmchttp.Access // with Secrets set
	Store  *bmcsecret.Store
	// Writable says whether the binding declares a BMC's control
	// writable (binding.BMCs.Writable); a BMC without Accounts is
	// refused before anything is sent to it.
	Writable func(bmc, control string) error
	Dry      *dryrun.Recorder
	// Since skips the BMCs rotated at or after it: the rotation under
	// way started then.
	Since time.Time
	By    string // who rotates, for the results and the evidence
	// Settle is how long a BMC may take to answer again after a change
	// (a reset): its verifying login is retried until then (default 2
	// min).
	Settle time.Duration
	Rand   io.Reader // the secrets' randomness (default crypto/rand)
	// Record, when set, is given each BMC's result as it ends, from the
	// worker that rotated it.
	Record func(Result)
}

// Result is what became of one BMC. It holds no secret.
type Result struct {
	BMC     string `json:"bmc"`
	Outcome string `json:"outcome"`
	Scheme  string `json:"scheme,omitempty"`
	// Account is the account whose secret is active now; Previous the
	// one it replaced (two accounts).
	Account  string    `json:"account,omitempty"`
	Previous string    `json:"previous,omitempty"`
	Step     string    `json:"step,omitempty"` // the step that failed
	Error    string    `json:"error,omitempty"`
	Note     string    `json:"note,omitempty"`
	At       time.Time `json:"at"`
	By       string    `json:"by,omitempty"`
	Err      error     `json:"-"`
}

// Run rotates every target's credentials, at most Access.Parallel BMCs
// at once, and returns their results in the targets' order.
func Run(ctx context.Context, targets []Target, opt Options) []Result {
	opt.Access = opt.Access.WithDefaults()
	if opt.Settle <= 0 {
		opt.Settle = 2 * time.Minute
	}
	out := make([]Result, len(targets))
	// a dry run's lines, BMC by BMC, printed in the targets' order
	dry := make([]bytes.Buffer, len(targets))
	subs := make([]*dryrun.Recorder, len(targets))
	sem := make(chan struct{}, opt.Access.Parallel)
	var wg sync.WaitGroup
	for i, t := range targets {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			out[i] = Result{BMC: t.Name, Outcome: Failed, Step: "start", Err: ctx.Err(), Error: "not started: " + ctx.Err().Error(), At: opt.Access.Clock.Now(), By: opt.By}
			continue
		}
		wg.Go(func() {
			defer func() { <-sem }()
			rot := &rotation{opt: opt, t: t}
			if opt.Dry.Active() {
				subs[i] = dryrun.New(&dry[i], opt.Dry.Log)
				rot.opt.Dry = subs[i]
			}
			r := rot.run(ctx)
			out[i] = r
			opt.Access.Log.Info("BMC rotation", "bmc", r.BMC, "outcome", r.Outcome, "scheme", r.Scheme, "account", r.Account, "step", r.Step, "error", r.Error)
			if opt.Record != nil {
				opt.Record(r)
			}
		})
	}
	wg.Wait()
	if opt.Dry.Active() {
		for i := range dry {
			_, _ = opt.Dry.Out.Write(dry[i].Bytes())
			if subs[i] != nil {
				opt.Dry.Merge(subs[i])
			}
		}
	}
	return out
}

// rotation is one BMC's.
type rotation struct {
	opt     Options
	t       Target
	client  *http.Client
	secrets []string // every secret this rotation handles: scrubbed from messages
	// dryEntry is the entry a dry run would have written last
	dryEntry *bmcsecret.Entry
	res      Result
}

// failure is a step that failed, and why.
type failure struct {
	step string
	err  error
}

func (f *failure) Error() string { return f.step + ": " + f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

func fail(step string, err error) error { return &failure{step, err} }

func (r *rotation) run(ctx context.Context) Result {
	r.res = Result{BMC: r.t.Name, By: r.opt.By}
	err := r.rotate(ctx)
	r.res.At = r.opt.Access.Clock.Now()
	if err != nil {
		var f *failure
		if errors.As(err, &f) {
			r.res.Step = f.step
			err = f.err
		}
		r.res.Outcome = Failed
		r.res.Error = r.scrub(err.Error())
		r.res.Err = fmt.Errorf("BMC %s: %s: %s", r.t.Name, r.res.Step, r.res.Error)
	}
	return r.res
}

// scrub replaces every secret in s.
func (r *rotation) scrub(s string) string {
	for _, sec := range r.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "(secret)")
		}
	}
	return s
}

func (r *rotation) rotate(ctx context.Context) error {
	e, err := r.opt.Store.Entry(r.t.Name)
	if err != nil {
		return fail("secrets file", err)
	}
	r.secrets = append(r.secrets, e.Active, e.Pending)
	if !r.opt.Since.IsZero() && !e.Rotated.IsZero() && !e.Rotated.Before(r.opt.Since) {
		r.res.Outcome, r.res.Account = Skipped, e.User
		r.res.Note = "rotated at " + e.Rotated.UTC().Format(time.RFC3339) + ", since the rotation under way started"
		return nil
	}
	if err := r.opt.Writable(r.t.Name, binding.ControlAccounts); err != nil {
		return fail("binding", err)
	}
	client, closeIdle := r.opt.Access.Client(nil)
	defer closeIdle()
	r.client = client
	api, cred, err := r.opt.Access.Login(ctx, client, r.t.Name, r.t.URL)
	if err != nil {
		return fail("log in", err)
	}
	defer api.Logout()
	if cred.Which == bmcsecret.Pending {
		// an earlier run changed the BMC and stopped before the file
		// said so: the pending secret is the BMC's now
		e.Active, e.Pending, e.Rotated = e.Pending, "", r.now()
		if err := r.save(e); err != nil {
			return fail("save the secrets file", err)
		}
		r.res.Outcome, r.res.Scheme, r.res.Account = Finished, OneAccount, e.User
		if r.opt.Dry.Active() {
			r.res.Outcome = Would
		}
		r.res.Note = "the BMC had taken the pending secret an interrupted run left; it is the active one now"
		return nil
	}
	as, err := api.Service.AccountService()
	if err != nil {
		return fail("read AccountService", err)
	}
	accounts, err := as.Accounts()
	if err != nil {
		return fail("read accounts", err)
	}
	cur := find(accounts, e.User)
	if cur == nil {
		return fail("read accounts", fmt.Errorf("its AccountService lists no account %q, the one seam logged in with", e.User))
	}
	pol := policyOf(as)
	if e.Standby != "" {
		done, err := r.twoAccounts(ctx, api, as, accounts, cur, e, pol)
		if done || err != nil {
			return err
		}
	}
	return r.oneAccount(ctx, api, cur, e, pol)
}

// twoAccounts sets a new secret on the standby account, verifies it,
// makes it active and invalidates the old account's. done is false
// when the BMC has no standby account and will not make one: the
// caller rotates the one account instead.
func (r *rotation) twoAccounts(ctx context.Context, api *gofish.APIClient, as *schemas.AccountService, accounts []*schemas.ManagerAccount,
	cur *schemas.ManagerAccount, e bmcsecret.Entry, pol Policy) (done bool, err error) {
	r.res.Scheme = TwoAccounts
	secret, err := NewSecret(pol, r.opt.Rand)
	if err != nil {
		return true, fail("new secret", err)
	}
	r.secrets = append(r.secrets, secret)
	if sb := find(accounts, e.Standby); sb != nil {
		if err := r.write(api, http.MethodPatch, sb.ODataID, map[string]any{"Password": secret, "Enabled": true}); err != nil {
			return true, fail("set the standby account's secret", err)
		}
	} else {
		body := map[string]any{"UserName": e.Standby, "Password": secret, "RoleId": cur.RoleID, "Enabled": true}
		if err := r.write(api, http.MethodPost, accountsURI(as), body); err != nil {
			if !cannotCreate(err) {
				return true, fail("create the standby account", err)
			}
			r.res.Note = fmt.Sprintf("its AccountService would not create the standby account %s (%s): its one account was rotated", e.Standby, r.scrub(bmcMessage(err)))
			return false, nil
		}
	}
	vapi, err := r.verify(ctx, bmcsecret.Credential{User: e.Standby, Secret: secret, Which: bmcsecret.Pending})
	if err != nil {
		return true, fail("verify the standby account's secret", err)
	}
	if vapi != nil {
		defer vapi.Logout()
	} else {
		vapi = api // a dry run
	}
	next := bmcsecret.Entry{User: e.Standby, Active: secret, Standby: e.User}
	if err := r.save(next); err != nil {
		return true, fail("save the secrets file", err)
	}
	r.res.Account, r.res.Previous = e.Standby, e.User
	junk, err := NewSecret(pol, r.opt.Rand)
	if err != nil {
		return true, fail("new secret", err)
	}
	r.secrets = append(r.secrets, junk)
	if err := r.write(vapi, http.MethodPatch, cur.ODataID, map[string]any{"Password": junk, "Enabled": false}); err != nil &&
		(refused(err) || !r.disabled(ctx, bmcsecret.Credential{User: e.Standby, Secret: secret, Which: bmcsecret.Active}, cur.ODataID)) {
		return true, fail("invalidate the old account's secret", fmt.Errorf("%w (the file holds the new account's secret; the old account %s keeps a secret the site no longer holds: run sat bmc rotate again)", err, e.User))
	}
	next.Rotated = r.now()
	if err := r.save(next); err != nil {
		return true, fail("save the secrets file", err)
	}
	r.res.Outcome = r.outcome()
	return true, nil
}

// oneAccount writes the new secret as pending, changes the BMC's
// password, verifies it and makes it active. A pending secret an
// earlier run left, which the BMC did not take, is used again.
func (r *rotation) oneAccount(ctx context.Context, api *gofish.APIClient, cur *schemas.ManagerAccount, e bmcsecret.Entry, pol Policy) error {
	r.res.Scheme, r.res.Account = OneAccount, e.User
	secret := e.Pending
	if secret == "" {
		var err error
		if secret, err = NewSecret(pol, r.opt.Rand); err != nil {
			return fail("new secret", err)
		}
		r.secrets = append(r.secrets, secret)
		e.Pending = secret
		if err := r.save(e); err != nil {
			return fail("save the pending secret", err)
		}
	}
	err := r.write(api, http.MethodPatch, cur.ODataID, map[string]any{"Password": secret})
	if refused(err) {
		// the BMC answered no: it keeps its password, and the file
		// forgets the pending secret
		e.Pending = ""
		if serr := r.save(e); serr != nil {
			return fail("save the secrets file", serr)
		}
		return fail("change the password", err)
	}
	// on any other error the BMC may have taken it (a reset before it
	// answered): the login says
	vapi, verr := r.verify(ctx, bmcsecret.Credential{User: e.User, Secret: secret, Which: bmcsecret.Pending})
	if verr != nil {
		if err != nil {
			return fail("change the password", fmt.Errorf("%w; then the new secret: %w (the file keeps it as pending: run sat bmc rotate again)", err, verr))
		}
		return fail("verify the new secret", fmt.Errorf("%w (the file keeps it as pending: run sat bmc rotate again)", verr))
	}
	if vapi != nil {
		defer vapi.Logout()
	}
	e.Active, e.Pending, e.Rotated = secret, "", r.now()
	if err := r.save(e); err != nil {
		return fail("save the active secret", err)
	}
	r.res.Outcome = r.outcome()
	return nil
}

// save gives the BMC its entry in the secrets file, on disk when save
// returns; a dry run says what it would change instead.
func (r *rotation) save(e bmcsecret.Entry) error {
	if r.opt.Dry.Active() {
		old, err := r.opt.Store.Entry(r.t.Name)
		if r.dryEntry != nil {
			old, err = *r.dryEntry, nil
		}
		r.dryEntry = &e
		if err != nil {
			return err
		}
		r.opt.Dry.Would(dryrun.File, "write %s: BMC %s: %s", r.opt.Store.Path(), r.t.Name, bmcsecret.Describe(old, e))
		return nil
	}
	return r.opt.Store.Set(r.t.Name, e)
}

func (r *rotation) outcome() string {
	if r.opt.Dry.Active() {
		return Would
	}
	return Rotated
}

func (r *rotation) now() time.Time { return r.opt.Access.Clock.Now().UTC() }

// verify logs in with c and reads the AccountService (a basic login is
// checked only by a request that needs it), retrying while the BMC
// does not answer (a reset) until Settle has passed; a refusal is
// final, so it costs one failed login at most. A dry run only says it
// would; it returns no client then.
func (r *rotation) verify(ctx context.Context, c bmcsecret.Credential) (*gofish.APIClient, error) {
	if r.opt.Dry.Active() {
		r.opt.Dry.Log.Info("dry run: would log in with the new secret to verify it", "bmc", r.t.Name, "account", c.User)
		fmt.Fprintf(r.opt.Dry.Out, "would log in to BMC %s as %s with the new secret, to verify it\n", r.t.Name, c.User)
		return nil, nil
	}
	clk := r.opt.Access.Clock
	deadline := clk.Now().Add(r.opt.Settle)
	for {
		api, err := r.opt.Access.ConnectAs(ctx, r.client, r.t.URL, c)
		if err == nil {
			var resp *http.Response
			if resp, err = api.Get("/redfish/v1/AccountService"); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return api, nil
			}
			api.Logout()
		}
		if bmchttp.RefusedLogin(err) || ctx.Err() != nil || !clk.Now().Before(deadline) {
			return nil, fmt.Errorf("login as %s with the new secret: %w", c.User, err)
		}
		if serr := clk.Sleep(ctx, 2*time.Second); serr != nil {
			return nil, serr
		}
	}
}

// disabled says whether the account at uri is disabled, as seen from a
// new login with c: after a change whose answer was lost (the BMC
// reset), whether the BMC made it.
func (r *rotation) disabled(ctx context.Context, c bmcsecret.Credential, uri string) bool {
	api, err := r.verify(ctx, c)
	if err != nil {
		return false
	}
	defer api.Logout()
	a, err := schemas.GetObject[schemas.ManagerAccount](api, uri)
	return err == nil && !a.Enabled
}

// write sends one change to the BMC, or in a dry run says it would
// (the body's secrets shown as "(new secret)").
func (r *rotation) write(api *gofish.APIClient, method, uri string, body map[string]any) error {
	if r.opt.Dry.Active() {
		shown := map[string]any{}
		for k, v := range body {
			if k == "Password" {
				v = "(new secret)"
			}
			shown[k] = v
		}
		b, _ := json.Marshal(shown)
		r.opt.Dry.Would(dryrun.BMC, "%s %s%s %s", method, strings.TrimSuffix(r.t.URL, "/"), uri, b)
		return nil
	}
	var resp *http.Response
	var err error
	switch method {
	case http.MethodPatch:
		resp, err = api.Patch(uri, body)
	case http.MethodPost:
		resp, err = api.Post(uri, body)
	default:
		return fmt.Errorf("bmcrotate: no %s", method)
	}
	if err != nil {
		return &writeError{method + " " + uri, err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return nil
}

// writeError is a write the BMC refused or did not answer, in its own
// words.
type writeError struct {
	req string
	err error
}

func (e *writeError) Error() string { return e.req + ": " + bmcMessage(e.err) }
func (e *writeError) Unwrap() error { return e.err }

// refused says whether err is the BMC answering no (4xx): it did not
// make the change.
func refused(err error) bool {
	var re *schemas.Error
	return errors.As(err, &re) && re.HTTPReturnedStatusCode >= 400 && re.HTTPReturnedStatusCode < 500
}

// cannotCreate says whether err is a BMC that makes no more accounts:
// it has no POST on its Accounts (405, 501) or its account limit is
// reached (Base's CreateLimitReachedForResource).
func cannotCreate(err error) bool {
	var re *schemas.Error
	if !errors.As(err, &re) {
		return false
	}
	switch re.HTTPReturnedStatusCode {
	case http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	for _, m := range re.ExtendedInfos {
		if strings.Contains(m.MessageID, "CreateLimitReached") {
			return true
		}
	}
	return strings.Contains(re.Code, "CreateLimitReached")
}

// bmcMessage is the BMC's own words for an error: its status and its
// message's text.
func bmcMessage(err error) string {
	var re *schemas.Error
	if !errors.As(err, &re) {
		return err.Error()
	}
	for _, m := range re.ExtendedInfos {
		if m.Message != "" {
			return fmt.Sprintf("%d %s: %s", re.HTTPReturnedStatusCode, m.MessageID, m.Message)
		}
	}
	if re.Message != "" {
		return fmt.Sprintf("%d %s", re.HTTPReturnedStatusCode, re.Message)
	}
	return fmt.Sprintf("%d", re.HTTPReturnedStatusCode)
}

func find(accounts []*schemas.ManagerAccount, user string) *schemas.ManagerAccount {
	for _, a := range accounts {
		if a.UserName == user {
			return a
		}
	}
	return nil
}

// accountsURI is the AccountService's Accounts collection.
func accountsURI(as *schemas.AccountService) string {
	var doc struct {
		Accounts struct {
			ID string `json:"@odata.id"`
		}
	}
	if json.Unmarshal(as.RawData, &doc) == nil && doc.Accounts.ID != "" {
		return doc.Accounts.ID
	}
	return "/redfish/v1/AccountService/Accounts"
}
