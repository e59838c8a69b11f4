package satcmd

import (
	"fmt"
	"io"

	"github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"
)

// runWithLifecycle is sat run: run.go's command, and with --lifecycle
// STORE [--commission] the transition the run's evidence allows offered,
// or made, afterwards (internal/lifecycle/lifecyclecmd's RunHook).
func runWithLifecycle(args []string, stdout, stderr io.Writer) int {
	rest, hook, err := lifecyclecmd.SplitRunArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "sat run: %v\n", err)
		return 1
	}
	code := runRun(rest, stdout, stderr)
	if wantsHelp(rest) {
		fmt.Fprintln(stderr, "\n"+lifecyclecmd.RunHelp)
		return code
	}
	if hook == nil {
		return code
	}
	f, _, _, err := parseRun(rest)
	if err != nil {
		return code
	}
	dir := f.out
	if f.resume != "" {
		dir = f.resume
	}
	return hook.After(dir, code, stdout, stderr)
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}
