package contract

import (
	"fmt"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/alarm"
	"github.com/seamdc/seam/internal/diag"
)

// RuleAlarmSource: a severe alarm type (internal/alarm's vocabulary)
// that no declared alarm channel raises for a loop or block that needs
// it, so facilityd could never drain on it.
const RuleAlarmSource = "ALARM001"

// alarmRules are the rules of this file, registered with Rules; Check
// runs checkAlarms.
var alarmRules = map[string]string{
	RuleAlarmSource: "a loop or UPS-backed block with a severe alarm type (cooling_redundancy_lost, leak_detected, ups_on_battery) that no declared alarm channel at it raises",
}

// VetAlarms runs this file's check alone (facilityd at start-up, and
// its tests); contractc vet runs it with every other check.
func VetAlarms(c *Contracts) diag.List {
	var diags diag.List
	checkAlarms(c, &diags)
	return diags
}

// checkAlarms reports, for each cooling loop that cools a module and
// each block with a UPS that powers one, every severe alarm type of
// the loop's or block's domain kind that no alarm channel at it (or at
// an element inside it: a CDU, a feed) raises. A channel raises the
// type its name's last segment maps to in the vocabulary
// (l2/mb/alarm/redundancy-lost: cooling_redundancy_lost).
func checkAlarms(c *Contracts, diags *diag.List) {
	raised := map[alarm.Type][]string{} // type → the elements its channels are at
	for _, b := range c.Boundaries {
		for _, ch := range b.Channels {
			if ch.Quantity != Alarm {
				continue
			}
			if def, ok := alarm.ForPoint(ch.Name); ok {
				raised[def.Type] = append(raised[def.Type], ch.At.To)
			}
		}
	}
	at := func(t alarm.Type, id string) bool {
		for _, el := range raised[t] {
			if el == id || strings.HasPrefix(el, id+"/") {
				return true
			}
		}
		return false
	}
	need := func(kind alarm.Kind, id, what, path string, pos diag.Pos) {
		for _, def := range alarm.Defs {
			if def.Severity != alarm.Severe || def.Domain != kind || at(def.Type, id) {
				continue
			}
			diags.Errorf(RuleAlarmSource, pos, path, "%s, and no alarm channel at it raises %s (%s): facilityd could never drain its nodes on it",
				what, def.Type, def.Help).Hint = fmt.Sprintf("declare an alarm channel at %q whose name ends in /%s, in the boundary that joins it to the module it serves",
				id, strings.Join(def.Points, " or /"))
		}
	}
	for _, m := range c.Site.Modules {
		for _, l := range m.Loops {
			if len(l.Cools) > 0 {
				need(alarm.CoolingLoop, l.ID, fmt.Sprintf("cooling loop %s cools %s", l.ID, refList(l.Cools)), l.Path, l.Pos)
			}
		}
		for _, b := range m.Blocks {
			if len(b.Powers) > 0 && hasUPS(b) {
				need(alarm.PowerBlock, b.ID, fmt.Sprintf("power block %s, with a UPS, powers %s", b.ID, refList(b.Powers)), b.Path, b.Pos)
			}
		}
	}
}

func hasUPS(b *Block) bool {
	for _, f := range b.Feeds {
		if f.UPS != nil {
			return true
		}
	}
	return false
}

func refList(rs []Ref) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = r.To
	}
	return strings.Join(s, ", ")
}

// AlarmPromise is a failure clause's promise of an alarm: when Event
// happens at Target, the alarm channel Channel (at At) rises within
// Within. facilityd turns it into a deadline: a failure seen without
// its alarm in time is itself reported.
type AlarmPromise struct {
	Clause  string // boundaries."l2-mb".failure."pump-trip"
	Event   string
	Target  string
	Channel string
	At      string // the element the alarm channel is at
	Within  time.Duration
	// By is who states it: the supplier's guarantee if it states a time,
	// else the consumer's requirement.
	By  string
	Pos diag.Pos
}

// AlarmPromises lists the alarm promises of every failure clause.
func (c *Contracts) AlarmPromises() []AlarmPromise {
	var out []AlarmPromise
	for _, b := range c.Boundaries {
		at := map[string]string{}
		for _, ch := range b.Channels {
			at[ch.Name] = ch.At.To
		}
		for _, f := range b.Failure {
			beh, by := f.Guarantee, b.Supplier.To
			if !beh.AlarmWithin.Set || beh.Alarm.To == "" {
				beh, by = f.Require, b.Consumer.To
			}
			if !beh.AlarmWithin.Set || beh.Alarm.To == "" {
				continue
			}
			out = append(out, AlarmPromise{Clause: f.Path(), Event: f.Event, Target: f.Target.To, Channel: beh.Alarm.To, At: at[beh.Alarm.To],
				Within: time.Duration(beh.AlarmWithin.Canon * float64(time.Second)), By: by, Pos: beh.Pos})
		}
	}
	return out
}
