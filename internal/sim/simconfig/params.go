package simconfig

import "github.com/seamdc/seam/internal/units"

// Power are a power block's physics parameters, in canonical units
// except where noted.
type Power struct {
	Impedance            float64 // per unit
	VoltageTau           float64 // s
	StaticDroop          float64 // per unit
	FrequencyImpedance   float64 // per unit
	FrequencyTau         float64 // s
	BreakerPickup        float64 // multiple of rating
	BreakerTau           float64 // s
	BreakerInstantaneous float64 // multiple of rating
	BreakerClearing      float64 // s
	UPSRecharge          float64 // share of the UPS rating
	FeedLostDelay        float64 // s
	OnBatteryDelay       float64 // s
	AlarmClear           float64 // s
	// a UPS transfer setting of every feed of the block, replacing the
	// contract's (a defect: a UPS set to transfer inside the utility's
	// ride-through curve); 0: the contract's
	UPSTransferPU    float64 // per unit
	UPSTransferAfter float64 // s
	UPSBackAfter     float64 // s
}

// DefaultPower is a 2.5 MW block with a UPS per feed: a 0.73 MW step on
// one feed dips 5.2 % and recovers to ±3 % in 0.45 s (ISO 8528-5 G3
// allows −15 % and 4 s); IEC 60255-8 thermal element with a 300 s time
// constant (≈ 11 s at 6 × rating).
var DefaultPower = Power{
	Impedance: 0.18, VoltageTau: 0.8, FrequencyImpedance: 0.013, FrequencyTau: 1.5,
	BreakerPickup: 1.13, BreakerTau: 300, BreakerInstantaneous: 10, BreakerClearing: 0.03,
	UPSRecharge: 0.1, FeedLostDelay: 0.3, OnBatteryDelay: 0.5, AlarmClear: 2,
}

// Cooling are a loop's physics parameters.
type Cooling struct {
	FacilityWater    float64 // degC
	PrimaryFlow      float64 // L/min, every valve open
	SupplyPipe       float64 // L of coolant in the supply piping
	ReturnPipe       float64 // L in the return piping
	ITVolume         float64 // L-equivalent of cold plates and manifolds
	CDUVolume        float64 // L-equivalent of the CDUs' heat exchangers
	PumpEfficiency   float64 // per unit
	ValveStroke      float64 // s
	ValveAuthority   float64 // 0..1
	ProportionalBand float64 // K
	IntegralTime     float64 // s
	FlowSetpoint     float64 // L/min; 0: from the loop's design heat and ΔT
	FlowBand         float64 // % of setpoint
	FlowIntegral     float64 // s
	PumpRamp         float64 // s
	PumpCoast        float64 // s
	DesignDP         float64 // kPa
	RedundancyDelay  float64 // s
	LeakDelay        float64 // s
	HighTempDelay    float64 // s
	HighTempMargin   float64 // K
	AlarmClear       float64 // s
	RedundancyAlarm  bool
}

// DefaultCooling is a W27 facility-water loop with PG25 on the IT side
// and 1.4 m³ of piping (13 s each way at 3300 L/min): a 30 → 100 % heat
// step of 1.87 MW peaks about 0.5 K above a 30 degC setpoint and settles
// within minutes; losing one of six pumps dips the flow about 3 % for a
// few seconds.
var DefaultCooling = Cooling{
	FacilityWater: 26, PrimaryFlow: 4500, SupplyPipe: 700, ReturnPipe: 700, ITVolume: 300, CDUVolume: 100,
	PumpEfficiency: 0.6, ValveStroke: 30, ValveAuthority: 0.5, ProportionalBand: 5, IntegralTime: 20,
	FlowBand: 100, FlowIntegral: 5, PumpRamp: 20, PumpCoast: 1, DesignDP: 120,
	RedundancyDelay: 2, LeakDelay: 1, HighTempDelay: 10, HighTempMargin: 3, AlarmClear: 5,
	RedundancyAlarm: true,
}

// Controls are a controls network's parameters.
type Controls struct {
	HeartbeatPeriod float64 // s
	SilentAfter     float64 // s
}

// DefaultControls: a heartbeat every second, an alarm once one is 2.5 s old.
var DefaultControls = Controls{HeartbeatPeriod: 1, SilentAfter: 2.5}

// LoadBank are the load banks' parameters.
type LoadBank struct {
	Watchdog float64 // s
	Remote   bool
}

// DefaultLoadBank drops load after 3 s without a heartbeat.
var DefaultLoadBank = LoadBank{Watchdog: 3, Remote: true}

// field is one settable parameter of P: its name in the config, the
// dimension it takes (Ratio fields are stored per unit unless raw), or
// number/bool.
type field[P any] struct {
	name    string
	dim     units.Dimension // "" with number or boolean set
	perUnit bool            // a % stored as a fraction
	set     func(*P, float64)
	setBool func(*P, bool)
}

func q[P any](name string, dim units.Dimension, set func(*P, float64)) field[P] {
	return field[P]{name: name, dim: dim, set: set}
}

func pu[P any](name string, set func(*P, float64)) field[P] {
	return field[P]{name: name, dim: units.Ratio, perUnit: true, set: set}
}

func num[P any](name string, set func(*P, float64)) field[P] {
	return field[P]{name: name, set: set}
}

var powerFields = []field[Power]{
	pu("impedance", func(p *Power, v float64) { p.Impedance = v }),
	q("voltage_tau", units.Time, func(p *Power, v float64) { p.VoltageTau = v }),
	pu("static_droop", func(p *Power, v float64) { p.StaticDroop = v }),
	pu("frequency_impedance", func(p *Power, v float64) { p.FrequencyImpedance = v }),
	q("frequency_tau", units.Time, func(p *Power, v float64) { p.FrequencyTau = v }),
	num("breaker_pickup", func(p *Power, v float64) { p.BreakerPickup = v }),
	q("breaker_tau", units.Time, func(p *Power, v float64) { p.BreakerTau = v }),
	num("breaker_instantaneous", func(p *Power, v float64) { p.BreakerInstantaneous = v }),
	q("breaker_clearing", units.Time, func(p *Power, v float64) { p.BreakerClearing = v }),
	pu("ups_recharge", func(p *Power, v float64) { p.UPSRecharge = v }),
	q("feed_lost_delay", units.Time, func(p *Power, v float64) { p.FeedLostDelay = v }),
	q("on_battery_delay", units.Time, func(p *Power, v float64) { p.OnBatteryDelay = v }),
	q("alarm_clear", units.Time, func(p *Power, v float64) { p.AlarmClear = v }),
	pu("ups_transfer_voltage", func(p *Power, v float64) { p.UPSTransferPU = v }),
	q("ups_transfer_after", units.Time, func(p *Power, v float64) { p.UPSTransferAfter = v }),
	q("ups_back_after", units.Time, func(p *Power, v float64) { p.UPSBackAfter = v }),
}

var coolingFields = []field[Cooling]{
	q("facility_water", units.Temperature, func(c *Cooling, v float64) { c.FacilityWater = v }),
	q("primary_flow", units.Flow, func(c *Cooling, v float64) { c.PrimaryFlow = v }),
	num("supply_pipe_litres", func(c *Cooling, v float64) { c.SupplyPipe = v }),
	num("return_pipe_litres", func(c *Cooling, v float64) { c.ReturnPipe = v }),
	num("it_litres", func(c *Cooling, v float64) { c.ITVolume = v }),
	num("cdu_litres", func(c *Cooling, v float64) { c.CDUVolume = v }),
	pu("pump_efficiency", func(c *Cooling, v float64) { c.PumpEfficiency = v }),
	q("valve_stroke", units.Time, func(c *Cooling, v float64) { c.ValveStroke = v }),
	num("valve_authority", func(c *Cooling, v float64) { c.ValveAuthority = v }),
	q("proportional_band", units.TempDiff, func(c *Cooling, v float64) { c.ProportionalBand = v }),
	q("integral_time", units.Time, func(c *Cooling, v float64) { c.IntegralTime = v }),
	q("flow_setpoint", units.Flow, func(c *Cooling, v float64) { c.FlowSetpoint = v }),
	q("flow_band", units.Ratio, func(c *Cooling, v float64) { c.FlowBand = v }),
	q("flow_integral", units.Time, func(c *Cooling, v float64) { c.FlowIntegral = v }),
	q("pump_ramp", units.Time, func(c *Cooling, v float64) { c.PumpRamp = v }),
	q("pump_coast", units.Time, func(c *Cooling, v float64) { c.PumpCoast = v }),
	q("design_dp", units.Pressure, func(c *Cooling, v float64) { c.DesignDP = v }),
	q("redundancy_delay", units.Time, func(c *Cooling, v float64) { c.RedundancyDelay = v }),
	q("leak_delay", units.Time, func(c *Cooling, v float64) { c.LeakDelay = v }),
	q("high_temp_delay", units.Time, func(c *Cooling, v float64) { c.HighTempDelay = v }),
	q("high_temp_margin", units.TempDiff, func(c *Cooling, v float64) { c.HighTempMargin = v }),
	q("alarm_clear", units.Time, func(c *Cooling, v float64) { c.AlarmClear = v }),
	{name: "redundancy_alarm", setBool: func(c *Cooling, b bool) { c.RedundancyAlarm = b }},
}

var controlsFields = []field[Controls]{
	q("heartbeat_period", units.Time, func(c *Controls, v float64) { c.HeartbeatPeriod = v }),
	q("silent_after", units.Time, func(c *Controls, v float64) { c.SilentAfter = v }),
}

var loadBankFields = []field[LoadBank]{
	q("watchdog", units.Time, func(l *LoadBank, v float64) { l.Watchdog = v }),
	{name: "remote", setBool: func(l *LoadBank, b bool) { l.Remote = b }},
}
