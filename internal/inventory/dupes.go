package inventory

import (
	"hash/maphash"
	"slices"
)

// idBits is how many low bits of a packed sort key hold an index.
const idBits = 21

// dupes calls report(i, prev) for each of n things whose key equals the
// key of an earlier one, prev the first. hash gives thing i's key's
// hash (false: it has no key); same compares two things' keys. It sorts
// hashes instead of filling a map: on a site of 100,000 nodes a map of
// their names costs more to make than the rest of the check.
func dupes(n int, hash func(i int) (uint64, bool), same func(i, j int) bool, report func(i, prev int)) {
	var all []hid
	if n < 1<<idBits {
		// the hash's low bits and the index in one word: the fastest sort
		keys := make([]uint64, 0, n)
		for i := range n {
			if h, ok := hash(i); ok {
				keys = append(keys, h<<idBits|uint64(i))
			}
		}
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
