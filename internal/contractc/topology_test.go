package contractc

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cli"
)

const smallRecords = "../topology/testdata/small.json"

// The exit codes CI acts on: 2 for drift only, 1 for a tool failure
// (bad input, an unreadable drift input), 0 otherwise.
func TestTopologyExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	clean := write("clean.txt", `SwitchName=a-r01 Level=0 LinkSpeed=1 Nodes=gpu-a-r01-n[01-02]
SwitchName=a-r02 Level=0 LinkSpeed=1 Nodes=gpu-a-r02-n[01-02]
SwitchName=b-r01 Level=0 LinkSpeed=1 Nodes=gpu-b-r01-n[01-02]
SwitchName=b-r02 Level=0 LinkSpeed=1 Nodes=gpu-b-r02-n[01-02]
SwitchName=ma Level=1 LinkSpeed=1 Switches=a-r[01-02]
SwitchName=mb Level=1 LinkSpeed=1 Switches=b-r[01-02]
SwitchName=spine Level=2 LinkSpeed=1 Switches=ma,mb
`)
	moved := write("moved.txt", `SwitchName=a-r01 Level=0 LinkSpeed=1 Nodes=gpu-a-r01-n[01-02]
SwitchName=a-r02 Level=0 LinkSpeed=1 Nodes=gpu-a-r02-n[01-02]
SwitchName=b-r01 Level=0 LinkSpeed=1 Nodes=gpu-b-r01-n[01-02]
SwitchName=b-r02 Level=0 LinkSpeed=1 Nodes=gpu-b-r02-n[01-02]
SwitchName=ma Level=1 LinkSpeed=1 Switches=a-r[01-02],b-r02
SwitchName=mb Level=1 LinkSpeed=1 Switches=b-r01
SwitchName=spine Level=2 LinkSpeed=1 Switches=ma,mb
`)
	truncated := write("trunc.txt", "SwitchName=a-r01 Level=0 LinkSpeed=1 Nodes=gpu-a-r01-n[01-")
	dup := write("dup.json", `[{"node": "n1", "module": "ma", "rack": "a-r1"}, {"node": "n1", "module": "ma", "rack": "a-r2"}]`)
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"generate", []string{"topology", "--records", smallRecords}, cli.ExitOK},
		{"bad records", []string{"topology", "--records", dup}, cli.ExitTool},
		{"bad flag", []string{"topology", "--records", smallRecords, "--format", "xml"}, cli.ExitTool},
		{"no drift", []string{"topology", "drift", "--records", smallRecords, "--scontrol", clean}, cli.ExitOK},
		{"drift", []string{"topology", "drift", "--records", smallRecords, "--scontrol", moved}, cli.ExitFindings},
		{"unreadable drift input", []string{"topology", "drift", "--records", smallRecords, "--scontrol", truncated}, cli.ExitTool},
		{"help", []string{"topology", "drift", "-h"}, cli.ExitOK},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, tc.want, Main(tc.args, &out, &errb), "%s: %s%s", tc.name, out.String(), errb.String())
	}
}
