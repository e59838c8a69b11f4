package inventory

import (
	"fmt"
	"slices"
	"strings"

	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/units"
)

// power reports, per rack, the trays that no power path reaches from a
// feed, at the cause. A cause another rule reports (a PDU on an unknown
// feed, a shelf on a PDU the rack lacks) is not reported again.
func (c *checker) power() {
	g := c.g
	powered := make([]bool, g.Len())
	// the queue is read by index, and sized for every element it can
	// take: the feeds and what something powers
	feeds := g.byKind[g.kindStart[KindFeed]:g.kindStart[KindFeed+1]]
	queue := append(make([]ID, 0, len(feeds)+len(g.rel[Powers].in.start)), feeds...)
	for _, f := range queue {
		powered[f] = true
	}
	for i := 0; i < len(queue); i++ {
		id := queue[i]
		for _, next := range g.Out(Powers, id) {
			if !powered[next] {
				powered[next] = true
				queue = append(queue, next)
			}
		}
	}
	for _, m := range g.Site.Modules {
		for _, r := range m.Racks {
			rid, ok := g.Lookup(r.ID)
			if !ok {
				continue
			}
			var dead []ID
			for _, t := range g.Children(rid) {
				if e := g.El(t); e.Kind.IsTray() && e.Kind != KindPowerShelf && !powered[t] {
					dead = append(dead, t)
				}
			}
			if len(dead) == 0 {
				continue
			}
			pos, why, hint := c.whyUnpowered(r, rid)
			if why == "" {
				continue
			}
			c.diags.Errorf(RuleNoPower, pos, r.Path, "%s: %s no power path to a feed: %s", r.Path, c.trays(dead, "has", "have"), why).Hint = hint
		}
	}
}

// trays names a list of trays of one rack for a message: its compute
// tray compute-03, or its 27 trays (18 compute, 9 scale-up-switch).
func (c *checker) trays(ids []ID, one, many string) string {
	g := c.g
	if len(ids) == 1 {
		e := g.El(ids[0])
		return fmt.Sprintf("its %s %s %s", kindLabel(e.Kind), e.Key[strings.LastIndex(e.Key, "/")+1:], one)
	}
	var kinds []Kind
	n := map[Kind]int{}
	for _, id := range ids {
		k := g.El(id).Kind
		if n[k] == 0 {
			kinds = append(kinds, k)
		}
		n[k]++
	}
	slices.Sort(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", n[k], k)
	}
	return fmt.Sprintf("its %d trays (%s) %s", len(ids), strings.Join(parts, ", "), many)
}

// whyUnpowered says where a rack's power path stops, with the position
// of the cause; "" when another rule reports the cause.
func (c *checker) whyUnpowered(r *Rack, rid ID) (diag.Pos, string, string) {
	g := c.g
	if len(r.PDUs) == 0 {
		return r.Pos, "the rack has no PDUs", `give it PDUs on the site's feeds: pdus: {a: {feed: "p1/block/a", breaker: "250 A"}, b: {feed: "p1/block/b", breaker: "250 A"}}`
	}
	fed := false
	for _, p := range r.PDUs {
		if id, ok := g.Lookup(p.ID); ok && len(g.In(Powers, id)) > 0 {
			fed = true
		}
	}
	if !fed {
		return diag.Pos{}, "", "" // every PDU names a feed the site lacks: REF003 says which
	}
	if bus, ok := g.Lookup(r.ID + "/busbar"); ok {
		psus := g.In(Powers, bus)
		if len(psus) == 0 {
			pos := r.Pos
			for _, t := range g.Children(rid) {
				if g.El(t).Kind == KindPowerShelf {
					pos = g.El(t).Pos
					break
				}
			}
			return pos, "every bay of its power shelves is empty in the as-built: no PSU feeds its busbar", `list each shelf's PSU serials by bay ("" only for a bay that is really empty), or install the PSUs`
		}
		for _, psu := range psus {
			if len(g.In(Powers, psu)) > 0 {
				return r.Pos, "its busbar's PSUs are on PDUs that no feed reaches", "give the rack PDUs on the site's feeds, and its power shelves PDUs it has"
			}
		}
		return diag.Pos{}, "", "" // every shelf is on a PDU the rack lacks: INV021 or INV015 says which
	}
	return r.Pos, "its PDUs reach none of its trays", "give the rack PDUs on the site's feeds"
}

// busbars checks each rack's DC busbar with one PSU, one shelf and one
// feed lost against the rack's design power, and reports the finest
// loss it cannot take: a rack that cannot lose one PSU cannot lose its
// shelf or its feed either. A rack with a shelf on no PDU is skipped:
// INV021 or INV015 reports the shelf.
func (c *checker) busbars() {
	g := c.g
	for _, bus := range g.OfKind(KindBusbar) {
		rack := g.Ancestor(bus, KindRack)
		r := c.rack(rack)
		load := g.El(bus).PowerW
		if r != nil && r.DesignPower.Set {
			load = Watts(r.DesignPower)
		}
		feedOf := map[ID]string{} // a rack PDU → the feed it names
		rackFeeds := map[string]bool{}
		if r != nil {
			for _, p := range r.PDUs {
				if id, ok := g.Lookup(p.ID); ok {
					feedOf[id] = p.Feed.To
					rackFeeds[p.Feed.To] = true
				}
			}
		}
		var total, biggestPSU int64
		byShelf, byFeed := map[ID]int64{}, map[string]int64{}
		shelvesOn := map[string]map[ID]bool{}
		unfed := false
		for _, psu := range g.In(Powers, bus) {
			pdus := g.In(Powers, psu)
			if len(pdus) == 0 {
				unfed = true
				continue
			}
			w := g.El(psu).PowerW
			total += w
			biggestPSU = max(biggestPSU, w)
			shelf := g.Parent(psu)
			byShelf[shelf] += w
			for _, pdu := range pdus {
				f := feedOf[pdu]
				byFeed[f] += w
				if shelvesOn[f] == nil {
					shelvesOn[f] = map[ID]bool{}
				}
				shelvesOn[f][shelf] = true
			}
		}
		if unfed || len(byShelf) == 0 {
			continue
		}
		path, pos := g.El(rack).Key, g.El(rack).Pos
		if r != nil {
			path, pos = r.Path, r.Pos
			if r.DesignPower.Set && r.DesignPower.Pos.IsValid() {
				pos = r.DesignPower.Pos
			}
		}
		// a rack whose design carries its load, but whose as-built shelves
		// do not, is reported at the shelf records that differ
		var biggestShelf int64
		for _, w := range byShelf {
			biggestShelf = max(biggestShelf, w)
		}
		finding := total-biggestPSU < load || total-biggestShelf < load
		for _, w := range byFeed {
			finding = finding || len(rackFeeds) >= 2 && total-w < load
		}
		if !finding {
			continue // the common case: nothing more to work out
		}
		lead, causeHint := path, ""
		var related []diag.Related
		if causes := c.asBuiltShelves(r, load); len(causes) > 0 {
			var whats []string
			for _, cs := range causes {
				whats = append(whats, cs.what)
			}
			lead = path + ": " + strings.Join(whats, "; ")
			causeHint = "as designed the rack carries it: install the missing PSUs, or cable the shelf to its design PDU (or fix the record, if the rack is built as designed)"
			pos, path = g.El(causes[0].id).Pos, g.El(causes[0].id).Key
			related = []diag.Related{{Pos: firstValid(r.DesignPower.Pos, r.Pos), Message: "the rack's design power, which its design's shelves carry as designed"}}
			for _, cs := range causes[1:] {
				related = append(related, diag.Related{Pos: g.El(cs.id).Pos, Message: cs.what})
			}
			for _, rel := range c.shelfCauses(r) {
				if !strings.HasPrefix(rel.Message, "as built") { // said already
					related = append(related, rel)
				}
			}
		} else {
			related = c.shelfCauses(r)
		}
		what := "design power"
		if r == nil || !r.DesignPower.Set {
			what = "design draw"
		}
		empty := "" // shelves with every bay empty, as built
		shelves := 0
		for _, t := range g.Children(rack) {
			if g.El(t).Kind == KindPowerShelf {
				shelves++
			}
		}
		if n := shelves - len(byShelf); n > 0 {
			empty = fmt.Sprintf("as built, %d of its %d shelves holds no PSU", n, shelves)
			if n > 1 {
				empty = fmt.Sprintf("as built, %d of its %d shelves hold no PSU", n, shelves)
			}
		}
		also := func(rest string) string {
			switch {
			case empty == "" && rest == "":
				return ""
			case empty == "":
				return " (" + rest + ")"
			case rest == "":
				return " (" + empty + ")"
			}
			return " (" + rest + "; " + empty + ")"
		}
		switch {
		case total < load:
			d := c.diags.Errorf(RuleBusbarPSU, pos, path, "%s: its power shelves give %s in all, below its %s of %s: it cannot lose a PSU, a shelf or a feed%s",
				lead, kw(total), what, kw(load), also(""))
			d.Hint, d.Related = or(causeHint, "add PSUs or shelves, use larger PSUs, or lower the rack's design power"), related
		case total-biggestPSU < load:
			d := c.diags.Errorf(RuleBusbarPSU, pos, path, "%s: with one PSU lost its shelves give %s, below its %s of %s%s",
				lead, kw(total-biggestPSU), what, kw(load), also("so it cannot lose a shelf or a feed either"))
			d.Hint, d.Related = or(causeHint, "add PSUs or shelves, use larger PSUs, or lower the rack's design power"), related
		case total-biggestShelf < load:
			d := c.diags.Errorf(RuleBusbarShelf, pos, path, "%s: with one power shelf lost its other shelves give %s, below its %s of %s%s",
				lead, kw(total-biggestShelf), what, kw(load), also("so it cannot lose a feed either"))
			d.Hint, d.Related = or(causeHint, "add a shelf, or lower the rack's design power"), related
		case len(rackFeeds) < 2:
			// every PDU of the rack is on one feed: no spread of its
			// shelves survives that feed's loss (BUDGET002's finding)
		default:
			for _, f := range sortedKeys(byFeed) {
				if left := total - byFeed[f]; left < load {
					d := c.diags.Errorf(RuleBusbarFeed, pos, path, "%s: with feed %s lost, the %d power shelves on its other feeds give %s, below its %s of %s%s",
						lead, f, len(byShelf)-len(shelvesOn[f]), kw(left), what, kw(load), also(""))
					d.Hint, d.Related = or(causeHint, "spread the shelves over the feeds so that either side alone carries the rack, or lower its design power"), related
				}
			}
		}
	}
}

// shelfCause is an as-built power shelf that differs from its design.
type shelfCause struct {
	id   ID
	what string
}

// asBuiltShelves are the rack's power shelves whose as-built record
// differs from the design (a bay empty, another PDU), when the design
// as designed carries load with a PSU, a shelf or a feed lost: then
// those records cause a busbar finding. None otherwise.
func (c *checker) asBuiltShelves(r *Rack, load int64) []shelfCause {
	if r == nil || r.DesignOf == nil || !c.designCarries(r, load) {
		return nil
	}
	g := c.g
	var out []shelfCause
	for _, t := range r.DesignOf.Trays {
		if t.Kind != PowerShelf {
			continue
		}
		for i, slot := range t.Slots {
			shelf, ok := g.Lookup(fmt.Sprintf("%s/%s-%02d", r.ID, t.Name, i+1))
			if !ok {
				continue
			}
			psus := g.Children(shelf)
			var why []string
			if n := len(psus); n < t.PSUs {
				var bays []string
				for bay := 1; bay <= t.PSUs; bay++ {
					if !slices.ContainsFunc(psus, func(p ID) bool { return g.El(p).Slot == bay }) {
						bays = append(bays, fmt.Sprint(bay))
					}
				}
				why = append(why, fmt.Sprintf("has bay %s of its %d empty", strings.Join(bays, ", "), t.PSUs))
				if len(bays) > 1 {
					why[len(why)-1] = fmt.Sprintf("has bays %s of its %d empty", strings.Join(bays, ", "), t.PSUs)
				}
			}
			if len(psus) > 0 && i < len(t.Feeds) {
				for _, pdu := range g.In(Powers, psus[0]) {
					if got := g.El(pdu).Key; got != r.ID+"/"+t.Feeds[i].To {
						why = append(why, fmt.Sprintf("is on PDU %s, where the design puts it on %s", got[strings.LastIndex(got, "/")+1:], t.Feeds[i].To))
					}
				}
			}
			if len(why) > 0 {
				key := g.El(shelf).Key
				out = append(out, shelfCause{shelf, fmt.Sprintf("as built, its power shelf %s at U%d %s", key[strings.LastIndex(key, "/")+1:], slot, strings.Join(why, " and "))})
			}
		}
	}
	return out
}

// designCarries reports whether a rack's power shelves, as designed
// (every bay filled, each shelf on its design PDU), carry load with one
// PSU, one shelf or one feed lost.
func (c *checker) designCarries(r *Rack, load int64) bool {
	feedOf := map[string]string{}
	for _, p := range r.PDUs {
		feedOf[strings.TrimPrefix(p.ID, r.ID+"/")] = p.Feed.To
	}
	var total, psu, shelf int64
	byFeed := map[string]int64{}
	for _, t := range r.DesignOf.Trays {
		if t.Kind != PowerShelf {
			continue
		}
		w := int64(t.PSUs) * Watts(t.PSUPower)
		for i := range t.Slots {
			total += w
			psu, shelf = max(psu, Watts(t.PSUPower)), max(shelf, w)
			if i < len(t.Feeds) {
				byFeed[feedOf[t.Feeds[i].To]] += w
			}
		}
	}
	if total-psu < load || total-shelf < load {
		return false
	}
	if len(byFeed) > 1 {
		for _, w := range byFeed {
			if total-w < load {
				return false
			}
		}
	}
	return true
}

// shelfCauses are the positions that decide a rack's shelves: its
// design's power shelves, and as-built shelves on another PDU than the
// design's.
func (c *checker) shelfCauses(r *Rack) []diag.Related {
	if r == nil || r.DesignOf == nil {
		return nil
	}
	g := c.g
	var out []diag.Related
	for _, t := range r.DesignOf.Trays {
		if t.Kind != PowerShelf {
			continue
		}
		out = append(out, diag.Related{Pos: t.Pos, Message: fmt.Sprintf("the design's %s trays: %d shelves of %d × %s, fed by PDUs %s", t.Name, t.Count(), t.PSUs, t.PSUPower.Raw, refList(t.Feeds))})
		for i := range t.Slots {
			shelf, ok := g.Lookup(fmt.Sprintf("%s/%s-%02d", r.ID, t.Name, i+1))
			if !ok || i >= len(t.Feeds) {
				continue
			}
			for _, psu := range g.Children(shelf) {
				for _, pdu := range g.In(Powers, psu) {
					if got := g.El(pdu).Key; got != r.ID+"/"+t.Feeds[i].To {
						out = append(out, diag.Related{Pos: g.El(shelf).Pos, Message: fmt.Sprintf("as built, the shelf at U%d is on PDU %s; the design puts it on %s",
							t.Slots[i], got[strings.LastIndex(got, "/")+1:], t.Feeds[i].To)})
					}
				}
				break
			}
		}
	}
	return out
}

func refList(refs []Ref) string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.To
	}
	return strings.Join(out, ", ")
}

func (c *checker) rack(id ID) *Rack {
	if id == None {
		return nil
	}
	key := c.g.El(id).Key
	m, _, _ := strings.Cut(key, "/")
	if mod := c.g.Site.Module(m); mod != nil {
		return mod.Rack(strings.TrimPrefix(key, m+"/"))
	}
	return nil
}

func kw(w int64) string { return units.Format(float64(w)/1000, "kW") }
