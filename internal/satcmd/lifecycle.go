package satcmd

import "github.com/seamdc/seam/internal/lifecycle/lifecyclecmd"

// sat lifecycle: the lifecycle store (internal/lifecycle/lifecyclecmd
// has its subcommands). Its own program bounds the one subcommand that
// evaluates CUE (init); the others work on the store, for as long as a
// large one takes.
func init() {
	register("lifecycle", lifecyclecmd.Summary, lifecyclecmd.Main)
	program.NoBudget["lifecycle"] = true
}
