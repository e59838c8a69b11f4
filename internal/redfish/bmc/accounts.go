package bmc

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/redfish"
)

// The AccountService, shaped on DMTF's public-rackmount1 mockup: local
// accounts with a password policy and a lockout after failed logins,
// in the source's time.

const (
	accountServiceURI = redfish.Root + "/AccountService"
	accountsURI       = accountServiceURI + "/Accounts"
	rolesURI          = accountServiceURI + "/Roles"
)

// The predefined roles.
const (
	RoleAdministrator = "Administrator"
	RoleOperator      = "Operator"
	RoleReadOnly      = "ReadOnly"
)

var roles = []string{RoleAdministrator, RoleOperator, RoleReadOnly}

var rolePrivileges = map[string][]string{
	RoleAdministrator: {"Login", "ConfigureManager", "ConfigureUsers", "ConfigureSelf", "ConfigureComponents"},
	RoleOperator:      {"Login", "ConfigureSelf", "ConfigureComponents"},
	RoleReadOnly:      {"Login", "ConfigureSelf"},
}

// PasswordPolicy is what a new password must be: MinPasswordLength to
// MaxPasswordLength characters (default 12 and 32) of printable ASCII
// without spaces, of at least CharacterClasses (default 3) of the four
// classes upper case, lower case, digit and other.
type PasswordPolicy struct {
	MinPasswordLength, MaxPasswordLength int
	CharacterClasses                     int
}

// account is one local account; the password is kept as given (a
// simulator), never served.
type account struct {
	id, user, password, role string
	enabled                  bool
	failures                 int       // failed logins counted towards a lockout
	lastFail                 time.Time // the last of them
	lockedUntil              time.Time
}

func (a *account) locked(now time.Time) bool { return now.Before(a.lockedUntil) }

// caller is who made a request: the account's user name and, for a
// session, its id ("" for basic authentication or a public request).
type caller struct{ user, session string }

func (c *Config) accountDefaults() {
	if c.MaxAccounts <= 0 {
		c.MaxAccounts = 4
	}
	if c.Policy.MinPasswordLength <= 0 {
		c.Policy.MinPasswordLength = 12
	}
	if c.Policy.MaxPasswordLength <= 0 {
		c.Policy.MaxPasswordLength = 32
	}
	if c.Policy.CharacterClasses <= 0 {
		c.Policy.CharacterClasses = 3
	}
	if c.LockoutThreshold <= 0 {
		c.LockoutThreshold = 5
	}
	if c.LockoutDuration <= 0 {
		c.LockoutDuration = 300 * time.Second
	}
	if c.LockoutResetAfter <= 0 {
		c.LockoutResetAfter = 60 * time.Second
	}
}

// accountByUser is the account named user, or nil; with b.mu held.
func (b *BMC) accountByUser(user string) *account {
	var found *account
	for _, a := range b.accounts {
		if subtle.ConstantTimeCompare([]byte(a.user), []byte(user)) == 1 {
			found = a
		}
	}
	return found
}

// accountByID is the account with id, or nil; with b.mu held.
func (b *BMC) accountByID(id string) *account {
	for _, a := range b.accounts {
		if a.id == id {
			return a
		}
	}
	return nil
}

// credentialsOK checks a login against the accounts, counting a failed
// one of an existing user towards its lockout; with b.mu held.
func (b *BMC) credentialsOK(user, pass string, now time.Time) bool {
	a := b.accountByUser(user)
	if a == nil {
		_ = subtle.ConstantTimeCompare([]byte(pass), []byte(pass))
		return false
	}
	pwOK := subtle.ConstantTimeCompare([]byte(pass), []byte(a.password)) == 1
	if !a.enabled || a.locked(now) {
		return false
	}
	if pwOK {
		a.failures = 0
		return true
	}
	b.stats.FailedLogins++
	if a.failures > 0 && now.Sub(a.lastFail) > b.cfg.LockoutResetAfter {
		a.failures = 0
	}
	a.failures++
	a.lastFail = now
	if a.failures >= b.cfg.LockoutThreshold {
		a.failures = 0
		a.lockedUntil = now.Add(b.cfg.LockoutDuration)
		b.stats.Lockouts++
		b.cfg.Log.Warn("BMC account locked out", "bmc", b.cfg.Name, "user", a.user, "for", b.cfg.LockoutDuration.String())
	}
	return false
}

// role is the role of the caller's account ("" when it has none).
func (b *BMC) role(who caller) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if a := b.accountByUser(who.user); a != nil && a.enabled {
		return a.role
	}
	return ""
}

// endSessions ends the sessions of user but keep; with b.mu held.
func (b *BMC) endSessions(user, keep string) {
	for id, s := range b.sessions {
		if s.user == user && id != keep {
			delete(b.sessions, id)
		}
	}
}

// Account reports whether the account named user exists, is enabled
// and is locked out now.
func (b *BMC) Account(user string) (enabled, locked, ok bool) {
	now := b.src.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.accountByUser(user)
	if a == nil {
		return false, false, false
	}
	return a.enabled, a.locked(now), true
}

// PasswordIs reports whether the account named user exists and has the
// password pw.
func (b *BMC) PasswordIs(user, pw string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	a := b.accountByUser(user)
	return a != nil && subtle.ConstantTimeCompare([]byte(pw), []byte(a.password)) == 1
}

// passwordProblem is what is wrong with a new password under the
// policy, or "".
func (p PasswordPolicy) passwordProblem(pw string) string {
	n := len(pw)
	var upper, lower, digit, other bool
	for i := range n {
		c := pw[i]
		switch {
		case c <= ' ' || c > '~':
			return "only printable ASCII characters and no spaces"
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	switch {
	case n < p.MinPasswordLength:
		return fmt.Sprintf("at least %d characters (the minimum length)", p.MinPasswordLength)
	case n > p.MaxPasswordLength:
		return fmt.Sprintf("at most %d characters (the maximum length)", p.MaxPasswordLength)
	}
	classes := 0
	for _, in := range []bool{upper, lower, digit, other} {
		if in {
			classes++
		}
	}
	if classes < p.CharacterClasses {
		return fmt.Sprintf("characters of at least %d of the 4 classes upper case letters, lower case letters, digits and other printable characters", p.CharacterClasses)
	}
	return ""
}

// passwordRefused answers 400 when a new password may not be set (the
// password_refused fault, or the policy): true when it did.
func (b *BMC) passwordRefused(w http.ResponseWriter, pw string) bool {
	if b.Fault() == FaultPasswordRefused {
		writeError(w, http.StatusBadRequest, "PropertyValueIncorrect", "The password was used recently and cannot be reused: the value for the property Password is incorrect.",
			"Choose a password that was not used before and resubmit the request.", []string{"******", "Password"})
		return true
	}
	if p := b.cfg.Policy.passwordProblem(pw); p != "" {
		writeError(w, http.StatusBadRequest, "PropertyValueFormatError", "The value for the property Password is of a different format than the property can accept: a password needs "+p+".",
			"Correct the value for the property in the request body and resubmit the request if the operation failed.", []string{"******", "Password"})
		return true
	}
	return false
}

// accountService answers a request under /redfish/v1/AccountService.
func (b *BMC) accountService(w http.ResponseWriter, r *http.Request, uri string, who caller) {
	id, isAccount := strings.CutPrefix(uri, accountsURI+"/")
	isAccount = isAccount && !strings.Contains(id, "/")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if doc := b.accountDoc(uri); doc != nil {
			writeJSON(w, http.StatusOK, doc)
			return
		}
		notFound(w, uri)
	case http.MethodPost:
		if uri == accountsURI {
			b.createAccount(w, r, who)
			return
		}
		notAllowed(w, r, "GET, HEAD")
	case http.MethodPatch:
		if isAccount {
			b.patchAccount(w, r, id, who)
			return
		}
		notAllowed(w, r, "GET, HEAD")
	case http.MethodDelete:
		if isAccount {
			b.deleteAccount(w, id, who)
			return
		}
		notAllowed(w, r, "GET, HEAD")
	default:
		notAllowed(w, r, "GET, HEAD")
	}
}

func forbidden(w http.ResponseWriter) {
	writeError(w, http.StatusForbidden, "InsufficientPrivilege", "There are insufficient privileges for the account or credentials associated with the current session to perform the requested operation.",
		"Either abandon the operation or change the associated access rights and resubmit the request if the operation failed.", nil)
}

func malformed(w http.ResponseWriter) {
	writeError(w, http.StatusBadRequest, "MalformedJSON", "The request body submitted was malformed JSON and could not be parsed by the receiving service.",
		"Ensure that the request body is valid JSON and resubmit the request.", nil)
}

// accountProps are the properties of a PATCH or POST of an account.
type accountProps struct {
	user, password, role *string
	enabled, locked      *bool
}

// decodeAccount reads a request's account properties, allowing those
// named in writable; it answers 400 and is false when they do not hold.
func decodeAccount(w http.ResponseWriter, r *http.Request, writable ...string) (accountProps, bool) {
	var p accountProps
	var body map[string]json.RawMessage
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<14)).Decode(&body); err != nil {
		malformed(w)
		return p, false
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range body {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		v := body[k]
		if !slices.Contains(writable, k) {
			writeError(w, http.StatusBadRequest, "PropertyNotWritable", fmt.Sprintf("The property %s is a read only property and cannot be assigned a value.", k),
				"Remove the property from the request body and resubmit the request if the operation failed.", []string{k})
			return p, false
		}
		var err error
		switch k {
		case "UserName":
			p.user = new(string)
			err = json.Unmarshal(v, p.user)
		case "Password":
			p.password = new(string)
			err = json.Unmarshal(v, p.password)
		case "RoleId":
			p.role = new(string)
			err = json.Unmarshal(v, p.role)
		case "Enabled":
			p.enabled = new(bool)
			err = json.Unmarshal(v, p.enabled)
		case "Locked":
			p.locked = new(bool)
			err = json.Unmarshal(v, p.locked)
		}
		if err != nil || string(v) == "null" {
			shown := string(v)
			if k == "Password" {
				shown = "******"
			}
			writeError(w, http.StatusBadRequest, "PropertyValueTypeError", fmt.Sprintf("The value %s for the property %s is of a different type than the property can accept.", shown, k),
				"Correct the value for the property in the request body and resubmit the request if the operation failed.", []string{shown, k})
			return p, false
		}
	}
	if p.role != nil && !slices.Contains(roles, *p.role) {
		writeError(w, http.StatusBadRequest, "PropertyValueNotInList", fmt.Sprintf("The value %s for the property RoleId is not in the list of acceptable values (%s).", *p.role, strings.Join(roles, ", ")),
			"Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed.", []string{*p.role, "RoleId"})
		return p, false
	}
	if p.locked != nil && *p.locked {
		writeError(w, http.StatusBadRequest, "PropertyValueNotInList", "The value true for the property Locked is not in the list of acceptable values: an account can only be unlocked (false).",
			"Choose a value from the enumeration list that the implementation can support and resubmit the request if the operation failed.", []string{"true", "Locked"})
		return p, false
	}
	return p, true
}

// patchAccount changes an account: Password, Enabled, Locked (false:
// unlock), RoleId. An Administrator may change any account; any other
// may change only its own password (ConfigureSelf). A password change
// ends the account's other sessions; disabling it ends them all.
func (b *BMC) patchAccount(w http.ResponseWriter, r *http.Request, id string, who caller) {
	b.mu.Lock()
	a := b.accountByID(id)
	b.mu.Unlock()
	if a == nil {
		notFound(w, accountsURI+"/"+id)
		return
	}
	p, ok := decodeAccount(w, r, "Password", "Enabled", "Locked", "RoleId")
	if !ok {
		return
	}
	if role := b.role(who); role != RoleAdministrator {
		self := role != "" && who.user == a.user && p.password != nil && p.enabled == nil && p.locked == nil && p.role == nil
		if !self {
			forbidden(w)
			return
		}
	}
	if p.password != nil && b.passwordRefused(w, *p.password) {
		return
	}
	b.mu.Lock()
	if a = b.accountByID(id); a == nil {
		b.mu.Unlock()
		notFound(w, accountsURI+"/"+id)
		return
	}
	if p.password != nil {
		a.password = *p.password
		b.endSessions(a.user, who.session)
	}
	if p.enabled != nil {
		a.enabled = *p.enabled
		if !a.enabled {
			b.endSessions(a.user, "")
		}
	}
	if p.locked != nil {
		a.lockedUntil, a.failures = time.Time{}, 0
	}
	if p.role != nil {
		a.role = *p.role
	}
	doc := b.manAccountDoc(a, b.src.Now())
	b.mu.Unlock()
	b.cfg.Log.Info("BMC account changed", "bmc", b.cfg.Name, "user", a.user, "password", p.password != nil)
	if p.password != nil && b.Fault() == FaultResetOnPassword {
		_ = b.Reboot()
		panic(http.ErrAbortHandler)
	}
	writeJSON(w, http.StatusOK, doc)
}

// validUserName: 1 to 16 letters, digits, '.', '_' or '-'.
func validUserName(u string) bool {
	if u == "" || len(u) > 16 {
		return false
	}
	for _, c := range []byte(u) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// createAccount is a POST to the Accounts collection: {UserName,
// Password, RoleId, Enabled}; an Administrator's only.
func (b *BMC) createAccount(w http.ResponseWriter, r *http.Request, who caller) {
	if b.role(who) != RoleAdministrator {
		forbidden(w)
		return
	}
	p, ok := decodeAccount(w, r, "UserName", "Password", "RoleId", "Enabled")
	if !ok {
		return
	}
	for _, m := range []struct {
		name string
		v    *string
	}{{"UserName", p.user}, {"Password", p.password}, {"RoleId", p.role}} {
		if m.v == nil {
			writeError(w, http.StatusBadRequest, "PropertyMissing", fmt.Sprintf("The property %s is a required property and must be included in the request.", m.name),
				"Ensure that the property is in the request body and has a valid value and resubmit the request if the operation failed.", []string{m.name})
			return
		}
	}
	if !validUserName(*p.user) {
		writeError(w, http.StatusBadRequest, "PropertyValueFormatError", fmt.Sprintf("The value %q for the property UserName is of a different format than the property can accept: 1 to 16 letters, digits, '.', '_' or '-'.", *p.user),
			"Correct the value for the property in the request body and resubmit the request if the operation failed.", []string{*p.user, "UserName"})
		return
	}
	b.mu.Lock()
	full, taken := len(b.accounts) >= b.cfg.MaxAccounts, b.accountByUser(*p.user) != nil
	b.mu.Unlock()
	switch {
	case full:
		writeError(w, http.StatusBadRequest, "CreateLimitReachedForResource", fmt.Sprintf("The create operation failed because the resource has reached the limit of possible resources (%d accounts).", b.cfg.MaxAccounts),
			"Either delete resources and resubmit the request if the operation failed or do not resubmit the request.", nil)
		return
	case taken:
		writeError(w, http.StatusConflict, "ResourceAlreadyExists", fmt.Sprintf("The requested resource of type ManagerAccount with the property UserName with the value %s already exists.", *p.user),
			"Do not repeat the create operation as the resource has already been created.", []string{"ManagerAccount", "UserName", *p.user})
		return
	}
	if b.passwordRefused(w, *p.password) {
		return
	}
	b.mu.Lock()
	if len(b.accounts) >= b.cfg.MaxAccounts || b.accountByUser(*p.user) != nil {
		b.mu.Unlock()
		writeError(w, http.StatusConflict, "ResourceAlreadyExists", "The account was created by another request meanwhile.",
			"Do not repeat the create operation as the resource has already been created.", nil)
		return
	}
	id := 1
	for b.accountByID(strconv.Itoa(id)) != nil {
		id++
	}
	a := &account{id: strconv.Itoa(id), user: *p.user, password: *p.password, role: *p.role, enabled: p.enabled == nil || *p.enabled}
	b.accounts = append(b.accounts, a)
	slices.SortFunc(b.accounts, func(x, y *account) int { i, _ := strconv.Atoi(x.id); j, _ := strconv.Atoi(y.id); return i - j })
	doc := b.manAccountDoc(a, b.src.Now())
	b.mu.Unlock()
	b.cfg.Log.Info("BMC account created", "bmc", b.cfg.Name, "user", a.user, "role", a.role)
	w.Header().Set("Location", accountsURI+"/"+a.id)
	writeJSON(w, http.StatusCreated, doc)
}

// deleteAccount removes an account (not account 1) and ends its
// sessions; an Administrator's only.
func (b *BMC) deleteAccount(w http.ResponseWriter, id string, who caller) {
	if b.role(who) != RoleAdministrator {
		forbidden(w)
		return
	}
	b.mu.Lock()
	a := b.accountByID(id)
	switch {
	case a == nil:
		b.mu.Unlock()
		notFound(w, accountsURI+"/"+id)
		return
	case id == "1":
		b.mu.Unlock()
		writeError(w, http.StatusBadRequest, "ResourceCannotBeDeleted", "The delete request failed because the resource requested cannot be deleted: account 1 is the BMC's built-in administrator.",
			"Do not attempt to delete a non-deletable resource.", nil)
		return
	}
	b.accounts = slices.DeleteFunc(b.accounts, func(x *account) bool { return x == a })
	b.endSessions(a.user, "")
	b.mu.Unlock()
	b.cfg.Log.Info("BMC account deleted", "bmc", b.cfg.Name, "user", a.user)
	w.WriteHeader(http.StatusNoContent)
}

// accountDoc is a document of the AccountService, or nil.
func (b *BMC) accountDoc(uri string) map[string]any {
	now := b.src.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case uri == accountServiceURI:
		c := b.cfg
		return map[string]any{"@odata.id": uri, "@odata.type": "#AccountService.v1_18_1.AccountService", "Id": "AccountService",
			"Name": "Account Service", "Description": "Account Service", "Status": map[string]any{"State": "Enabled", "Health": "OK"},
			"ServiceEnabled": true, "LocalAccountAuth": "Enabled",
			"MinPasswordLength": c.Policy.MinPasswordLength, "MaxPasswordLength": c.Policy.MaxPasswordLength,
			"AccountLockoutThreshold": c.LockoutThreshold, "AccountLockoutDuration": int(c.LockoutDuration / time.Second),
			"AccountLockoutCounterResetAfter": int(c.LockoutResetAfter / time.Second), "AccountLockoutCounterResetEnabled": true,
			"Accounts": ref(accountsURI), "Roles": ref(rolesURI),
			"Oem": map[string]any{"Seam": map[string]any{"PasswordCharacterClasses": c.Policy.CharacterClasses,
				"PasswordCharacters": "printable ASCII without spaces; classes: upper case letters, lower case letters, digits, other"}}}
	case uri == accountsURI:
		uris := make([]string, len(b.accounts))
		for i, a := range b.accounts {
			uris[i] = accountsURI + "/" + a.id
		}
		return collection(uri, "ManagerAccountCollection", "Accounts Collection", uris...)
	case strings.HasPrefix(uri, accountsURI+"/"):
		if a := b.accountByID(strings.TrimPrefix(uri, accountsURI+"/")); a != nil {
			return b.manAccountDoc(a, now)
		}
	case uri == rolesURI:
		uris := make([]string, len(roles))
		for i, r := range roles {
			uris[i] = rolesURI + "/" + r
		}
		return collection(uri, "RoleCollection", "Roles Collection", uris...)
	case strings.HasPrefix(uri, rolesURI+"/"):
		r := strings.TrimPrefix(uri, rolesURI+"/")
		if privs, ok := rolePrivileges[r]; ok {
			return map[string]any{"@odata.id": uri, "@odata.type": "#Role.v1_3_3.Role", "Id": r, "Name": "User Role",
				"Description": r + " User Role", "IsPredefined": true, "RoleId": r, "AssignedPrivileges": privs, "OemPrivileges": []string{}}
		}
	}
	return nil
}

// manAccountDoc is an account's document: never its password; with
// b.mu held.
func (b *BMC) manAccountDoc(a *account, now time.Time) map[string]any {
	return map[string]any{"@odata.id": accountsURI + "/" + a.id, "@odata.type": "#ManagerAccount.v1_14_1.ManagerAccount",
		"Id": a.id, "Name": "User Account", "Description": "User Account", "UserName": a.user, "RoleId": a.role,
		"Enabled": a.enabled, "Locked": a.locked(now), "Password": nil, "AccountTypes": []string{"Redfish"},
		"Links": map[string]any{"Role": ref(rolesURI + "/" + a.role)}}
}
