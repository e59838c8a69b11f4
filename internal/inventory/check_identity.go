package inventory

// The checks that two things do not share what names one thing: a
// serial or asset tag, a Slurm, Kubernetes or BMC host name, a BMC's
// address. A site has 1.8 M serials and 100,000 nodes: duplicates are
// found by sorting hashes (dupes), not by filling maps.

import (
	"hash/maphash"
	"net/netip"
	"slices"

	"github.com/seamdc/seam/internal/topology/names"
)

// identityDup is a thing whose serial (or asset tag) an earlier thing
// has: prev, the first.
type identityDup struct {
	id, prev ID
	tag      bool // an asset tag, else a serial
}

// identityDupes finds, beside the other checks, the things whose serial
// or asset tag an earlier thing has; wait returns them in element order,
// a serial's before the same thing's asset tag's. A 100k-node site has
// 1.8M serials: a map of them costs more time and memory than the rest
// of the check, so duplicates are found by sorting hashes (dupes).
func (c *checker) identityDupes() (wait func() []identityDup) {
	g := c.g
	ch := make(chan []identityDup, 1)
	go func() {
		// nearly every element has a serial; few have an asset tag (trays
		// and racks), and dupes takes room for all it is given
		var tagged []ID
		for i := range g.els {
			if idn := g.els[i].Identity; idn != nil && idn.AssetTag != "" {
				tagged = append(tagged, ID(i))
			}
		}
		found := sameIdentity(g, nil, func(idn *Identity) string { return idn.Serial }, false)
		found = append(found, sameIdentity(g, tagged, func(idn *Identity) string { return idn.AssetTag }, true)...)
		slices.SortFunc(found, func(a, b identityDup) int {
			if a.id != b.id {
				return int(a.id - b.id)
			}
			return b2i(a.tag) - b2i(b.tag)
		})
		ch <- found
	}()
	return func() []identityDup { return <-ch }
}

// sameIdentity finds the elements of ids (nil: every element) whose
// field an earlier one has.
func sameIdentity(g *Graph, ids []ID, field func(*Identity) string, tag bool) []identityDup {
	n, el := len(ids), func(i int) ID { return ids[i] }
	if ids == nil {
		n, el = g.Len(), func(i int) ID { return ID(i) }
	}
	of := func(i int) string {
		if idn := g.els[el(i)].Identity; idn != nil {
			return field(idn)
		}
		return ""
	}
	var found []identityDup
	dupes(n,
		func(i int) (uint64, bool) {
			s := of(i)
			return strHash(s), s != ""
		},
		func(i, j int) bool { return of(i) == of(j) },
		func(i, prev int) { found = append(found, identityDup{el(i), el(prev), tag}) })
	return found
}

// identities reports a serial or asset tag on two things (identityDupes'
// findings), each at the thing that has it second.
func (c *checker) identities(found []identityDup) {
	g := c.g
	for _, d := range found {
		e, prev := g.El(d.id), g.El(d.prev)
		if d.tag {
			c.diags.Errorf(RuleAssetTag, e.Pos, e.Key, "asset tag %s is on %s, and on %s at %s", e.Identity.AssetTag, c.label(d.id), c.label(d.prev), prev.Pos).Hint =
				"an asset tag names one thing: one of the records is wrong"
			continue
		}
		c.diags.Errorf(RuleSerial, e.Pos, e.Key, "serial %s is on %s, and on %s at %s", e.Identity.Serial, c.label(d.id), c.label(d.prev), prev.Pos).Hint =
			"a serial names one part: read the label of one of them again"
	}
}

// names checks every node's names: a Slurm and a Kubernetes name its
// scheduler takes (the check contractc topology makes, in its words),
// each on one node; its data NICs on no management switch. One pass
// over the nodes.
func (c *checker) names() {
	g := c.g
	nodes := g.byKind[g.kindStart[KindCompute]:g.kindStart[KindCompute+1]]
	slurm := firstOf(nodes, func(n *NodeNames) string { return n.Slurm }, g)
	kube := firstOf(nodes, func(n *NodeNames) string { return n.Kubernetes }, g)
	for i, id := range nodes {
		e := g.El(id)
		c.dataCabling(id)
		n := e.Names
		if n == nil {
			continue
		}
		for _, err := range names.Node(n.Slurm, n.Kubernetes) {
			c.diags.Errorf(RuleNodeName, e.Pos, e.Key, "%s: %v", c.label(id), err).Hint =
				`rename the node in its record's "node": Slurm takes letters, digits, '-', '_' and '.'; Kubernetes lower-case letters, digits, '-' and '.' (no "kubernetes" name: its Slurm name must suit both)`
		}
		for _, x := range []struct {
			rule, what, name, why string
			prev                  ID
		}{{RuleSlurmName, "Slurm", n.Slurm, "every node needs its own Slurm name: topology, drains and burn-in find nodes by it", slurm[i]},
			{RuleKubeName, "Kubernetes", n.Kubernetes, "every node needs its own Kubernetes name: topology, drains and burn-in find nodes by it", kube[i]}} {
			if x.prev != None {
				c.diags.Errorf(x.rule, e.Pos, e.Key, "compute tray %s has %s name %s, as compute tray %s at %s has", e.Key,
					x.what, x.name, g.El(x.prev).Key, g.El(x.prev).Pos).Hint = x.why
			}
		}
	}
}

// firstOf is, for each of nodes, the first of them with its name (of
// name's), when that is another node; None when it is the node itself
// or it has no name. Found by sorting hashes (dupes), not by filling
// maps: a site has 100,000 nodes.
func firstOf(nodes []ID, name func(*NodeNames) string, g *Graph) []ID {
	of := func(i int) string {
		if n := g.El(nodes[i]).Names; n != nil {
			return name(n)
		}
		return ""
	}
	prev := make([]ID, len(nodes))
	for i := range prev {
		prev[i] = None
	}
	dupes(len(nodes),
		func(i int) (uint64, bool) {
			s := of(i)
			return strHash(s), s != ""
		},
		func(i, j int) bool { return of(i) == of(j) },
		func(i, p int) { prev[i] = nodes[p] })
	return prev
}

// bmcNames reports two nodes whose BMCs have one host name.
func (c *checker) bmcNames() {
	g := c.g
	nodes := g.byKind[g.kindStart[KindCompute]:g.kindStart[KindCompute+1]]
	name := func(i int) string {
		if n := g.El(nodes[i]).Names; n != nil {
			return n.BMC
		}
		return ""
	}
	dupes(len(nodes),
		func(i int) (uint64, bool) {
			s := name(i)
			return strHash(s), s != ""
		},
		func(i, j int) bool { return name(i) == name(j) },
		func(i, prev int) {
			e, p := g.El(nodes[i]), g.El(nodes[prev])
			c.diags.Errorf(RuleBMCName, e.Pos, e.Key, "compute tray %s has BMC host name %s, as compute tray %s at %s has", e.Key,
				name(i), p.Key, p.Pos).Hint = "every BMC needs its own host name: contractc blast, drains and the BMC client find a tray by it, and would pick one of the two"
		})
}

// bmcAddresses checks that every BMC's address is an IP address, and
// no two BMCs answer at one.
func (c *checker) bmcAddresses() {
	g := c.g
	bmcs := g.byKind[g.kindStart[KindBMC]:g.kindStart[KindBMC+1]]
	addrs := make([]netip.Addr, len(bmcs)) // by index in bmcs; invalid: none
	for i, id := range bmcs {
		e := g.El(id)
		if e.BMCAddress == "" {
			continue
		}
		a, ok := parseIPv4(e.BMCAddress)
		var err error
		if !ok {
			a, err = netip.ParseAddr(e.BMCAddress)
		}
		if err != nil {
			c.diags.Errorf(RuleBMCAddress, e.Pos, e.Key, "the BMC of %s answers at %q, which is not an IP address: the BMC client cannot reach it",
				c.label(g.Parent(id)), e.BMCAddress).Hint = `give the BMC's IPv4 or IPv6 address, without a prefix length or port: "bmc": {"address": "10.1.1.5", …}`
			continue
		}
		addrs[i] = a
	}
	dupes(len(bmcs),
		func(i int) (uint64, bool) {
			a := addrs[i]
			switch {
			case !a.IsValid():
				return 0, false
			case a.Is4():
				b := a.As4()
				return uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3]), true
			}
			b := a.As16()
			return maphash.Bytes(strSeed, b[:]) | 1<<32, true // never an IPv4 address's
		},
		func(i, j int) bool { return addrs[i] == addrs[j] },
		func(i, prev int) {
			e := g.El(bmcs[i])
			c.diags.Errorf(RuleBMCAddress, e.Pos, e.Key, "the BMC of %s answers at %s, as the BMC of %s at %s does: one address reaches one BMC",
				c.label(g.Parent(bmcs[i])), addrs[i], c.label(g.Parent(bmcs[prev])), g.El(bmcs[prev]).Pos).Hint = "read the address of one of them again from its BMC (or the DHCP lease)"
		})
}

// parseIPv4 reads a dotted quad without leading zeros, as
// netip.ParseAddr does, in one pass: vet reads every BMC's address.
// Anything else is not ok, for netip.ParseAddr to read or explain.
func parseIPv4(s string) (netip.Addr, bool) {
	var b [4]byte
	n, v, digits := 0, 0, 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			if digits == 0 || n == 4 {
				return netip.Addr{}, false
			}
			b[n], n, v, digits = byte(v), n+1, 0, 0
			continue
		}
		c := s[i]
		if c < '0' || c > '9' || digits > 0 && v == 0 {
			return netip.Addr{}, false
		}
		v, digits = v*10+int(c-'0'), digits+1
		if v > 255 {
			return netip.Addr{}, false
		}
	}
	if n != 4 {
		return netip.Addr{}, false
	}
	return netip.AddrFrom4(b), true
}
