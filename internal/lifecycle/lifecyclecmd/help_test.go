package lifecyclecmd

import (
	"bytes"
	"testing"

	"github.com/seamdc/seam/internal/cli/clitest"
)

// TestEveryCommandHelp: every subcommand's -h gives its description,
// its usage, its flags as --name and one example.
func TestEveryCommandHelp(t *testing.T) {
	clitest.WalkHelp(t, program, func(args []string, stdout, stderr *bytes.Buffer) int { return Main(args, stdout, stderr) })
}
