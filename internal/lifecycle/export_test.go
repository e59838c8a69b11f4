package lifecycle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Rechain is what an attacker who knows the chain's recipe does after
// editing events: recompute every stored hash, so that the chain holds
// again (only the seals, signed by keys, can show it).
func Rechain(ctx context.Context, s *Store) error {
	type fix struct {
		seq  int64
		hash string
	}
	var fixes []fix
	head := chainGenesis[:]
	h := sha256.New()
	err := s.eachChained(ctx, s.db, func(seq int64, r *chainRow, _ string) error {
		head = r.sum(h, head)
		fixes = append(fixes, fix{seq, hex.EncodeToString(head)})
		return nil
	})
	if err != nil {
		return err
	}
	for chunk := range slices.Chunk(fixes, 500) {
		var q strings.Builder
		args := make([]any, 0, 2*len(chunk))
		q.WriteString("WITH v(seq, h) AS (VALUES ")
		for i, f := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(CAST(? AS BIGINT), ?)")
			args = append(args, f.seq, f.hash)
		}
		q.WriteString(") UPDATE events SET hash = v.h FROM v WHERE events.seq = v.seq")
		if _, err := s.db.ExecContext(ctx, s.q(q.String()), args...); err != nil {
			return err
		}
	}
	return nil
}
