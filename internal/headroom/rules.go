package headroom

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
)

// Rule is one Prometheus alerting rule.
type Rule struct {
	Alert, Expr, For string
	Labels           map[string]string
	Summary          string
}

// Group is a named group of rules.
type Group struct {
	Name  string
	Rules []Rule
}

// labelOrder is the order labels are written in; others follow sorted.
var labelOrder = []string{"severity", alarm.LabelType, alarm.LabelDomain, "receiver"}

// WriteGroups writes rule groups as Prometheus rule-file YAML (without
// the leading "groups:" line). facilityd's rules and headroom's are
// written by this one writer.
func WriteGroups(b *strings.Builder, groups ...Group) {
	for _, g := range groups {
		fmt.Fprintf(b, "- name: %s\n  rules:\n", g.Name)
		for _, r := range g.Rules {
			writeRule(b, r)
		}
	}
}

func writeRule(b *strings.Builder, r Rule) {
	fmt.Fprintf(b, "  - alert: %s\n    expr: %s\n", r.Alert, Quote(r.Expr))
	if r.For != "" {
		fmt.Fprintf(b, "    for: %s\n", r.For)
	}
	b.WriteString("    labels:\n")
	done := map[string]bool{}
	for _, k := range labelOrder {
		if v, ok := r.Labels[k]; ok {
			fmt.Fprintf(b, "      %s: %s\n", k, Quote(v))
			done[k] = true
		}
	}
	var rest []string
	for k := range r.Labels {
		if !done[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		fmt.Fprintf(b, "      %s: %s\n", k, Quote(r.Labels[k]))
	}
	fmt.Fprintf(b, "    annotations:\n      summary: %s\n", Quote(r.Summary))
}

// Quote writes a YAML double-quoted string.
func Quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// RuleOptions tune the generated rules.
type RuleOptions struct {
	// Headroom is the share of a limit below which headroom is low
	// (default 0.1: a feed above 90 % of its continuous limit).
	Headroom float64
	// For is how long a condition must hold (default 30s); SilentFor how
	// long a device may be down before it alerts (default 1m).
	For, SilentFor time.Duration
}

func (o RuleOptions) withDefaults() RuleOptions {
	if o.Headroom <= 0 {
		o.Headroom = 0.1
	}
	if o.For <= 0 {
		o.For = 30 * time.Second
	}
	if o.SilentFor <= 0 {
		o.SilentFor = time.Minute
	}
	return o
}

func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + "s"
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// pager and facility are the receivers of deploy/alertmanager: people,
// or facilityd (an alarm of the vocabulary it may act on).
func pager(severity string) map[string]string {
	return map[string]string{"severity": severity, "receiver": "pager"}
}

func facility(t alarm.Type, domain string) map[string]string {
	def, _ := alarm.Lookup(t)
	sev := "warning"
	if def.Severity == alarm.Severe {
		sev = "critical"
	}
	l := map[string]string{"severity": sev, alarm.LabelType: string(t), "receiver": "facilityd"}
	if domain != "" {
		l[alarm.LabelDomain] = domain
	}
	return l
}

// Rules returns the site's headroom alerting rules, generated from the
// model (from its contracts), never typed:
//
//   - headroom low or gone: a feed, block or rack PDU above 1−Headroom of
//     its limit, and above it; N-1 lost: a block whose feeds could not
//     carry its load with one feed lost, a loop whose heat is above its
//     CDU capacity with one CDU lost (cooling_redundancy_lost);
//   - a feed lost: its voltage below half its block's (feed_lost);
//   - a loop's supply temperature outside its contracts' band
//     (high_supply_temp above it) and flow below what its heat needs
//     or below its contracts' minimum (low_flow);
//   - a device silent, a channel stale: headroom unknown;
//   - at a grid boundary's point of interconnection: a ramp or swing
//     breach, a line or band RMS above its limit, and the live band's
//     coverage short of the clause's upper edge (grid.go).
//
// Alerts of a vocabulary type carry seam_alarm, domain and
// receiver=facilityd: facilityd takes them as it takes a device's alarm
// point. The others page people (receiver=pager).
func Rules(m *Model, o RuleOptions) []Group {
	o = o.withDefaults()
	forDur := promDuration(o.For)
	util := num(math.Round((1-o.Headroom)*1000) / 1000)
	pct := num(math.Round(o.Headroom*1000) / 10)
	power := Group{Name: "seam-headroom-power", Rules: []Rule{
		{Alert: "SeamFeedHeadroomLow", Expr: "seam_feed_utilization_ratio > " + util, For: forDur, Labels: pager("warning"),
			Summary: "feed {{ $labels.feed }} carries {{ $value | humanizePercentage }} of its continuous limit: less than " + pct + " % headroom"},
		{Alert: "SeamFeedOverLimit", Expr: "seam_feed_utilization_ratio > 1", For: forDur, Labels: pager("critical"),
			Summary: "feed {{ $labels.feed }} carries {{ $value | humanizePercentage }} of its continuous limit"},
		{Alert: "SeamBlockHeadroomLow", Expr: "seam_block_headroom_watts / seam_block_rating_watts < " + num(o.Headroom), For: forDur, Labels: pager("warning"),
			Summary: "power block {{ $labels.block }} has {{ $value | humanizePercentage }} of its rating left"},
		{Alert: "SeamPowerN1Lost", Expr: "-seam_block_headroom_one_feed_lost_watts > 0", For: forDur, Labels: pager("critical"),
			Summary: "power block {{ $labels.block }}: with one feed lost, a surviving feed would carry {{ $value | humanize }}W more than its continuous limit"},
		{Alert: "SeamPDUHeadroomLow", Expr: "seam_pdu_headroom_one_lost_watts / seam_pdu_limit_watts < " + num(o.Headroom), For: forDur, Labels: pager("warning"),
			Summary: "rack PDU {{ $labels.pdu }}: with the rack's other PDU lost, {{ $value | humanizePercentage }} of its limit would be left"},
	}}
	for _, b := range m.Blocks {
		if len(b.Feeds) == 0 || b.Feeds[0].NominalV <= 0 {
			continue
		}
		v := b.Feeds[0].NominalV
		power.Rules = append(power.Rules, Rule{Alert: "SeamFeedVoltageLost",
			Expr: fmt.Sprintf("seam_feed_voltage_volts{block=%q} < %s", b.ID, num(v/2)), For: forDur,
			Labels:  facility(alarm.FeedLost, b.Domain),
			Summary: fmt.Sprintf("feed {{ $labels.feed }} reads {{ $value }} V, below half its block's %s V: the feed is lost", num(v))})
	}
	cooling := Group{Name: "seam-headroom-cooling"}
	for _, l := range m.Loops {
		sel := fmt.Sprintf("{loop=%q}", l.ID)
		cooling.Rules = append(cooling.Rules, Rule{Alert: "SeamLoopN1Lost", Expr: "-seam_loop_headroom_watts" + sel + " > 0", For: forDur,
			Labels:  facility(alarm.CoolingRedundancyLost, l.Domain),
			Summary: fmt.Sprintf("loop %s carries {{ $value | humanize }}W more heat than its CDUs remove with one lost (%s)", l.ID, l.Redundancy)},
			Rule{Alert: "SeamLoopFlowBelowNeed", Expr: "seam_loop_flow_ratio" + sel + " < 1", For: forDur, Labels: facility(alarm.LowFlow, l.Domain),
				Summary: fmt.Sprintf("loop %s flows {{ $value | humanizePercentage }} of what its heat needs at its design ΔT %s K", l.ID, num(l.DeltaTK))})
		if !isInf(l.SupplyH) {
			cooling.Rules = append(cooling.Rules, Rule{Alert: "SeamSupplyTempHigh", Expr: fmt.Sprintf("seam_loop_supply_temperature_celsius%s > %s", sel, num(l.SupplyH)), For: forDur,
				Labels:  facility(alarm.HighSupplyTemp, l.Domain),
				Summary: fmt.Sprintf("loop %s supplies {{ $value }} °C, above %s °C (%s)", l.ID, num(l.SupplyH), l.BandFrom)})
		}
		if !isInf(l.SupplyLo) {
			cooling.Rules = append(cooling.Rules, Rule{Alert: "SeamSupplyTempLow", Expr: fmt.Sprintf("seam_loop_supply_temperature_celsius%s < %s", sel, num(l.SupplyLo)), For: forDur,
				Labels:  withLoop(pager("warning"), l.ID),
				Summary: fmt.Sprintf("loop %s supplies {{ $value }} °C, below %s °C, the low side of its contracts' band (%s)", l.ID, num(l.SupplyLo), l.BandFrom)})
		}
		if l.FlowMin > 0 {
			cooling.Rules = append(cooling.Rules, Rule{Alert: "SeamLoopFlowLow", Expr: fmt.Sprintf("seam_loop_flow_liters_per_second%s < %s", sel, num(math.Round(l.FlowMin/60*1000)/1000)), For: forDur,
				Labels:  facility(alarm.LowFlow, l.Domain),
				Summary: fmt.Sprintf("loop %s flows {{ $value }} L/s, below the %s L/min its contracts guarantee (%s)", l.ID, num(l.FlowMin), l.FlowFrom)})
		}
	}
	silent := promDuration(o.SilentFor)
	stale := Group{Name: "seam-headroom-stale", Rules: []Rule{
		{Alert: "SeamDeviceDown", Expr: "seam_device_up == 0", For: silent, Labels: pager("warning"),
			Summary: "device {{ $labels.device }} gives no fresh good reading: the headroom it measures is unknown"},
		{Alert: "SeamChannelStale", Expr: "seam_channel_stale == 1", For: silent, Labels: pager("warning"),
			Summary: "channel {{ $labels.channel }} at {{ $labels.at }} has no fresh plausible reading: its headroom is not exported"},
	}}
	groups := []Group{power, cooling, stale}
	if gr := gridRules(m, o); len(gr) > 0 {
		groups = append(groups, Group{Name: "seam-headroom-grid", Rules: gr})
	}
	return groups
}

func withLoop(l map[string]string, loop string) map[string]string {
	l["loop"] = loop
	return l
}
