package facilityd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/drain"
)

// Config is facilityd's configuration file (JSON; unknown fields are
// errors). Paths are relative to the file's directory.
type Config struct {
	// Contracts is the site's contract directory (its inventory/*.json
	// is the handover inventory); Inventory overrides the handover files.
	Contracts string   `json:"contracts"`
	Inventory []string `json:"inventory,omitempty"`
	// Binding is the site binding's directory ("" polls no devices).
	Binding string `json:"binding,omitempty"`
	// StateDir keeps state.json and the journals.
	StateDir string `json:"state_dir"`
	Listen   string `json:"listen"` // HTTP: /metrics, /healthz, /readyz, the API, the webhook
	// Auth and TLS are the listener's doors (auth.go): required beyond
	// loopback.
	Auth AuthConfig `json:"auth"`
	TLS  *TLSConfig `json:"tls,omitempty"`

	Scheduler SchedulerConfig `json:"scheduler"`
	Poll      PollConfig      `json:"poll"`
	// Actions per alarm type: drain or notify (default: the severe set
	// drains, the rest notify).
	Actions map[alarm.Type]drain.Action `json:"actions,omitempty"`
	// Intake per alarm type: which sources may raise it. "direct" (the
	// devices, traps, heartbeats, facilityd), "alertmanager", or "both"
	// (the default). A type taken only through Alertmanager is exported
	// from the devices as a metric for Prometheus' rules, and raised
	// when Alertmanager delivers it.
	Intake map[alarm.Type]string `json:"intake,omitempty"`

	Storm      StormConfig      `json:"storm"`
	Flap       FlapConfig       `json:"flap"`
	ClearFor   Duration         `json:"clear_for,omitempty"`
	Checkpoint CheckpointConfig `json:"checkpoint"`
	AlarmPath  AlarmPathConfig  `json:"alarm_path"`
	Approvals  ApprovalsConfig  `json:"approvals"`
	Traps      *TrapsConfig     `json:"traps,omitempty"`
	// Alertmanager is its base URL, for silences ("" reads none).
	Alertmanager string `json:"alertmanager,omitempty"`
	// DedupTTL is how long an Alertmanager alert facilityd took is
	// remembered after its last delivery (default 6h): at least the
	// receiver's repeat_interval.
	DedupTTL Duration `json:"dedup_ttl,omitempty"`
	// Heartbeats of vendor controllers.
	Heartbeats []HeartbeatConfig `json:"heartbeats,omitempty"`
	// Points adds alarm points the contract's channels do not bind.
	Points []PointConfig `json:"points,omitempty"`
	// Reconcile is how often the scheduler is read back (default 30 s).
	Reconcile Duration `json:"reconcile,omitempty"`
	// Chemistry: the loops' water chemistry from the lifecycle store (chem.go).
	Chemistry *ChemistryConfig `json:"chemistry,omitempty"`
	// Caps: the power caps kept applied through the BMCs (caps.go).
	Caps *CapsConfig `json:"caps,omitempty"`
	// Ledger: the lifecycle store that keeps the site's holds (ledger.go);
	// without one, facilityd's state file does.
	Ledger *LedgerConfig `json:"ledger,omitempty"`

	dir string
}

// SchedulerConfig says which scheduler facilityd drains.
type SchedulerConfig struct {
	Kind      string   `json:"kind"`                 // slurm, kubernetes, or none (dry runs without a scheduler)
	SlurmConf string   `json:"slurm_conf,omitempty"` // SLURM_CONF
	Bin       string   `json:"bin,omitempty"`        // the directory of scontrol, sinfo, squeue, scancel
	Timeout   Duration `json:"timeout,omitempty"`    // per command (default 30 s)
	// Kubernetes: see kube.go.
	Kubernetes *KubernetesConfig `json:"kubernetes,omitempty"`
}

// PollConfig is the one poller's schedule.
type PollConfig struct {
	Period  Duration `json:"period,omitempty"`  // default 500 ms
	Silence Duration `json:"silence,omitempty"` // device_silent after this without a good read (default 5 s)
}

// StormConfig is drain.Storm.
type StormConfig struct {
	MaxNodes    int      `json:"max_nodes,omitempty"` // default: the largest module's nodes
	MaxFraction float64  `json:"max_fraction,omitempty"`
	Window      Duration `json:"window,omitempty"`
}

// FlapConfig is drain.Flap.
type FlapConfig struct {
	Raises   int      `json:"raises,omitempty"`
	Within   Duration `json:"within,omitempty"`
	HoldDown Duration `json:"hold_down,omitempty"`
}

// CheckpointConfig is drain.Checkpoint.
type CheckpointConfig struct {
	Enabled bool     `json:"enabled"`
	Tag     string   `json:"tag,omitempty"`
	QOS     []string `json:"qos,omitempty"`
	Signal  string   `json:"signal,omitempty"`
}

// AlarmPathConfig is the dead man's switch on Alertmanager.
type AlarmPathConfig struct {
	// Watchdog is how long facilityd waits for Alertmanager's Watchdog
	// before alarm_path_dead (default 3 min: the Watchdog's route
	// repeats every minute). 0 with Required false: not watched.
	Watchdog Duration `json:"watchdog,omitempty"`
	Required bool     `json:"required"`
}

// ApprovalsConfig is who may approve.
type ApprovalsConfig struct {
	AllowedSigners string   `json:"allowed_signers"`
	MaxAge         Duration `json:"max_age,omitempty"`
}

// TrapsConfig is the SNMP trap receiver.
type TrapsConfig struct {
	Listen      string            `json:"listen"`
	Communities []string          `json:"communities,omitempty"` // references: env:NAME, file:PATH
	Users       []TrapUser        `json:"users,omitempty"`
	EngineID    string            `json:"engine_id,omitempty"`
	Rules       []TrapRule        `json:"rules"`
	Agents      map[string]string `json:"agents,omitempty"` // agent IP → domain
}

// TrapUser is a v3 authPriv user; passphrases are references.
type TrapUser struct {
	Name         string `json:"name"`
	AuthProtocol string `json:"auth_protocol"`
	AuthPass     string `json:"auth_passphrase"`
	PrivProtocol string `json:"priv_protocol"`
	PrivPass     string `json:"priv_passphrase"`
}

// TrapRule is trap.Rule.
type TrapRule struct {
	OID    string     `json:"oid"`
	Type   alarm.Type `json:"type"`
	Active bool       `json:"active"`
	Domain string     `json:"domain,omitempty"`
}

// HeartbeatConfig is a controller's heartbeat: a counter point of a
// device (each change is a beat), or POST /v1/heartbeats/NAME.
type HeartbeatConfig struct {
	Name    string   `json:"name"`
	Module  string   `json:"module"`
	Timeout Duration `json:"timeout"`
	Device  string   `json:"device,omitempty"`
	Point   string   `json:"point,omitempty"`
	// TokenFile holds this controller's own bearer token for POST
	// /v1/heartbeats/NAME: a stolen one beats for it alone.
	TokenFile string `json:"token_file,omitempty"`
}

// PointConfig is an extra alarm point.
type PointConfig struct {
	Device string     `json:"device"`
	Point  string     `json:"point"`
	Type   alarm.Type `json:"type,omitempty"` // default: from the point's name
	Domain string     `json:"domain"`
}

// Duration is a time.Duration written as "500ms", "3m".
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &durationError{value: string(b), err: err}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &durationError{value: string(b), err: err}
	}
	if v < 0 {
		return &durationError{value: string(b), err: fmt.Errorf("duration %s is negative", s)}
	}
	*d = Duration(v)
	return nil
}

// durationError is a value that is no duration; ParseConfig names its
// field and line.
type durationError struct {
	value string // as written in the file, quotes included
	err   error
}

func (e *durationError) Error() string {
	return fmt.Sprintf("%s is not a duration: write it as \"90s\", \"1m\" or \"1h30m\" (units ms, s, m, h): %v", e.value, e.err)
}

func (e *durationError) Unwrap() error { return e.err }

// MarshalJSON writes a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D is the duration, or def when unset.
func (d Duration) D(def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return time.Duration(d)
}

// LoadConfig reads and checks a configuration file.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseConfig(path, b)
}

// ParseConfig reads a configuration; errors name the file and line, an
// unknown field the nearest known one, a bad value its field.
func ParseConfig(path string, b []byte) (*Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, configError(path, b, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	c.dir = filepath.Dir(abs)
	if err := c.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// configError places a decoding error at its file and line and says
// what to write instead.
func configError(path string, b []byte, err error) error {
	lineAt := func(off int64) int { return 1 + bytes.Count(b[:min(max(int(off), 0), len(b))], []byte("\n")) }
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var de *durationError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("%s:%d: %w", path, lineAt(se.Offset), err)
	case errors.As(err, &de):
		// the field is the key written before the value
		re := regexp.MustCompile(`"([^"]+)"\s*:\s*` + regexp.QuoteMeta(de.value))
		if m := re.FindSubmatchIndex(b); m != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, lineAt(int64(m[0])), b[m[2]:m[3]], err)
		}
	case errors.As(err, &te):
		want := te.Type.String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Float64, reflect.Uint, reflect.Uint64:
			want = "a number"
		case reflect.Bool:
			want = "true or false"
		case reflect.String:
			want = "a string"
		case reflect.Slice:
			want = "a list [...]"
		case reflect.Struct, reflect.Map, reflect.Pointer:
			want = "an object {...}"
		}
		return fmt.Errorf("%s:%d: %s: want %s, got a JSON %s: %w", path, lineAt(te.Offset), te.Field, want, te.Value, err)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		line := 0
		if i := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `"\s*:`).FindIndex(b); i != nil {
			line = lineAt(int64(i[0]))
		}
		hint := cueload.DidYouMean(name, configFields())
		if line > 0 {
			return fmt.Errorf("%s:%d: unknown field %q: %s (docs/facilityd.md lists the fields): %w", path, line, name, hint, err)
		}
		return fmt.Errorf("%s: unknown field %q: %s (docs/facilityd.md lists the fields): %w", path, name, hint, err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// configFields are the JSON names of every field of the configuration,
// at any depth: what an unknown field may have meant.
func configFields() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen["\x00"+t.String()] {
			return
		}
		seen["\x00"+t.String()] = true
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				seen[name] = true
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Config]())
	var out []string
	for n := range seen {
		if !strings.HasPrefix(n, "\x00") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// Path resolves p against the config's directory.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

func (c *Config) check() error {
	var errs []error
	if c.Contracts == "" {
		errs = append(errs, errors.New("contracts: the site's contract directory is needed (its inventory names the nodes)"))
	}
	if c.StateDir == "" {
		errs = append(errs, errors.New("state_dir: where facilityd keeps its holds is needed"))
	}
	if c.Listen == "" {
		c.Listen = "127.0.0.1:9469"
	}
	switch c.Scheduler.Kind {
	case "slurm", "none":
	case "kubernetes":
		if c.Scheduler.Kubernetes == nil {
			c.Scheduler.Kubernetes = &KubernetesConfig{}
		}
	case "":
		errs = append(errs, errors.New("scheduler.kind: slurm, kubernetes or none"))
	default:
		errs = append(errs, fmt.Errorf("scheduler.kind %q: slurm, kubernetes or none", c.Scheduler.Kind))
	}
	for t, a := range c.Actions {
		if _, ok := alarm.Lookup(t); !ok {
			errs = append(errs, fmt.Errorf("actions: %q is no alarm type", t))
		}
		if a != drain.Drain && a != drain.Notify {
			errs = append(errs, fmt.Errorf("actions.%s: %q, want drain or notify", t, a))
		}
	}
	for t, i := range c.Intake {
		if _, ok := alarm.Lookup(t); !ok {
			errs = append(errs, fmt.Errorf("intake: %q is no alarm type", t))
		}
		if !slices.Contains([]string{"direct", "alertmanager", "both"}, i) {
			errs = append(errs, fmt.Errorf("intake.%s: %q, want direct, alertmanager or both", t, i))
		}
	}
	if c.Storm.MaxFraction < 0 || c.Storm.MaxFraction > 1 {
		errs = append(errs, fmt.Errorf("storm.max_fraction %v: a share between 0 and 1", c.Storm.MaxFraction))
	}
	if c.AlarmPath.Required && c.Alertmanager == "" && c.AlarmPath.Watchdog == 0 {
		c.AlarmPath.Watchdog = Duration(3 * time.Minute)
	}
	for i, h := range c.Heartbeats {
		if h.Name == "" || h.Module == "" || h.Timeout == 0 {
			errs = append(errs, fmt.Errorf("heartbeats[%d]: name, module and timeout are needed", i))
		}
		if (h.Device == "") != (h.Point == "") {
			errs = append(errs, fmt.Errorf("heartbeats[%d] %s: a device counter needs both device and point", i, h.Name))
		}
	}
	errs = append(errs, c.checkDoors()...)
	if c.Traps != nil {
		for i, r := range c.Traps.Rules {
			if _, ok := alarm.Lookup(r.Type); !ok || r.OID == "" {
				errs = append(errs, fmt.Errorf("traps.rules[%d]: an oid and an alarm type of the vocabulary are needed (got %q)", i, r.Type))
			}
		}
	}
	if err := c.Chemistry.check(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Caps.check(c.Binding); err != nil {
		errs = append(errs, err)
	}
	if err := c.Ledger.check(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Accepts reports whether a source kind may raise alarms of type t.
func (c *Config) Accepts(t alarm.Type, k alarm.SourceKind) bool {
	switch c.Intake[t] {
	case "direct":
		return k != alarm.FromAlertmanager
	case "alertmanager":
		return k == alarm.FromAlertmanager || k == alarm.FromFacilityd
	}
	return true
}
