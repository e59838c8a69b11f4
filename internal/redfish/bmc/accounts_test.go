package bmc_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stmcginnis/gofish"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
	"github.com/seamdc/seam/internal/redfish/bmc"
)

const (
	accounts   = "/redfish/v1/AccountService/Accounts"
	sessions   = "/redfish/v1/SessionService/Sessions"
	goodPass   = "New-Passw0rd-42"
	otherPass  = "Other-Passw0rd-7"
	compute03  = "ma/r01/compute-03"
	accountSvc = "/redfish/v1/AccountService"
)

// basicAs is a client with basic credentials.
func basicAs(t *testing.T, s *bmc.Server, u, p string) client {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(u, p)
	return client{t: t, base: s.URL(), hdr: map[string]string{"Authorization": req.Header.Get("Authorization")}}
}

// sessionAs logs in and is a client with the session's token (and the
// login's status).
func sessionAs(t *testing.T, s *bmc.Server, u, p string) (client, int) {
	resp, _ := client{t: t, base: s.URL()}.do(http.MethodPost, sessions, map[string]string{"UserName": u, "Password": p})
	return client{t: t, base: s.URL(), hdr: map[string]string{"X-Auth-Token": resp.Header.Get("X-Auth-Token")}}, resp.StatusCode
}

// message is an error document's first Message and MessageId.
func message(doc map[string]any) (string, string) {
	e, _ := doc["error"].(map[string]any)
	infos, _ := e["@Message.ExtendedInfo"].([]any)
	if len(infos) == 0 {
		return "", ""
	}
	m := infos[0].(map[string]any)
	return fmt.Sprint(m["MessageId"]), fmt.Sprint(m["Message"])
}

// The AccountService's documents, after the public-rackmount1 mockup:
// the policy and lockout settings, the accounts (never a password), the
// roles.
func TestAccountServiceDocuments(t *testing.T) {
	s, _ := serve(t, compute03, bmc.Config{})
	c := basic(t, s)
	_, root := c.do(http.MethodGet, "/redfish/v1/", nil)
	assert.Equal(t, accountSvc, root["AccountService"].(map[string]any)["@odata.id"])
	_, as := c.do(http.MethodGet, accountSvc, nil)
	assert.Equal(t, "#AccountService.v1_18_1.AccountService", as["@odata.type"])
	assert.EqualValues(t, 12, as["MinPasswordLength"])
	assert.EqualValues(t, 32, as["MaxPasswordLength"])
	assert.EqualValues(t, 5, as["AccountLockoutThreshold"])
	assert.EqualValues(t, 300, as["AccountLockoutDuration"])
	assert.EqualValues(t, 60, as["AccountLockoutCounterResetAfter"])
	assert.Equal(t, true, as["AccountLockoutCounterResetEnabled"])
	assert.EqualValues(t, 3, as["Oem"].(map[string]any)["Seam"].(map[string]any)["PasswordCharacterClasses"])
	_, coll := c.do(http.MethodGet, accounts, nil)
	assert.EqualValues(t, 1, coll["Members@odata.count"])
	_, acct := c.do(http.MethodGet, accounts+"/1", nil)
	assert.Equal(t, "#ManagerAccount.v1_14_1.ManagerAccount", acct["@odata.type"])
	assert.Equal(t, user, acct["UserName"])
	assert.Equal(t, "Administrator", acct["RoleId"])
	assert.Equal(t, true, acct["Enabled"])
	assert.Equal(t, false, acct["Locked"])
	assert.Contains(t, acct, "Password")
	assert.Nil(t, acct["Password"])
	role := acct["Links"].(map[string]any)["Role"].(map[string]any)["@odata.id"].(string)
	resp, r := c.do(http.MethodGet, role, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, r["AssignedPrivileges"], "ConfigureUsers")
	_, roles := c.do(http.MethodGet, accountSvc+"/Roles", nil)
	assert.EqualValues(t, 3, roles["Members@odata.count"])

	resp, _ = c.do(http.MethodPost, accounts, map[string]any{"UserName": "ops", "Password": goodPass, "RoleId": "Operator"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	for _, uri := range []string{accountSvc, accounts, accounts + "/1", accounts + "/2"} {
		resp, doc := c.do(http.MethodGet, uri, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, uri)
		raw, _ := json.Marshal(doc)
		assert.NotContains(t, string(raw), pass, uri)
		assert.NotContains(t, string(raw), goodPass, uri)
	}
}

// A new password breaking the policy is refused 400, naming the rule;
// the password never appears in the message.
func TestPasswordPolicy(t *testing.T) {
	s, _ := serve(t, compute03, bmc.Config{})
	c := basic(t, s)
	for _, tc := range []struct {
		name, pw, rule string
	}{
		{"short", "Ab1-short", "at least 12 characters"},
		{"long", strings.Repeat("Ab1-", 9), "at most 32 characters"},
		{"two classes", "alllowercase123", "at least 3 of the 4 classes"},
		{"space", "Has A Space 123", "printable ASCII characters and no spaces"},
		{"not ASCII", "Pässwörter-123", "printable ASCII characters and no spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			resp, doc := c.do(http.MethodPatch, accounts+"/1", map[string]any{"Password": tc.pw})
			require.Equal(t, http.StatusBadRequest, resp.StatusCode)
			id, msg := message(doc)
			assert.Equal(t, "Base.1.5.0.PropertyValueFormatError", id)
			assert.Contains(t, msg, tc.rule)
			raw, _ := json.Marshal(doc)
			assert.NotContains(t, string(raw), tc.pw)
			resp, doc = c.do(http.MethodPost, accounts, map[string]any{"UserName": "new", "Password": tc.pw, "RoleId": "ReadOnly"})
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "the same policy for a new account")
			_, msg = message(doc)
			assert.Contains(t, msg, tc.rule)
		})
	}
	assert.True(t, s.BMC.PasswordIs(user, pass), "nothing changed")
	resp, doc := c.do(http.MethodPatch, accounts+"/1", map[string]any{"UserName": "root"})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	id, _ := message(doc)
	assert.Equal(t, "Base.1.5.0.PropertyNotWritable", id)
	resp, _ = c.do(http.MethodPatch, accounts+"/1", map[string]any{"Locked": true})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Locked can only be cleared")
	resp, _ = c.do(http.MethodPatch, accounts+"/1", map[string]any{"RoleId": "Superuser"})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, 5*2+3, s.BMC.Stats().Writes, "every PATCH and POST counts as a write")
}

// Failed logins lock an account out: its right password is refused
// until the lockout ends (the source's clock) or an admin unlocks it; a
// failure older than the reset period does not count; a success resets
// the count.
func TestLockout(t *testing.T) {
	s, src := serve(t, compute03, bmc.Config{LockoutThreshold: 3, LockoutDuration: time.Minute, LockoutResetAfter: 10 * time.Second})
	c := basic(t, s)
	resp, _ := c.do(http.MethodPost, accounts, map[string]any{"UserName": "ops", "Password": goodPass, "RoleId": "Operator"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	fail := func() {
		t.Helper()
		_, code := sessionAs(t, s, "ops", "wrong")
		require.Equal(t, http.StatusUnauthorized, code)
	}
	fail()
	fail()
	src.advance(11 * time.Second)
	fail() // the count restarts: 1
	fail() // 2
	_, code := sessionAs(t, s, "ops", goodPass)
	require.Equal(t, http.StatusCreated, code, "a success resets the count")
	fail()
	fail()
	_, code = sessionAs(t, s, "nobody", "wrong")
	require.Equal(t, http.StatusUnauthorized, code, "an unknown user counts nowhere")
	enabled, locked, ok := s.BMC.Account("ops")
	assert.True(t, enabled && ok)
	assert.False(t, locked, "two failures since the success")
	resp, _ = basicAs(t, s, "ops", "wrong").do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a basic login's failure counts too: locked")
	_, locked, _ = s.BMC.Account("ops")
	assert.True(t, locked)
	assert.Equal(t, 1, s.BMC.Stats().Lockouts)
	assert.Equal(t, 7, s.BMC.Stats().FailedLogins)
	_, code = sessionAs(t, s, "ops", goodPass)
	assert.Equal(t, http.StatusUnauthorized, code, "locked: even the right password")
	_, doc := c.do(http.MethodGet, accounts+"/2", nil)
	assert.Equal(t, true, doc["Locked"])
	src.advance(61 * time.Second)
	_, code = sessionAs(t, s, "ops", goodPass)
	assert.Equal(t, http.StatusCreated, code, "unlocked by itself after the duration")

	for range 3 {
		fail()
	}
	_, code = sessionAs(t, s, "ops", goodPass)
	require.Equal(t, http.StatusUnauthorized, code)
	resp, doc = c.do(http.MethodPatch, accounts+"/2", map[string]any{"Locked": false})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, false, doc["Locked"])
	_, code = sessionAs(t, s, "ops", goodPass)
	assert.Equal(t, http.StatusCreated, code, "unlocked by an admin")
	assert.Equal(t, 2, s.BMC.Stats().Lockouts)
}

// A password change ends the account's other sessions, not the one
// that made it, nor other accounts'; the new password works, the old
// one does not; accounts survive a reboot.
func TestPasswordChangeEndsOtherSessions(t *testing.T) {
	s, _ := serve(t, compute03, bmc.Config{})
	mine, _ := sessionAs(t, s, user, pass)
	other, _ := sessionAs(t, s, user, pass)
	resp, _ := mine.do(http.MethodPost, accounts, map[string]any{"UserName": "ops", "Password": goodPass, "RoleId": "Operator", "Enabled": true})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	ops, _ := sessionAs(t, s, "ops", goodPass)
	resp, doc := mine.do(http.MethodPatch, accounts+"/1", map[string]any{"Password": otherPass})
	require.Equal(t, http.StatusOK, resp.StatusCode, doc)
	assert.Nil(t, doc["Password"])
	for _, tc := range []struct {
		name string
		c    client
		want int
	}{{"the session that changed it", mine, http.StatusOK}, {"another of the account", other, http.StatusUnauthorized}, {"another account's", ops, http.StatusOK}} {
		resp, _ := tc.c.do(http.MethodGet, "/redfish/v1/Chassis", nil)
		assert.Equal(t, tc.want, resp.StatusCode, tc.name)
	}
	_, code := sessionAs(t, s, user, pass)
	assert.Equal(t, http.StatusUnauthorized, code, "the old password")
	require.NoError(t, s.BMC.Reboot())
	assert.True(t, s.BMC.PasswordIs(user, otherPass), "a reboot keeps the password")
	_, code = sessionAs(t, s, user, otherPass)
	assert.Equal(t, http.StatusCreated, code)
	_, _, ok := s.BMC.Account("ops")
	assert.True(t, ok, "and the accounts")
}

// Creating and deleting accounts: 201 with Location, a UserName taken
// (409), the limit (400), account 1 not deletable, a deleted account's
// sessions end; only an Administrator writes accounts, anyone changes
// their own password.
func TestCreateDeleteAndPrivilege(t *testing.T) {
	s, _ := serve(t, compute03, bmc.Config{MaxAccounts: 3})
	c := basic(t, s)
	resp, doc := c.do(http.MethodPost, accounts, map[string]any{"UserName": "ops", "Password": goodPass, "RoleId": "Operator"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, accounts+"/2", resp.Header.Get("Location"))
	assert.Equal(t, "ops", doc["UserName"])
	assert.Nil(t, doc["Password"])
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		id     string
	}{
		{"taken", map[string]any{"UserName": "ops", "Password": goodPass, "RoleId": "ReadOnly"}, http.StatusConflict, "ResourceAlreadyExists"},
		{"no password", map[string]any{"UserName": "x", "RoleId": "ReadOnly"}, http.StatusBadRequest, "PropertyMissing"},
		{"bad role", map[string]any{"UserName": "x", "Password": goodPass, "RoleId": "root"}, http.StatusBadRequest, "PropertyValueNotInList"},
		{"read only", map[string]any{"UserName": "x", "Password": goodPass, "RoleId": "ReadOnly", "Id": "9"}, http.StatusBadRequest, "PropertyNotWritable"},
		{"viewer", map[string]any{"UserName": "viewer", "Password": goodPass, "RoleId": "ReadOnly"}, http.StatusCreated, ""},
		{"limit", map[string]any{"UserName": "fourth", "Password": goodPass, "RoleId": "ReadOnly"}, http.StatusBadRequest, "CreateLimitReachedForResource"},
	} {
		resp, doc := c.do(http.MethodPost, accounts, tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, tc.name)
		id, _ := message(doc)
		if tc.id != "" {
			assert.Equal(t, "Base.1.5.0."+tc.id, id, tc.name)
		}
	}
	viewer := basicAs(t, s, "viewer", goodPass)
	for _, tc := range []struct {
		name, method, uri string
		body              any
		status            int
	}{
		{"a viewer creates", http.MethodPost, accounts, map[string]any{"UserName": "y", "Password": goodPass, "RoleId": "Administrator"}, http.StatusForbidden},
		{"a viewer changes another's password", http.MethodPatch, accounts + "/1", map[string]any{"Password": otherPass}, http.StatusForbidden},
		{"a viewer promotes itself", http.MethodPatch, accounts + "/3", map[string]any{"RoleId": "Administrator"}, http.StatusForbidden},
		{"a viewer deletes", http.MethodDelete, accounts + "/2", nil, http.StatusForbidden},
		{"a viewer changes its own password", http.MethodPatch, accounts + "/3", map[string]any{"Password": otherPass}, http.StatusOK},
	} {
		resp, doc := viewer.do(tc.method, tc.uri, tc.body)
		assert.Equal(t, tc.status, resp.StatusCode, tc.name)
		if tc.status == http.StatusForbidden {
			id, _ := message(doc)
			assert.Equal(t, "Base.1.5.0.InsufficientPrivilege", id, tc.name)
		}
	}
	assert.True(t, s.BMC.PasswordIs("viewer", otherPass))
	assert.True(t, s.BMC.PasswordIs(user, pass))

	resp, doc = c.do(http.MethodDelete, accounts+"/1", nil)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	_, msg := message(doc)
	assert.Contains(t, msg, "built-in administrator")
	ops, code := sessionAs(t, s, "ops", goodPass)
	require.Equal(t, http.StatusCreated, code)
	resp, _ = c.do(http.MethodDelete, accounts+"/2", nil)
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, _ = ops.do(http.MethodGet, "/redfish/v1/Chassis", nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "a deleted account's session")
	_, _, ok := s.BMC.Account("ops")
	assert.False(t, ok)
	resp, _ = c.do(http.MethodPost, accounts, map[string]any{"UserName": "ops2", "Password": goodPass, "RoleId": "Operator"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	assert.Equal(t, accounts+"/2", resp.Header.Get("Location"), "the free slot")
	resp, _ = c.do(http.MethodPatch, accounts+"/2", map[string]any{"Enabled": false})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, code = sessionAs(t, s, "ops2", goodPass)
	assert.Equal(t, http.StatusUnauthorized, code, "a disabled account")
}

// password_refused refuses every password change and creation with a
// readable message; reset_on_password applies the password, then drops
// the connection and the sessions.
func TestAccountFaults(t *testing.T) {
	s, _ := serve(t, compute03, bmc.Config{})
	c := basic(t, s)
	require.NoError(t, s.BMC.SetFault(bmc.FaultPasswordRefused, true))
	for _, tc := range []struct {
		method, uri string
		body        map[string]any
	}{
		{http.MethodPatch, accounts + "/1", map[string]any{"Password": goodPass}},
		{http.MethodPost, accounts, map[string]any{"UserName": "ops", "Password": goodPass, "RoleId": "Operator"}},
	} {
		resp, doc := c.do(tc.method, tc.uri, tc.body)
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, tc.method)
		id, msg := message(doc)
		assert.Equal(t, "Base.1.5.0.PropertyValueIncorrect", id)
		assert.Contains(t, msg, "The password was used recently and cannot be reused")
	}
	resp, _ := c.do(http.MethodPatch, accounts+"/1", map[string]any{"Enabled": true})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "not a password")
	assert.True(t, s.BMC.PasswordIs(user, pass))

	require.NoError(t, s.BMC.SetFault(bmc.FaultResetOnPassword, true))
	sess, _ := sessionAs(t, s, user, pass)
	req, _ := http.NewRequest(http.MethodPatch, s.URL()+accounts+"/1", strings.NewReader(`{"Password": "`+goodPass+`"}`))
	req.Header.Set("X-Auth-Token", sess.hdr["X-Auth-Token"])
	_, err := http.DefaultClient.Do(req)
	assert.Error(t, err, "the connection drops")
	assert.True(t, s.BMC.PasswordIs(user, goodPass), "the password was applied")
	assert.Equal(t, 1, s.BMC.Reboots())
	assert.Equal(t, 0, s.BMC.Stats().Sessions, "the reset ended the sessions")
}

// gofish v0.23.0 reads the policy, lists the accounts, changes a
// password with ManagerAccount.Update and logs in with the new one.
func TestGofishChangesAPassword(t *testing.T) {
	s, _ := serve(t, compute03, bmc.Config{})
	c, err := gofish.Connect(gofish.ClientConfig{Endpoint: s.URL(), Username: user, Password: pass})
	require.NoError(t, err)
	defer c.Logout()
	as, err := c.GetService().AccountService()
	require.NoError(t, err)
	assert.EqualValues(t, 12, as.MinPasswordLength)
	assert.EqualValues(t, 32, as.MaxPasswordLength)
	list, err := as.Accounts()
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, user, list[0].UserName)
	list[0].Password = "short"
	assert.ErrorContains(t, list[0].Update(), "at least 12 characters")
	list[0].Password = goodPass
	require.NoError(t, list[0].Update())
	assert.True(t, s.BMC.PasswordIs(user, goodPass))
	c2, err := gofish.Connect(gofish.ClientConfig{Endpoint: s.URL(), Username: user, Password: goodPass})
	require.NoError(t, err)
	c2.Logout()
	_, err = as.CreateAccount("ops", otherPass, "Operator")
	require.NoError(t, err)
	_, _, ok := s.BMC.Account("ops")
	assert.True(t, ok)
}

// Debian's redfishtool lists the accounts and changes a password.
func TestRedfishtoolChangesAPassword(t *testing.T) {
	rt := peer.Need(t, "redfishtool")
	s, _ := serve(t, compute03, bmc.Config{})
	run := func(pw string, args ...string) string {
		t.Helper()
		out, err := peer.Run(time.Minute, append([]string{rt, "-r", s.Addr(), "-S", "Never", "-A", "Session", "-u", user, "-p", pw}, args...)...)
		require.NoError(t, err, out)
		return out
	}
	out := run(pass, "AccountService", "Accounts", "list")
	assert.Contains(t, out, user)
	run(pass, "AccountService", "setpassword", user, goodPass)
	assert.True(t, s.BMC.PasswordIs(user, goodPass))
	var acct map[string]any
	require.NoError(t, json.Unmarshal([]byte(run(goodPass, "AccountService", "Accounts", "-i", "1")), &acct))
	assert.Equal(t, user, acct["UserName"])
	assert.Nil(t, acct["Password"])
}
