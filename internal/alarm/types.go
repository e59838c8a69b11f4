// Package alarm is the facility's one alarm vocabulary and its one
// stream. The vocabulary (Defs) maps, once, the alarm types facilityd
// acts on, the contract's failure events (#Event in the schema), the
// alarm channels and device points that raise each type, the kind of
// domain each is raised for, and the Prometheus alert name it travels
// under: the schema's events, contractc vet, generated alert rules and
// facilityd's intake all read this table.
//
// Alarms arrive from several sources — device points polled through
// their profiles and bindings, SNMP traps and informs, Alertmanager's
// webhook, controller heartbeats — as Observations, and are merged into
// one Stream of Alarms deduplicated by (domain, type).
package alarm

import (
	"fmt"
	"slices"
	"strings"
)

// Type is an alarm type: a snake_case word of the vocabulary.
type Type string

// The alarm types. The design brief's severe set is
// cooling_redundancy_lost, ups_on_battery and leak_detected.
const (
	CoolingRedundancyLost Type = "cooling_redundancy_lost"
	UPSOnBattery          Type = "ups_on_battery"
	LeakDetected          Type = "leak_detected"
	FeedLost              Type = "feed_lost"
	CDUTrip               Type = "cdu_trip"
	PumpFault             Type = "pump_fault"
	HighSupplyTemp        Type = "high_supply_temp"
	LowFlow               Type = "low_flow"
	ControllerSilent      Type = "controller_silent"
	// DeviceSilent: a device facilityd polls stopped answering or
	// froze: its domain's alarms are unknown, not clear.
	DeviceSilent Type = "device_silent"
	// AlarmLate: a failure was seen (a pump faulted) but its alarm did
	// not follow within the contract's alarm_within.
	AlarmLate Type = "alarm_late"
	// AlarmPathDead: Alertmanager's Watchdog stopped arriving.
	AlarmPathDead Type = "alarm_path_dead"
	// DrainRefused: the storm guard refused a drain; it waits for a
	// person's approval.
	DrainRefused Type = "drain_refused"
	// UnmappedAlarm: an alarm arrived that names no known type or
	// domain, or a domain with no nodes.
	UnmappedAlarm Type = "unmapped_alarm"
	// PowerCapDrift: a node's BMC no longer has the power cap the caps
	// file says (a BMC reset, a firmware update).
	PowerCapDrift Type = "power_cap_drift"
	// CoolantSampleOverdue and CoolantOutOfLimits: a loop's water
	// chemistry is not sampled in time, or its latest sample is outside
	// its limits.
	CoolantSampleOverdue Type = "coolant_sample_overdue"
	CoolantOutOfLimits   Type = "coolant_out_of_limits"
)

// Severity says what an alarm means for the nodes.
type Severity int

// Severities.
const (
	Info    Severity = iota
	Warning          // pages; drains only when configured to
	Severe           // drains by default (the design brief's set)
)

func (s Severity) String() string { return [...]string{"info", "warning", "severe"}[s] }

// Def is one row of the vocabulary.
type Def struct {
	Type     Type
	Severity Severity
	// Domain is the kind of domain the alarm is raised for.
	Domain Kind
	// Events are the contract's failure events (#Event) whose alarm this
	// is: a failure clause of that event names an alarm channel that
	// raises this type.
	Events []string
	// Precursor is the alarm that shows the failure itself happened (a
	// pump's fault for a pump trip): seen without this alarm following
	// within the clause's alarm_within, it raises AlarmLate.
	Precursor Type
	// Points are the last segments of the alarm channels and the device
	// points that carry it ("l2/mb/alarm/redundancy-lost", point
	// "redundancy-lost").
	Points []string
	// Alertname is the Prometheus alert that carries it.
	Alertname string
	Help      string
}

// Defs is the vocabulary, in this order everywhere it is listed.
var Defs = []Def{
	{Type: CoolingRedundancyLost, Severity: Severe, Domain: CoolingLoop, Events: []string{"pump_trip", "cdu_trip"}, Precursor: PumpFault,
		Points: []string{"redundancy-lost"}, Alertname: "SeamCoolingRedundancyLost", Help: "a cooling loop runs without its N+1 pump or CDU"},
	{Type: UPSOnBattery, Severity: Severe, Domain: PowerBlock, Events: []string{"ups_on_battery"},
		Points: []string{"on-battery"}, Alertname: "SeamUPSOnBattery", Help: "a UPS carries its feed from its battery"},
	{Type: LeakDetected, Severity: Severe, Domain: CoolingLoop, Events: []string{"leak"},
		Points: []string{"leak"}, Alertname: "SeamLeakDetected", Help: "a leak sensor of a loop or CDU is wet"},
	{Type: FeedLost, Severity: Warning, Domain: PowerBlock, Events: []string{"feed_loss", "breaker_open"},
		Points: []string{"feed-lost", "breaker-open"}, Alertname: "SeamFeedLost", Help: "a feed of a power block is lost (its breaker open or its source gone)"},
	{Type: CDUTrip, Severity: Warning, Domain: CDU, Points: []string{"cdu-trip"}, Alertname: "SeamCDUTrip", Help: "a CDU stopped"},
	{Type: PumpFault, Severity: Warning, Domain: CoolingLoop, Points: []string{"pump-fault"}, Alertname: "SeamPumpFault", Help: "a pump of a loop faulted"},
	{Type: HighSupplyTemp, Severity: Warning, Domain: CoolingLoop, Points: []string{"high-supply-temp", "high-temp"}, Alertname: "SeamHighSupplyTemp", Help: "a loop's supply temperature is above its limit"},
	{Type: LowFlow, Severity: Warning, Domain: CoolingLoop, Points: []string{"low-flow"}, Alertname: "SeamLowFlow", Help: "a loop's flow is below its limit"},
	{Type: ControllerSilent, Severity: Warning, Domain: Module, Events: []string{"controller_silent"},
		Points: []string{"controller-silent"}, Alertname: "SeamControllerSilent", Help: "a module's controller stopped sending heartbeats"},
	{Type: DeviceSilent, Severity: Warning, Domain: Any, Alertname: "SeamDeviceSilent", Help: "a device facilityd polls stopped answering or froze: its alarms are unknown"},
	{Type: AlarmLate, Severity: Warning, Domain: Any, Alertname: "SeamAlarmLate", Help: "a failure was seen and its alarm did not follow within the contract's alarm_within"},
	{Type: AlarmPathDead, Severity: Warning, Domain: Site, Alertname: "SeamAlarmPathDead", Help: "Alertmanager's Watchdog stopped arriving: every release is refused"},
	{Type: DrainRefused, Severity: Warning, Domain: Any, Alertname: "SeamDrainRefused", Help: "the storm guard refused a drain: it waits for approval"},
	{Type: UnmappedAlarm, Severity: Warning, Domain: Any, Alertname: "SeamUnmappedAlarm", Help: "an alarm of an unknown type or domain, or of a domain with no nodes"},
	{Type: PowerCapDrift, Severity: Warning, Domain: Rack, Alertname: "SeamPowerCapDrift", Help: "a node's BMC no longer has its power cap (a BMC reset, a firmware update): facilityd writes it back"},
	{Type: CoolantSampleOverdue, Severity: Warning, Domain: CoolingLoop, Alertname: "SeamCoolantSampleOverdue", Help: "a loop's water-chemistry sample is overdue (its interval passed, or it was never sampled)"},
	{Type: CoolantOutOfLimits, Severity: Warning, Domain: CoolingLoop, Alertname: "SeamCoolantOutOfLimits", Help: "a loop's latest water-chemistry sample is outside its limits (conductivity, pH, glycol, particulates)"},
}

// Lookup returns the definition of t.
func Lookup(t Type) (Def, bool) {
	for _, d := range Defs {
		if d.Type == t {
			return d, true
		}
	}
	return Def{}, false
}

// Severe lists the types of severity Severe.
func SevereTypes() []Type {
	var out []Type
	for _, d := range Defs {
		if d.Severity == Severe {
			out = append(out, d.Type)
		}
	}
	return out
}

// ForEvent returns the type a failure event's alarm raises.
func ForEvent(event string) (Def, bool) {
	for _, d := range Defs {
		if slices.Contains(d.Events, event) {
			return d, true
		}
	}
	return Def{}, false
}

// ForPoint returns the type a channel or point name carries: its last
// path segment ("l2/mb/alarm/redundancy-lost") is one of a Def's Points.
func ForPoint(name string) (Def, bool) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	for _, d := range Defs {
		if slices.Contains(d.Points, name) {
			return d, true
		}
	}
	return Def{}, false
}

// ForAlert returns the type of a Prometheus alert: its seam_alarm label
// names the type, or its alertname is a Def's Alertname.
func ForAlert(labels map[string]string) (Def, error) {
	if t := labels[LabelType]; t != "" {
		if d, ok := Lookup(Type(t)); ok {
			return d, nil
		}
		return Def{}, fmt.Errorf("label %s=%q is no alarm type of the vocabulary (%s)", LabelType, t, typeList())
	}
	name := labels["alertname"]
	for _, d := range Defs {
		if d.Alertname == name {
			return d, nil
		}
	}
	return Def{}, fmt.Errorf("alert %q has no %s label and is no alert of the vocabulary (%s)", name, LabelType, typeList())
}

// Labels Prometheus alerts carry for facilityd.
const (
	LabelType   = "seam_alarm" // the alarm type
	LabelDomain = "domain"     // the domain, "cooling_loop=l2"
)

// WatchdogAlert is the always-firing alert of the dead man's switch.
const WatchdogAlert = "Watchdog"

func typeList() string {
	var s []string
	for _, d := range Defs {
		s = append(s, string(d.Type))
	}
	return strings.Join(s, ", ")
}
