package lifecyclecmd

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/lifecycle"
)

func init() {
	register("reconcile", "record what sat discover found (its --event file) as history", runReconcile).
		WithExample("sat lifecycle reconcile discover-event.json --key discover")
}

func runReconcile(args []string, stdout, stderr io.Writer) int {
	c := newCommon("FILE (--key KEY | --db-role) [--format text|json]").withAuth().withFormat()
	pos, err := c.parse(args, 1, "a reconcile event file (sat discover --event FILE)")
	if err != nil {
		return fail(stderr, "reconcile", c, err)
	}
	raw, err := os.ReadFile(pos[0])
	if err != nil {
		return fail(stderr, "reconcile", c, err)
	}
	r, err := lifecycle.ParseReconcile(raw)
	if err != nil {
		return fail(stderr, "reconcile", c, fmt.Errorf("%s: %w", pos[0], err))
	}
	a, err := c.auth()
	if err != nil {
		return fail(stderr, "reconcile", c, err)
	}
	c.dry(stdout)
	ctx := context.Background()
	s, err := c.open(ctx)
	if err != nil {
		return fail(stderr, "reconcile", c, err)
	}
	defer s.Close()
	rec, err := s.RecordReconcile(ctx, a, *r)
	if err != nil {
		return fail(stderr, "reconcile", c, fmt.Errorf("%s: %w", pos[0], err))
	}
	emit(stdout, c.format, rec, func(w io.Writer) {
		fmt.Fprintf(w, "recorded %s: %d finding(s) on %d element(s) of %d checked (event %d)\n", pos[0], len(r.Findings), rec.Elements, r.Checked, rec.Seq)
		if len(r.Errors) > 0 {
			fmt.Fprintf(w, "note: %d of %d BMC(s) answered: what the others hold was not seen\n", r.Answered, r.BMCs)
		}
	})
	return cli.ExitOK
}
