package compile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/seamdc/seam/internal/canon"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/plan"
)

// digestSet holds the digests a plan records: the whole contract set and
// each boundary.
type digestSet struct {
	contracts  string
	boundaries map[string]string
	files      map[string]string // contract file → sha256 of its bytes
}

// digests computes, with internal/canon, the sha256 of the canonical
// JSON of {"boundaries": …, "site": …} (the evaluated contracts without
// hidden fields or definitions) and of each boundary on its own.
//
// CUE's JSON export is the expensive part, so the value is exported
// once; each boundary is canonicalised from its part of the export, and
// the whole is assembled from the canonical parts, which is exactly the
// canonical form of the whole: keys sorted, no whitespace
// (TestDigestsMatchCanon holds this).
func digests(c *contract.Contracts) (digestSet, error) {
	raw, err := c.Loaded.Value.MarshalJSON()
	if err != nil {
		return digestSet{}, fmt.Errorf("digest of contracts: %w", err)
	}
	var root struct {
		Site       json.RawMessage            `json:"site"`
		Boundaries map[string]json.RawMessage `json:"boundaries"`
	}
	if err := json.Unmarshal(raw, &root); err != nil {
		return digestSet{}, fmt.Errorf("digest of contracts: %w", err)
	}
	site, err := canon.Bytes(root.Site)
	if err != nil {
		return digestSet{}, fmt.Errorf("digest of site: %w", err)
	}
	ids := make([]string, 0, len(root.Boundaries))
	for id := range root.Boundaries {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ds := digestSet{boundaries: map[string]string{}}
	var all bytes.Buffer
	all.WriteString(`{"boundaries":{`)
	for i, id := range ids {
		b, err := canon.Bytes(root.Boundaries[id])
		if err != nil {
			return digestSet{}, fmt.Errorf("digest of boundary %s: %w", id, err)
		}
		ds.boundaries[id] = canon.DigestBytes(b)
		if i > 0 {
			all.WriteByte(',')
		}
		key, err := canon.Bytes(quoteJSON(id))
		if err != nil {
			return digestSet{}, err
		}
		all.Write(key)
		all.WriteByte(':')
		all.Write(b)
	}
	all.WriteString(`},"site":`)
	all.Write(site)
	all.WriteByte('}')
	ds.contracts = canon.DigestBytes(all.Bytes())
	// the bytes of each file, which sat compares without compiling
	if ds.files, err = plan.FileDigests(c.Dir); err != nil {
		return digestSet{}, fmt.Errorf("digest of the contract files: %w", err)
	}
	return ds, nil
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}

// scoped returns the digests of the boundaries a plan restricted to
// module touches (all of them when module is empty).
func (ds digestSet) scoped(c *contract.Contracts, module string) map[string]string {
	out := map[string]string{}
	for _, b := range c.Boundaries {
		if module == "" || b.Supplier.To == module || b.Consumer.To == module {
			out[b.ID] = ds.boundaries[b.ID]
		}
	}
	return out
}
