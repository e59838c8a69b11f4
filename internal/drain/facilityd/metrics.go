package facilityd

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/alarm/poll"
	"github.com/seamdc/seam/internal/drain"
	"github.com/seamdc/seam/internal/probe"
)

// Metrics are facilityd's Prometheus metrics (client_golang), on their
// own registry.
type Metrics struct {
	Registry *prometheus.Registry

	observations *prometheus.CounterVec
	intakeErrors *prometheus.CounterVec
	actions      *prometheus.CounterVec
	actionNodes  *prometheus.CounterVec
	refusals     *prometheus.CounterVec
	schedErrors  *prometheus.CounterVec
	latency      prometheus.Histogram
	heartbeat    prometheus.Gauge
	watchdog     prometheus.Gauge
	channel      *prometheus.GaugeVec
	point        *prometheus.GaugeVec
	readErrors   *prometheus.CounterVec
	unreachable  prometheus.Gauge

	mu     sync.Mutex
	stream *alarm.Stream
	ctl    *drain.Controller
}

// NewMetrics registers the metrics.
func NewMetrics() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	ns := "seam_facilityd_"
	m.observations = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "observations_total", Help: "Alarm observations taken, by type and source kind."}, []string{"type", "source"})
	m.intakeErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "intake_errors_total", Help: "Alarms refused at intake: malformed webhooks, traps with a wrong community or v3 key, unknown types or domains."}, []string{"source", "reason"})
	m.actions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "actions_total", Help: "Actions taken: hold, release, drain, undrain, signal."}, []string{"action"})
	m.actionNodes = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "action_nodes_total", Help: "Nodes acted on, by action."}, []string{"action"})
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "refusals_total", Help: "Refusals: storm (the storm guard), request (a release or request refused), unmapped (an alarm for no nodes)."}, []string{"reason"})
	m.schedErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "errors_total", Help: "Failures of the scheduler (it refused or timed out), the journal, the state file, Alertmanager's silences."}, []string{"op"})
	m.latency = prometheus.NewHistogram(prometheus.HistogramOpts{Name: ns + "drain_latency_seconds", Help: "From an alarm's raise to its domain's nodes drained.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30}})
	m.heartbeat = prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "heartbeat_timestamp_seconds", Help: "When facilityd's main loop last ran: its own dead man's switch (alert when it is older than a minute, or absent)."})
	m.watchdog = prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "watchdog_timestamp_seconds", Help: "When Alertmanager's Watchdog last arrived (0: never)."})
	m.channel = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "seam_channel_value", Help: "The last good reading of each bound channel, in its canonical unit (alarms 1/0); from facilityd's one poller."}, []string{"channel", "unit"})
	m.point = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "seam_alarm_point", Help: "Each polled alarm point, 1 active, 0 clear, with its alarm type and domain: what Prometheus rules turn into the alerts facilityd takes only through Alertmanager."}, []string{"device", "point", "type", "domain"})
	m.readErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: ns + "device_read_errors_total", Help: "Device reads that returned no good reading."}, []string{"device"})
	m.unreachable = prometheus.NewGauge(prometheus.GaugeOpts{Name: ns + "scheduler_unreachable", Help: "1 while the scheduler's controller does not answer (Slurm: scontrol ping): the holds wait in the ledger, their drains are sent when it answers."})
	m.Registry.MustRegister(m.observations, m.intakeErrors, m.actions, m.actionNodes, m.refusals, m.schedErrors, m.latency, m.heartbeat, m.watchdog, m.channel, m.point, m.readErrors, m.unreachable,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), m)
	return m
}

var (
	alarmDesc = prometheus.NewDesc("seam_facilityd_alarm_active", "Alarms of the merged stream: 1 active, 0 cleared.", []string{"type", "domain", "severity"}, nil)
	holdDesc  = prometheus.NewDesc("seam_facilityd_hold_nodes", "Nodes each hold holds.", []string{"owner", "kind"}, nil)
	heldDesc  = prometheus.NewDesc("seam_facilityd_held_nodes", "Nodes held by at least one hold.", nil, nil)
)

// Describe is prometheus.Collector's.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- alarmDesc
	ch <- holdDesc
	ch <- heldDesc
}

// Collect reports the stream's alarms and the holds.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	stream, ctl := m.stream, m.ctl
	m.mu.Unlock()
	if stream != nil {
		for _, a := range stream.Snapshot() {
			v := 0.0
			if a.Active {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(alarmDesc, prometheus.GaugeValue, v, string(a.Type), a.Domain.String(), a.Severity.String())
		}
	}
	if ctl != nil {
		snap := ctl.Snapshot()
		for _, h := range snap.Holds {
			ch <- prometheus.MustNewConstMetric(holdDesc, prometheus.GaugeValue, float64(len(h.Nodes)), string(h.Owner), h.Owner.Kind())
		}
		ch <- prometheus.MustNewConstMetric(heldDesc, prometheus.GaugeValue, float64(len(ctl.HeldNodes())))
	}
}

func (m *Metrics) attach(s *alarm.Stream, c *drain.Controller) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stream, m.ctl = s, c
}

// Observed counts an observation.
func (m *Metrics) Observed(o alarm.Observation) {
	m.observations.WithLabelValues(string(o.Type), string(o.Kind)).Inc()
}

// Refused counts an intake refusal.
func (m *Metrics) Refused(source, reason string) {
	m.intakeErrors.WithLabelValues(source, reason).Inc()
}

// Beat sets the heartbeat metric.
func (m *Metrics) Beat(now time.Time) { m.heartbeat.Set(float64(now.UnixNano()) / 1e9) }

// SchedulerUnreachable sets whether the scheduler's controller answers.
func (m *Metrics) SchedulerUnreachable(down bool) {
	v := 0.0
	if down {
		v = 1
	}
	m.unreachable.Set(v)
}

// Watchdog sets the last Watchdog's time.
func (m *Metrics) Watchdog(at time.Time) { m.watchdog.Set(float64(at.UnixNano()) / 1e9) }

// sampler exports a poll's readings of bound channels and alarm points.
func (m *Metrics) sampler(channels map[string][]string, points map[string][]poll.Point) func(probe.Sample) {
	return func(s probe.Sample) {
		good := false
		for _, r := range s.Readings {
			if r.Quality != probe.Good {
				continue
			}
			good = true
			k := s.Device + "/" + r.Point
			for _, ch := range channels[k] {
				m.channel.WithLabelValues(ch, strings.TrimSpace(r.Unit)).Set(r.Value)
			}
			for _, pt := range points[k] {
				m.point.WithLabelValues(s.Device, r.Point, string(pt.Type), pt.Domain.String()).Set(r.Value)
			}
		}
		if !good {
			m.readErrors.WithLabelValues(s.Device).Inc()
		}
	}
}

// The controller's metrics.

// Action is drain.Metrics'.
func (m *Metrics) Action(kind string, nodes int) {
	m.actions.WithLabelValues(kind).Inc()
	m.actionNodes.WithLabelValues(kind).Add(float64(nodes))
}

// Refusal is drain.Metrics'.
func (m *Metrics) Refusal(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// Error is drain.Metrics'.
func (m *Metrics) Error(op string) { m.schedErrors.WithLabelValues(op).Inc() }

// Latency is drain.Metrics'.
func (m *Metrics) Latency(d time.Duration) { m.latency.Observe(d.Seconds()) }
