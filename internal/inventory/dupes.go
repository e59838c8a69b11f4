package inventory

import (
	"hash/maphash"
	"math/bits"
	"slices"
)

// idBits is how many low bits of a packed sort key hold an index.
const idBits = 21

// dupes calls report(i, prev) for each of n things whose key equals the
// key of an earlier one, prev the first, in the order of i. hash gives
// thing i's key's hash (false: it has no key); same compares two
// things' keys. It sorts hashes instead of filling a map: on a site of
// 100,000 nodes a map of their names costs more to make than the rest
// of the check.
func dupes(n int, hash func(i int) (uint64, bool), same func(i, j int) bool, report func(i, prev int)) {
	// found in hash order, whose seed changes from one process to the
	// next; reported in the things' order, the same every time
	var found [][2]int
	hashOrder(n, hash, same, func(i, prev int) { found = append(found, [2]int{i, prev}) })
	slices.SortFunc(found, func(a, b [2]int) int { return a[0] - b[0] })
	for _, f := range found {
		report(f[0], f[1])
	}
}

// hashOrder is dupes, reporting in the order of the keys' hashes.
func hashOrder(n int, hash func(i int) (uint64, bool), same func(i, j int) bool, report func(i, prev int)) {
	var all []hid
	if n < 1<<idBits {
		// the hash's low bits and the index in one word: the fastest sort
		keys := make([]uint64, 0, n)
		for i := range n {
			if h, ok := hash(i); ok {
				keys = append(keys, h<<idBits|uint64(i))
			}
		}
		keys = maybeShared(keys)
		slices.Sort(keys)
		for k := 1; k < len(keys); k++ {
			if keys[k]>>idBits == keys[k-1]>>idBits {
				all = all[:0]
				for s := k - 1; s < len(keys) && keys[s]>>idBits == keys[k]>>idBits; s++ {
					all = append(all, hid{keys[s] >> idBits, int(keys[s] & (1<<idBits - 1))})
				}
				run(all, same, report)
				k += len(all) - 1
			}
		}
		return
	}
	all = make([]hid, 0, n)
	for i := range n {
		if h, ok := hash(i); ok {
			all = append(all, hid{h, i})
		}
	}
	slices.SortFunc(all, func(a, b hid) int {
		if a.h != b.h {
			if a.h < b.h {
				return -1
			}
			return 1
		}
		return a.i - b.i
	})
	for s := 0; s < len(all); {
		e := s + 1
		for e < len(all) && all[e].h == all[s].h {
			e++
		}
		if e-s > 1 {
			run(all[s:e], same, report)
		}
		s = e
	}
}

// maybeShared keeps, in their order, the packed keys whose hash another
// key may have. A bitset marks each hash's low bits, and a second the
// bits met twice: a key whose bits no other key has has a hash of its
// own. The few keys left (a tenth, with eight bits for each key) sort
// in a fraction of the time all would, on a site's 1.8M serials, and
// the sets take a fraction of the room.
func maybeShared(keys []uint64) []uint64 {
	if len(keys) < 1<<12 {
		return keys
	}
	width := bits.Len(uint(len(keys))) + 3 // 2^width bits: 8 to 16 a key
	mask := uint64(1)<<width - 1
	seen, twice := make([]uint64, 1<<width/64), make([]uint64, 1<<width/64)
	for _, k := range keys {
		b := k >> idBits & mask
		w, bit := b>>6, uint64(1)<<(b&63)
		twice[w] |= seen[w] & bit
		seen[w] |= bit
	}
	out := keys[:0]
	for _, k := range keys {
		if b := k >> idBits & mask; twice[b>>6]&(1<<(b&63)) != 0 {
			out = append(out, k)
		}
	}
	return out
}

// hid is a key's hash and the index of its thing.
type hid struct {
	h uint64
	i int
}

// run reports, in a run of equal hashes sorted by index, each thing
// whose key an earlier one has.
func run(r []hid, same func(i, j int) bool, report func(i, prev int)) {
	for k := 1; k < len(r); k++ {
		for j := 0; j < k; j++ {
			if same(r[j].i, r[k].i) {
				report(r[k].i, r[j].i)
				break
			}
		}
	}
}

// strSeed seeds the hashes of names and addresses for dupes.
var strSeed = maphash.MakeSeed()

func strHash(s string) uint64 { return maphash.String(strSeed, s) }
