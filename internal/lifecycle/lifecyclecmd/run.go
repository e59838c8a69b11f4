package lifecyclecmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/lifecycle"
)

// RunHelp describes sat run's lifecycle flags, for its --help.
const RunHelp = `Lifecycle (after the run, on its evidence):
  --lifecycle STORE            offer the transition the bundle allows: its module
                               installed → commissioned, when the SAT passed and
                               its bundle is signed by a key the store trusts
  --commission                 and make it (with --lifecycle-key or --lifecycle-db-role)
  --lifecycle-key KEY          the SSH key that signs the transition ($` + EnvKey + `)
  --lifecycle-as PRINCIPAL     the key's principal, when it has several
  --lifecycle-db-role          make it as the PostgreSQL session's role
  --lifecycle-db-password REF  PostgreSQL's password: env:NAME or file:PATH
  --commission-reason TEXT     why (default: SAT passed: DIR)`

// RunHook is what sat run does with the lifecycle store after a run.
type RunHook struct {
	c          *common
	commission bool
	reason     string
}

// runFlags are sat run's lifecycle flags and whether each takes a value.
var runFlags = map[string]bool{
	"lifecycle": true, "lifecycle-db-password": true, "lifecycle-key": true, "lifecycle-as": true,
	"lifecycle-db-role": false, "commission": false, "commission-reason": true,
}

// SplitRunArgs takes sat run's lifecycle flags out of its arguments and
// returns the rest, and the hook (nil without --lifecycle). With
// --commission it checks, before anything runs, that the store opens
// and the key loads.
func SplitRunArgs(args []string) ([]string, *RunHook, error) {
	var ours, rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, mine := runFlags[name]
		if !strings.HasPrefix(a, "-") || !mine {
			rest = append(rest, a)
			continue
		}
		ours = append(ours, a)
		if takes && !hasValue && i+1 < len(args) {
			i++
			ours = append(ours, args[i])
		}
	}
	if len(ours) == 0 {
		return rest, nil, nil
	}
	h := &RunHook{c: &common{fs: flag.NewFlagSet("sat run (lifecycle)", flag.ContinueOnError), lookupEnv: os.LookupEnv}}
	fs := h.c.fs
	fs.SetOutput(io.Discard)
	fs.StringVar(&h.c.store, "lifecycle", "", "")
	fs.StringVar(&h.c.password, "lifecycle-db-password", os.Getenv(EnvPassword), "")
	fs.StringVar(&h.c.key, "lifecycle-key", os.Getenv(EnvKey), "")
	fs.StringVar(&h.c.principal, "lifecycle-as", os.Getenv(EnvAs), "")
	fs.BoolVar(&h.c.dbRole, "lifecycle-db-role", false, "")
	fs.BoolVar(&h.commission, "commission", false, "")
	fs.StringVar(&h.reason, "commission-reason", "", "")
	if err := fs.Parse(ours); err != nil {
		return nil, nil, cli.Usagef("%v", err)
	}
	if h.c.store == "" {
		return nil, nil, cli.Usagef("--commission and the --lifecycle-… flags need --lifecycle STORE")
	}
	if h.commission {
		if _, err := h.c.auth(); err != nil {
			return nil, nil, err
		}
		s, err := h.c.open(context.Background())
		if err != nil {
			return nil, nil, err
		}
		s.Close()
	}
	return rest, h, nil
}

// After offers (or, with --commission, makes) the transition the
// bundle in dir allows, once the run exited with exit; it returns sat
// run's exit code: the run's, or 1 when the store refused or failed.
func (h *RunHook) After(dir string, exit int, stdout, stderr io.Writer) int {
	if exit != cli.ExitOK && exit != cli.ExitFindings {
		fmt.Fprintf(stderr, "lifecycle: nothing to offer: the run did not finish (exit %d)\n", exit)
		return exit
	}
	ctx := context.Background()
	s, err := h.c.open(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "sat run: lifecycle: %v\n", err)
		return cli.ExitTool
	}
	defer s.Close()
	o, err := s.OfferSAT(ctx, dir)
	if err != nil {
		fmt.Fprintf(stderr, "sat run: lifecycle: %v\n", err)
		return cli.ExitTool
	}
	if !h.record(ctx, s, dir, stdout, stderr) && h.commission {
		return cli.ExitTool
	}
	if !h.commission || !o.Ready {
		fmt.Fprintln(stdout, OfferText(o))
		if h.commission && exit == cli.ExitOK {
			return cli.ExitTool
		}
		return exit
	}
	a, err := h.c.auth()
	if err == nil {
		var mv *lifecycle.Moved
		if mv, err = s.Commission(ctx, a, dir, h.reason); err == nil {
			fmt.Fprintf(stdout, "lifecycle: %s: %s → %s with %d element(s) it contains, by %s (event %d)\n", mv.Element, mv.From, mv.To, mv.Count-1, mv.By, mv.Seq)
			return exit
		}
	}
	fmt.Fprintf(stderr, "sat run: lifecycle: the run passed, but %s was not commissioned: %v\n", o.Element, err)
	if lifecycle.IsConflict(err) {
		return ExitConflict
	}
	return cli.ExitTool
}

// record opens the run's issues in the store's log, when a key (or the
// database role) says who: every failed case an issue. It reports
// whether the bundle is recorded.
func (h *RunHook) record(ctx context.Context, s *lifecycle.Store, dir string, stdout, stderr io.Writer) bool {
	a, err := h.c.auth()
	if err != nil {
		fmt.Fprintf(stdout, "lifecycle: the run's issues are not recorded (no --lifecycle-key): sat issues open --from %s --store %s --key KEY\n", dir, h.c.store)
		return false
	}
	recs, err := s.RecordBundle(ctx, a, dir)
	if err != nil {
		fmt.Fprintf(stderr, "sat run: lifecycle: the run's issues are not recorded: %v\n", err)
		return false
	}
	PrintRecorded(stdout, recs)
	return true
}
