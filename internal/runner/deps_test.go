package runner

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The run engine needs only the plan: neither it nor the device layer
// nor the evidence imports the compiler or the contract model (sat
// checks a plan is current by hashing the contract files it names).
// The evidence, grading, plan and results packages link no CUE at all;
// the device layer links what loading a CUE binding needs.
func TestRunEngineNeedsOnlyThePlan(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(goTool); err != nil {
		goTool = "go"
	}
	const seam = "github.com/seamdc/seam/internal/"
	forbidden := []string{seam + "compile", seam + "contract", seam + "sign", seam + "sim"}
	for _, pkg := range []string{"runner", "binding", "probe", "loadbank", "evidence", "grade", "plan", "results"} {
		out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", seam+pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
		deps := strings.Fields(string(out))
		cue := 0
		for _, d := range deps {
			for _, f := range forbidden {
				assert.NotEqual(t, f, d, "%s imports %s", pkg, f)
			}
			if strings.HasPrefix(d, "cuelang.org/") {
				cue++
			}
		}
		switch pkg {
		case "evidence", "grade", "plan", "results":
			assert.Zero(t, cue, "%s links no CUE", pkg)
		default:
			assert.Positive(t, cue, "%s loads CUE bindings and profiles", pkg)
		}
	}
}
