package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Silences reads Alertmanager's active silences (GET /api/v2/silences)
// so that a silence set for planned maintenance, or by a running SAT or
// IST plan, suppresses facilityd's drains for the alarms it matches —
// those that reach facilityd straight from the devices as well as
// those Alertmanager delivers.
type Silences struct {
	URL    string // Alertmanager's base URL
	Client *http.Client
	// Cache is how long one read serves (default 5 s).
	Cache time.Duration
	Now   func() time.Time

	mu      sync.Mutex
	read    time.Time
	cached  []Silence
	lastErr error
}

// Silence is an Alertmanager silence, as the v2 API writes it.
type Silence struct {
	ID       string                 `json:"id"`
	Status   struct{ State string } `json:"status"`
	Matchers []Matcher              `json:"matchers"`
	StartsAt time.Time              `json:"startsAt"`
	EndsAt   time.Time              `json:"endsAt"`
	By       string                 `json:"createdBy"`
	Comment  string                 `json:"comment"`
}

// Matcher is one matcher of a silence.
type Matcher struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	IsRegex bool   `json:"isRegex"`
	IsEqual *bool  `json:"isEqual"` // absent before Alertmanager 0.22: equal
}

// AlertLabels are the labels an alarm carries as a Prometheus alert,
// which silences match.
func AlertLabels(t Type, d Domain) map[string]string {
	def, _ := Lookup(t)
	return map[string]string{"alertname": def.Alertname, LabelType: string(t), LabelDomain: d.String(), string(d.Kind): d.Value}
}

// Matching returns the active silence that matches the alarm, if any.
// When Alertmanager cannot be read, the error says so and nothing is
// silenced: a drain is never held back by a dead Alertmanager.
func (s *Silences) Matching(ctx context.Context, t Type, d Domain) (*Silence, error) {
	list, err := s.list(ctx)
	if err != nil {
		return nil, err
	}
	labels := AlertLabels(t, d)
	for i := range list {
		if list[i].Status.State == "active" && list[i].matches(labels) {
			return &list[i], nil
		}
	}
	return nil, nil
}

func (s *Silences) list(ctx context.Context) ([]Silence, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	cache := s.Cache
	if cache <= 0 {
		cache = 5 * time.Second
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.read.IsZero() && now().Sub(s.read) < cache {
		return s.cached, s.lastErr
	}
	s.read = now()
	s.cached, s.lastErr = s.fetch(ctx)
	return s.cached, s.lastErr
}

func (s *Silences) fetch(ctx context.Context) ([]Silence, error) {
	c := s.Client
	if c == nil {
		c = &http.Client{Timeout: 5 * time.Second}
	}
	url := strings.TrimRight(s.URL, "/") + "/api/v2/silences"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading Alertmanager's silences: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("reading Alertmanager's silences from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("reading Alertmanager's silences from %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	var out []Silence
	if err := json.Unmarshal(body, &out); err != nil {
		return nil, fmt.Errorf("Alertmanager's silences from %s: %w", url, err)
	}
	return out, nil
}

func (s *Silence) matches(labels map[string]string) bool {
	if len(s.Matchers) == 0 {
		return false
	}
	for _, m := range s.Matchers {
		v := labels[m.Name]
		ok := v == m.Value
		if m.IsRegex {
			re, err := regexp.Compile("^(?:" + m.Value + ")$")
			if err != nil {
				return false
			}
			ok = re.MatchString(v)
		}
		if m.IsEqual != nil && !*m.IsEqual {
			ok = !ok
		}
		if !ok {
			return false
		}
	}
	return true
}
