package lifecyclecmd_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/crypto/ssh"

	"github.com/seamdc/seam/internal/contractc"
	"github.com/seamdc/seam/internal/lifecycle"
	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
	"github.com/seamdc/seam/internal/peer/pgtest"
	"github.com/seamdc/seam/internal/satcmd"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"sat":       func() { os.Exit(satcmd.Main(os.Args[1:], os.Stdout, os.Stderr)) },
		"contractc": func() { os.Exit(contractc.Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs sat lifecycle on real files (testdata/script/*.txtar)
// against a SQLite store and a real PostgreSQL; sat and contractc are
// the real commands (sat run makes the SAT evidence). $EXAMPLE is the
// worked example, $FIXTURES the fixtures directory. Commands:
//
//	keygen NAME                  an SSH key NAME (and NAME.pub), listed in allowed_signers
//	baseline NODE SERIAL FILE    a passing burn-in baseline of NODE, taken now
//	pgdb                         point SEAM_LIFECYCLE_STORE at a new PostgreSQL database
func TestScripts(t *testing.T) {
	t.Parallel()
	example, err := filepath.Abs("../../../contracts/examples/threemodule")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../../fixtures")
	if err != nil {
		t.Fatal(err)
	}
	var pg *pgtest.Server
	var pgOnce sync.Once
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") == "1",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EXAMPLE", example)
			env.Setenv("FIXTURES", fixtures)
			env.Setenv(lifecyclecmd.EnvStore, "")
			env.Setenv(lifecyclecmd.EnvKey, "")
			env.Setenv(lifecyclecmd.EnvAs, "")
			env.Setenv(lifecyclecmd.EnvPassword, "")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"keygen": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 1 {
					ts.Fatalf("usage: keygen NAME")
				}
				pub := writeKey(ts, ts.MkAbs(args[0]), args[0])
				f, err := os.OpenFile(ts.MkAbs("allowed_signers"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				ts.Check(err)
				_, err = fmt.Fprintf(f, "%s namespaces=\"seam-lifecycle\" %s", args[0], ssh.MarshalAuthorizedKey(pub))
				ts.Check(err)
				ts.Check(f.Close())
			},
			"baseline": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) != 3 {
					ts.Fatalf("usage: baseline NODE SERIAL FILE")
				}
				ts.Check(lifecycle.WriteBaseline(ts.MkAbs(args[2]), &lifecycle.Baseline{Node: args[0], Serial: args[1], Taken: time.Now().UTC(),
					Tool: "testscript", Passed: true, Metrics: map[string]float64{"gpu_count": 4, "nccl_allreduce_busbw_gbps": 812.4}}))
			},
			"pgdb": func(ts *testscript.TestScript, neg bool, args []string) {
				pgOnce.Do(func() { pg = pgtest.Start(t, pgtest.Options{TLS: true}) })
				db := pg.CreateDatabase(t)
				ts.Setenv(lifecyclecmd.EnvStore, pg.URL(db, pg.User)+"?sslmode=prefer")
				ts.Setenv("PGTEST_PASSWORD", pg.Password)
				ts.Setenv(lifecyclecmd.EnvPassword, "env:PGTEST_PASSWORD")
			},
		},
	})
}

// writeKey writes an ed25519 key to path (OpenSSH) and path.pub.
func writeKey(t interface{ Fatalf(string, ...any) }, path, comment string) ssh.PublicKey {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("%v", err)
	}
	block, err := ssh.MarshalPrivateKey(priv, comment)
	if err != nil {
		t.Fatalf("%v", err)
	}
	sp, _ := ssh.NewPublicKey(pub)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatalf("%v", err)
	}
	if err := os.WriteFile(path+".pub", ssh.MarshalAuthorizedKey(sp), 0o644); err != nil {
		t.Fatalf("%v", err)
	}
	return sp
}
