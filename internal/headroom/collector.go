package headroom

import (
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seamdc/seam/internal/probe"
)

// Collector keeps the last good reading of each channel, from the one
// poller's samples (Take), and exports the headroom at each scrape.
// A reading older than StaleAfter is stale: the series it feeds are not
// exported (Prometheus marks them stale), seam_channel_stale says which,
// and seam_device_up goes to 0 for a device with no fresh good reading.
type Collector struct {
	model *Model
	// byPoint maps "device/point" to the channels bound to it.
	byPoint    map[string][]string
	now        func() time.Time
	staleAfter time.Duration

	mu       sync.Mutex
	readings map[string]Reading
	devices  map[string]*device
	energy   map[[2]string]float64 // device, point → joules
	pue      *PUE                  // measured PUE (pue.go), or nil
	grid     *GridWatch            // the live grid figures (grid.go), or nil
}

type device struct {
	lastGood time.Time
	good     bool // the last read gave a good reading
}

// NewCollector returns a collector for the model. byPoint maps
// "device/point" to the channel names bound to it (the binding's);
// devices lists every polled device, so that one never heard from is
// down from the start.
func NewCollector(m *Model, byPoint map[string][]string, devices []string, now func() time.Time, staleAfter time.Duration) *Collector {
	c := &Collector{model: m, byPoint: byPoint, now: now, staleAfter: staleAfter,
		readings: map[string]Reading{}, devices: map[string]*device{}, energy: map[[2]string]float64{}}
	for _, d := range devices {
		c.devices[d] = &device{}
	}
	c.pue = defaultPUE(m, staleAfter)
	return c
}

// joulesPer is the energy units a device's counter may be in.
var joulesPer = map[string]float64{"J": 1, "kJ": 1e3, "Wh": 3600, "kWh": 3.6e6, "MWh": 3.6e9}

// Take records one read of one device; it is the poller's Sample hook.
func (c *Collector) Take(s probe.Sample) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.devices[s.Device]
	if d == nil {
		d = &device{}
		c.devices[s.Device] = d
	}
	good := false
	for _, r := range s.Readings {
		if r.Quality != probe.Good {
			continue
		}
		good = true
		at := r.Received
		if at.IsZero() {
			at = s.Done
		}
		for _, ch := range c.byPoint[s.Device+"/"+r.Point] {
			c.readings[ch] = Reading{Value: r.Value, At: at}
			c.pue.Take(ch, Reading{Value: r.Value, At: at})
			c.grid.Take(ch, Reading{Value: r.Value, At: at})
		}
		if k, ok := joulesPer[strings.TrimSpace(r.Unit)]; ok {
			c.energy[[2]string{s.Device, r.Point}] = r.Value * k
		}
	}
	d.good = good
	if good {
		d.lastGood = s.Done
	}
}

var (
	feedLabels  = []string{"module", "block", "feed"}
	blockLabels = []string{"module", "block"}
	pduLabels   = []string{"module", "rack", "pdu", "feed"}
	loopLabels  = []string{"module", "loop"}

	feedPower    = desc("seam_feed_power_watts", "Measured power of a feed.", feedLabels)
	feedCurrent  = desc("seam_feed_current_amperes", "Measured current of a feed.", feedLabels)
	feedVolts    = desc("seam_feed_voltage_volts", "Measured voltage of a feed (line-line; the lowest of its channels).", feedLabels)
	feedLimit    = desc("seam_feed_limit_watts", "A feed's continuous limit from the contract: √3·V·I·PF of its breaker × its derating.", feedLabels)
	feedDerating = desc("seam_feed_derating_ratio", "The share of a feed breaker's rating that may carry continuous load (0.8 unless the contract states one).", feedLabels)
	feedHead     = desc("seam_feed_headroom_watts", "A feed's continuous limit less its measured power.", feedLabels)
	feedUtil     = desc("seam_feed_utilization_ratio", "A feed's measured power over its continuous limit (0-1; above 1 is over).", feedLabels)
	feedLost     = desc("seam_feed_headroom_one_lost_watts", "A feed's headroom with feed `lost` of its block lost: its load plus an even share of the lost feed's, against its limit.", append(feedLabels[:3:3], "lost"))
	blockPower   = desc("seam_block_power_watts", "Measured power of a power block: the sum of its feeds.", blockLabels)
	blockRating  = desc("seam_block_rating_watts", "A power block's rating from the contract.", blockLabels)
	blockHead    = desc("seam_block_headroom_watts", "A power block's rating less its measured power.", blockLabels)
	blockLost    = desc("seam_block_headroom_one_feed_lost_watts", "A power block's N-1 headroom: the least headroom of any of its feeds with any one feed lost.", blockLabels)
	pduPower     = desc("seam_pdu_power_watts", "Measured power of a rack PDU.", pduLabels)
	pduLimit     = desc("seam_pdu_limit_watts", "A rack PDU's continuous limit: √3·V·I·PF of its breaker × its derating.", pduLabels)
	pduHead      = desc("seam_pdu_headroom_watts", "A rack PDU's continuous limit less its measured power.", pduLabels)
	pduLost      = desc("seam_pdu_headroom_one_lost_watts", "A rack PDU's headroom with one other PDU of its rack lost: the rack's measured load shared by the rest.", pduLabels)
	loopSupply   = desc("seam_loop_supply_temperature_celsius", "Measured supply temperature of a cooling loop.", loopLabels)
	loopReturn   = desc("seam_loop_return_temperature_celsius", "Measured return temperature of a cooling loop.", loopLabels)
	loopMin      = desc("seam_loop_supply_temperature_min_celsius", "The lowest supply temperature the loop's contracts allow.", loopLabels)
	loopMax      = desc("seam_loop_supply_temperature_max_celsius", "The highest supply temperature the loop's contracts allow.", loopLabels)
	loopFlow     = desc("seam_loop_flow_liters_per_second", "Measured coolant flow of a loop.", loopLabels)
	loopHeat     = desc("seam_loop_heat_watts", "Heat a loop carries: Q = ṁ·cp·ΔT of its measured flow and temperatures, else its modules' heat channels.", loopLabels)
	loopCap      = desc("seam_loop_capacity_watts", "A loop's CDU capacity from the contract, with every CDU (lost=\"none\") and with one lost per its redundancy (lost=\"one_cdu\").", append(loopLabels[:2:2], "lost"))
	loopHead     = desc("seam_loop_headroom_watts", "A loop's CDU capacity with one CDU lost (per its redundancy) less its measured heat.", loopLabels)
	loopNeed     = desc("seam_loop_flow_needed_liters_per_second", "The flow the loop's measured heat needs at its design ΔT.", loopLabels)
	loopRatio    = desc("seam_loop_flow_ratio", "A loop's measured flow over the flow its heat needs (below 1: too little).", loopLabels)
	chanStale    = desc("seam_channel_stale", "1 when a channel headroom reads has no fresh, plausible good reading: the series it feeds are not exported.", []string{"channel", "at"})
	chanAt       = desc("seam_channel_last_good_timestamp_seconds", "When a channel's last good reading was taken.", []string{"channel", "at"})
	devUp        = desc("seam_device_up", "1 when the device's last read gave a good reading within the staleness limit, else 0 (silent or failing).", []string{"device"})
	devAt        = desc("seam_device_last_good_timestamp_seconds", "When the device last gave a good reading (0: never).", []string{"device"})
	energy       = desc("seam_energy_joules_total", "A device's energy counter, in joules.", []string{"device", "point"})
)

func desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var descs = []*prometheus.Desc{feedPower, feedCurrent, feedVolts, feedLimit, feedDerating, feedHead, feedUtil, feedLost,
	blockPower, blockRating, blockHead, blockLost, pduPower, pduLimit, pduHead, pduLost,
	loopSupply, loopReturn, loopMin, loopMax, loopFlow, loopHeat, loopCap, loopHead, loopNeed, loopRatio,
	chanStale, chanAt, devUp, devAt, energy}

// Describe is prometheus.Collector's.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
}

// Collect computes the headroom from the readings at this instant.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	c.mu.Lock()
	res := Compute(c.model, c.readings, now, c.staleAfter)
	type devState struct {
		name string
		d    device
	}
	devs := make([]devState, 0, len(c.devices))
	for name, d := range c.devices {
		devs = append(devs, devState{name, *d})
	}
	readAt := make(map[string]time.Time, len(c.readings))
	for k, r := range c.readings {
		readAt[k] = r.At
	}
	pue, grid := c.pue, c.grid
	energies := make(map[[2]string]float64, len(c.energy))
	for k, v := range c.energy {
		energies[k] = v
	}
	c.mu.Unlock()

	gauge := func(d *prometheus.Desc, v Value, labels ...string) {
		if v.OK {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v.V, labels...)
		}
	}
	for _, f := range res.Feeds {
		l := []string{f.Feed.Module, f.Feed.Block, f.Feed.ID}
		gauge(feedLimit, val(f.Feed.LimitW), l...)
		gauge(feedDerating, val(f.Feed.Derating), l...)
		gauge(feedPower, f.Power, l...)
		gauge(feedCurrent, f.Current, l...)
		gauge(feedVolts, f.Volts, l...)
		gauge(feedHead, f.Headroom, l...)
		gauge(feedUtil, f.Utilization, l...)
		for _, lost := range f.LostHeadroom {
			gauge(feedLost, lost.Headroom, append(l, lost.Lost)...)
		}
	}
	for _, b := range res.Blocks {
		l := []string{b.Block.Module, b.Block.ID}
		if b.Block.RatingW > 0 {
			gauge(blockRating, val(b.Block.RatingW), l...)
		}
		gauge(blockPower, b.Power, l...)
		gauge(blockHead, b.Headroom, l...)
		gauge(blockLost, b.LostHeadroom, l...)
	}
	for _, p := range res.PDUs {
		l := []string{p.PDU.Module, p.PDU.Rack, p.PDU.ID, p.PDU.Feed}
		gauge(pduLimit, val(p.PDU.LimitW), l...)
		gauge(pduPower, p.Power, l...)
		gauge(pduHead, p.Headroom, l...)
		gauge(pduLost, p.LostHeadroom, l...)
	}
	for _, lp := range res.Loops {
		l := []string{lp.Loop.Module, lp.Loop.ID}
		gauge(loopCap, val(lp.Loop.CapacityW), append(l, "none")...)
		gauge(loopCap, val(lp.Loop.CapacityLostW), append(l, "one_cdu")...)
		if lp.Loop.BandFrom != "" {
			gauge(loopMin, Value{V: lp.SupplyLo, OK: !isInf(lp.SupplyLo)}, l...)
			gauge(loopMax, Value{V: lp.SupplyHi, OK: !isInf(lp.SupplyHi)}, l...)
		}
		gauge(loopSupply, lp.Supply, l...)
		gauge(loopReturn, lp.Return, l...)
		gauge(loopFlow, lp.Flow, l...)
		gauge(loopHeat, lp.Heat, l...)
		gauge(loopHead, lp.Headroom, l...)
		gauge(loopNeed, lp.FlowNeeded, l...)
		gauge(loopRatio, lp.FlowRatio, l...)
	}
	for _, name := range c.model.channels() {
		at := c.model.Meters[name].At
		v := 0.0
		if res.Stale[name] {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(chanStale, prometheus.GaugeValue, v, name, at)
		if t, ok := readAt[name]; ok {
			ch <- prometheus.MustNewConstMetric(chanAt, prometheus.GaugeValue, seconds(t), name, at)
		}
	}
	for _, d := range devs {
		up := 0.0
		if d.d.good && now.Sub(d.d.lastGood) <= c.staleAfter {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(devUp, prometheus.GaugeValue, up, d.name)
		at := 0.0
		if !d.d.lastGood.IsZero() {
			at = seconds(d.d.lastGood)
		}
		ch <- prometheus.MustNewConstMetric(devAt, prometheus.GaugeValue, at, d.name)
	}
	up := make(map[string]bool, len(devs))
	for _, d := range devs {
		up[d.name] = d.d.good && now.Sub(d.d.lastGood) <= c.staleAfter
	}
	for k, j := range energies {
		if up[k[0]] { // a silent device's counter is not exported as fresh
			ch <- prometheus.MustNewConstMetric(energy, prometheus.CounterValue, j, k[0], k[1])
		}
	}
	collectPUE(ch, pue, now)
	collectGrid(ch, grid, now)
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func isInf(v float64) bool { return v > 1e300 || v < -1e300 }
