package contract

import (
	"fmt"

	"cuelang.org/go/cue"

	"github.com/seamdc/seam/internal/cueload"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// decode builds the model from a loaded directory. Unit problems are
// returned as diagnostics; values that are missing or wrong were already
// reported by the schema validation and decode as zero.
func decode(r *cueload.Result) (*Contracts, diag.List) {
	d := &decoder{r: r}
	root := node{d: d, v: r.Value}
	c := &Contracts{Dir: r.Dir, Loaded: r, Site: d.site(root.at("site"))}
	c.Ops = d.operating(root.at("site"))
	c.Grid = d.gridDesign(root.at("site"))
	c.Commissioning = d.commissioning(root.at("site"))
	for _, b := range root.entries("boundaries") {
		c.Boundaries = append(c.Boundaries, d.boundary(b))
	}
	return c, d.diags
}

func (d *decoder) site(n node) *Site {
	n.path = "site"
	s := &Site{Name: n.str("name"), Pos: n.pos()}
	for _, m := range n.entries("modules") {
		s.Modules = append(s.Modules, d.module(m))
	}
	for _, sh := range n.entries("shared") {
		shared := &Shared{ID: sh.name, Kind: sh.str("kind"), Paths: sh.int("paths"), Pos: sh.pos(), PathsPos: sh.pos()}
		if p := sh.at("paths"); p.exists() {
			shared.PathsPos = p.pos()
		}
		s.Shared = append(s.Shared, shared)
	}
	for _, lb := range n.entries("loadbanks") {
		s.LoadBanks = append(s.LoadBanks, &LoadBank{ID: lb.name, Module: lb.ref("module"),
			Rating: lb.q("rating", units.Power), Resolution: lb.q("resolution", units.Power),
			MaxRate: lb.q("max_rate", units.PowerRate), Switching: lb.q("switching", units.Frequency),
			Kind: lb.str("kind"), Pos: lb.pos()})
	}
	return s
}

func (d *decoder) module(n node) *Module {
	m := &Module{ID: n.name, Kind: n.str("kind"), Vendor: n.str("vendor"), Generation: n.str("generation"),
		FailureDomain: n.str("failure_domain"), DependsOn: n.refs("depends_on"), Pos: n.pos()}
	for _, r := range n.entries("racks") {
		m.Racks = append(m.Racks, d.rack(m.ID, r))
	}
	for _, rd := range n.entries("rack_designs") {
		m.RackDesigns = append(m.RackDesigns, d.rackDesign(rd))
	}
	for _, r := range m.Racks {
		if r.Design.To != "" {
			r.DesignOf = m.RackDesign(r.Design.To)
		}
	}
	for _, sd := range n.entries("scale_up_domains") {
		m.ScaleUp = append(m.ScaleUp, &ScaleUpDomain{Path: sd.path, ID: m.ID + "/" + sd.name, Module: m.ID, Racks: sd.refs("racks"), Pos: sd.pos()})
	}
	for _, b := range n.entries("blocks") {
		m.Blocks = append(m.Blocks, d.block(m.ID, b))
	}
	for _, l := range n.entries("loops") {
		m.Loops = append(m.Loops, d.loop(m.ID, l))
	}
	for _, w := range n.entries("networks") {
		m.Networks = append(m.Networks, &Network{ID: m.ID + "/" + w.name, Module: m.ID, Paths: w.int("paths"),
			Serves: w.refs("serves"), Pos: w.pos()})
	}
	return m
}

func (d *decoder) rack(module string, n node) *Rack {
	r := &Rack{Path: n.path, ID: module + "/" + n.name, Module: module, DesignPower: n.q("design_power", units.Power),
		GPUs: n.int("gpus"), LiquidFraction: n.q("liquid_fraction", units.Ratio), CooledBy: n.ref("cooled_by"), Pos: n.pos()}
	if n.at("design").exists() {
		r.Design = n.ref("design")
	}
	if lf := r.LiquidFraction; lf.Set && (lf.Canon <= 0 || lf.Canon > 100) {
		d.diags.Add(diag.Diagnostic{Rule: RuleRange, Severity: diag.Error, Pos: lf.Pos, Path: n.path + ".liquid_fraction",
			Message: fmt.Sprintf("%s.liquid_fraction: %s is not a share of the rack's heat", n.path, lf.Raw), Hint: "write a percentage above 0 % and at most 100 %"})
		r.LiquidFraction = Q{}
	}
	if nodes := n.at("nodes"); nodes.v.IncompleteKind() == cue.ListKind {
		for _, ref := range n.refs("nodes") {
			r.NodeIDs = append(r.NodeIDs, ref.To)
		}
		r.Nodes = len(r.NodeIDs)
	} else {
		r.Nodes = n.int("nodes")
	}
	for _, p := range n.entries("pdus") {
		r.PDUs = append(r.PDUs, &PDU{Path: p.path, ID: r.ID + "/" + p.name, Feed: p.ref("feed"),
			Breaker: p.q("breaker", units.Current), Derating: d.derating(p), Voltage: p.q("voltage", units.Voltage), Pos: p.pos()})
	}
	return r
}

// derating reads a breaker's derating beside it: a share above 0 and
// at most 100 %, else it is reported and left unset (the default).
func (d *decoder) derating(n node) Q {
	q := n.q("derating", units.Ratio)
	if q.Set && (q.Canon <= 0 || q.Canon > 100) {
		d.diags.Add(diag.Diagnostic{Rule: RuleRange, Severity: diag.Error, Pos: q.Pos, Path: n.path + ".derating",
			Message: fmt.Sprintf("%s.derating: %s is not a share of the breaker's rating", n.path, q.Raw),
			Hint:    `write a percentage above 0 % and at most 100 %: "80 %" (the NEC's continuous-load rule, the default) or "100 %" for a breaker listed for 100 % continuous duty`})
		return Q{}
	}
	return q
}

func (d *decoder) block(module string, n node) *Block {
	b := &Block{Path: n.path, ID: module + "/" + n.name, Module: module, Rating: n.q("rating", units.Power),
		Voltage: n.q("voltage", units.Voltage), Frequency: n.q("frequency", units.Frequency),
		PowerFactor: 1, Redundancy: n.str("redundancy"), Powers: n.refs("powers"), Pos: n.pos()}
	if n.at("power_factor").exists() {
		b.PowerFactor = n.float("power_factor")
	}
	for _, f := range n.entries("feeds") {
		feed := &Feed{Path: f.path, ID: b.ID + "/" + f.name, Block: b, Breaker: f.q("breaker", units.Current), Derating: d.derating(f), Pos: f.pos()}
		if u := f.at("ups"); u.exists() {
			feed.UPS = &UPS{Rating: u.q("rating", units.Power), RideThrough: u.q("ride_through", units.Time), Pos: u.pos()}
		}
		b.Feeds = append(b.Feeds, feed)
	}
	return b
}

func (d *decoder) loop(module string, n node) *Loop {
	l := &Loop{Path: n.path, ID: module + "/" + n.name, Module: module, Coolant: n.str("coolant"),
		SupplyTemp: n.q("supply_temp", units.Temperature), DeltaT: n.q("delta_t", units.TempDiff),
		Redundancy: n.str("redundancy"), Cools: n.refs("cools"), Pos: n.pos()}
	for _, c := range n.entries("cdus") {
		cdu := &CDU{ID: l.ID + "/" + c.name, Capacity: c.q("capacity", units.Power),
			PumpRedundancy: c.str("pump_redundancy"), Pos: c.pos()}
		for _, p := range c.entries("pumps") {
			cdu.Pumps = append(cdu.Pumps, &Pump{ID: cdu.ID + "/" + p.name, Flow: p.q("flow", units.Flow), Pos: p.pos()})
		}
		l.CDUs = append(l.CDUs, cdu)
	}
	return l
}

func (d *decoder) boundary(n node) *Boundary {
	n.path = "boundaries." + quoteLabel(n.name)
	b := &Boundary{ID: n.name, Supplier: n.ref("supplier"), Consumer: n.ref("consumer"),
		Medium: n.str("medium"), Pos: n.pos(), PartiesPos: n.at("parties").pos()}
	for _, p := range n.refs("parties") {
		b.Parties = append(b.Parties, p.To)
	}
	dims := map[string]units.Dimension{}
	for _, c := range n.entries("channels") {
		ch := &Channel{Name: c.name, Quantity: units.Dimension(c.str("quantity")), At: c.ref("at"), Pos: c.pos()}
		if s := c.boolp("safety"); s != nil {
			ch.Safety = *s
		}
		dims[ch.Name] = ch.Quantity
		b.Channels = append(b.Channels, ch)
	}
	clause := func(kind string, c node) Clause {
		return Clause{Kind: kind, Name: c.name, Boundary: b, Channel: c.ref("channel"), Pos: c.pos()}
	}
	for _, c := range n.entries("steady") {
		s := &Steady{Clause: clause("steady", c)}
		dim := d.forChannel(s.Channel.To, dims)
		s.Guarantee, s.Require = d.band(c.at("guarantee"), dim), d.band(c.at("require"), dim)
		b.Steady = append(b.Steady, s)
	}
	for _, c := range n.entries("transient") {
		t := &Transient{Clause: clause("transient", c)}
		d.channel = ""
		t.Excitation = d.excitation(c.at("excitation"))
		t.Withstand = d.withstand(c.at("withstand"))
		dim := d.forChannel(t.Channel.To, dims)
		t.Guarantee, t.Require = d.response(c.at("guarantee"), dim), d.response(c.at("require"), dim)
		b.Transient = append(b.Transient, t)
	}
	for _, c := range n.entries("failure") {
		d.channel = ""
		f := &Failure{Clause: clause("failure", c), Event: c.str("event"), Target: c.ref("target"),
			Load: c.q("load", units.Power, units.Ratio)}
		dim := d.forChannel(f.Channel.To, dims)
		f.Guarantee, f.Require = d.behaviour(c.at("guarantee"), dim), d.behaviour(c.at("require"), dim)
		b.Failure = append(b.Failure, f)
	}
	d.channel = ""
	if g := n.at("grid"); g.exists() {
		b.Grid = d.grid(b, g)
	}
	return b
}

// forChannel notes the clause channel whose quantity the next values must
// match, and returns that quantity.
func (d *decoder) forChannel(name string, dims map[string]units.Dimension) units.Dimension {
	d.channel, d.channelDim = name, dims[name]
	if d.channelDim == "" {
		d.channel = ""
	}
	return d.channelDim
}

// valueDims is what a band's bounds may be written in for a channel of
// dimension dim; devDims what a tolerance or deviation may be written in.
func valueDims(dim units.Dimension) []units.Dimension {
	if dim == "" || dim == Alarm {
		return allDims()
	}
	return []units.Dimension{dim}
}

func devDims(dim units.Dimension) []units.Dimension {
	switch dim {
	case "", Alarm:
		return allDims()
	case units.Temperature:
		// a % of a Celsius value is meaningless (and differs in degF)
		return []units.Dimension{units.TempDiff}
	case units.Ratio:
		return []units.Dimension{units.Ratio}
	}
	return []units.Dimension{dim, units.Ratio}
}

func allDims() []units.Dimension { return units.Dimensions() }

func (d *decoder) band(n node, dim units.Dimension) Band {
	if !n.exists() {
		return Band{}
	}
	vd := valueDims(dim)
	return Band{Nominal: n.q("nominal", vd...), Tolerance: n.q("tolerance", devDims(dim)...),
		Min: n.q("min", vd...), Max: n.q("max", vd...), Set: true, Pos: n.pos()}
}

func (d *decoder) excitation(n node) Excitation {
	load := []units.Dimension{units.Power, units.Ratio}
	return Excitation{Kind: n.str("kind"), Channel: n.ref("channel"), Low: n.q("low", load...), High: n.q("high", load...),
		Rate: n.q("rate", units.PowerRate), Period: n.q("period", units.Time), Duty: n.q("duty", units.Ratio),
		Repetitions: n.int("repetitions"), Pos: n.pos()}
}

func (d *decoder) withstand(n node) Withstand {
	if !n.exists() {
		return Withstand{}
	}
	return Withstand{Step: n.q("step", units.Power, units.Ratio), Rate: n.q("rate", units.PowerRate),
		MinPeriod: n.q("min_period", units.Time), Set: true, Pos: n.pos()}
}

func (d *decoder) response(n node, dim units.Dimension) Response {
	if !n.exists() {
		return Response{}
	}
	r := Response{MaxDeviation: n.q("max_deviation", devDims(dim)...), Recovery: n.q("recovery", units.Time),
		SettleInto: n.ref("settle_into"), Set: true, Pos: n.pos()}
	mask := n.at("mask")
	if s, err := mask.v.String(); err == nil {
		r.MaskName = s
		r.Mask = ITIC
	} else if it, err := mask.v.List(); err == nil {
		for i := 0; it.Next(); i++ {
			p := node{d: d, v: it.Value(), path: mask.path + "[" + itoa(i) + "]"}
			r.Mask = append(r.Mask, MaskPoint{Duration: p.q("duration", units.Time),
				Min: p.q("min", units.Ratio), Max: p.q("max", units.Ratio)})
		}
		r.MaskName = "custom"
	}
	return r
}

func (d *decoder) behaviour(n node, dim units.Dimension) Behaviour {
	if !n.exists() {
		return Behaviour{}
	}
	return Behaviour{NoInterruption: n.boolp("no_interruption"), RideThrough: n.q("ride_through", units.Time),
		Degraded: d.band(n.at("degraded"), dim), DegradedFor: n.q("degraded_for", units.Time),
		Alarm: n.ref("alarm"), AlarmWithin: n.q("alarm_within", units.Time), Recovery: n.q("recovery", units.Time),
		Set: true, Pos: n.pos()}
}

func (d *decoder) rackDesign(n node) *RackDesign {
	rd := &RackDesign{Path: n.path, Name: n.name, HeightU: n.int("height_u"), Pos: n.pos()}
	for _, t := range n.entries("trays") {
		td := &TrayDesign{Path: t.path, Name: t.name, Kind: t.str("kind"), HeightU: t.int("height_u"), Model: t.str("model"),
			Power: t.q("power", units.Power), PSUs: t.int("psus"), PSUPower: t.q("psu_power", units.Power), Feeds: t.refs("feeds"), Pos: t.pos()}
		td.Liquid, _ = t.at("liquid").v.Bool()
		td.Slots = t.ints("slots")
		for _, p := range t.entries("parts") {
			td.Parts = append(td.Parts, &PartDesign{Name: p.name, Kind: p.str("kind"), Count: p.int("count"), Model: p.str("model"), Pos: p.pos()})
		}
		rd.Trays = append(rd.Trays, td)
	}
	return rd
}
