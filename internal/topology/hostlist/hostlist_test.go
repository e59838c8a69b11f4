package hostlist

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/peer"
)

func TestCompress(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"gpu01"}, "gpu01"},
		{[]string{"gpu-a-r01-n02", "gpu-a-r01-n01", "gpu-a-r01-n03"}, "gpu-a-r01-n[01-03]"},
		{[]string{"gpu-a-r01-n01", "gpu-a-r02-n01", "gpu-a-r01-n02"}, "gpu-a-r01-n[01-02],gpu-a-r02-n01"},
		{[]string{"n1", "n2", "n4", "n5", "n6", "n9"}, "n[1-2,4-6,9]"},
		{[]string{"n9", "n10", "n11"}, "n[9-11]"},
		{[]string{"n08", "n09", "n10"}, "n[08-10]"},
		{[]string{"n099", "n100"}, "n[099-100]"},
		{[]string{"x", "n1", "n1", "y"}, "n1,x,y"},
		{[]string{"ma", "mb", "mc"}, "ma,mb,mc"},
		{[]string{"n7", "n007"}, "n[7,007]"},
	} {
		assert.Equal(t, tc.want, Compress(tc.in), "%v", tc.in)
	}
}

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"gpu01", []string{"gpu01"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"n[1-2,5],m", []string{"n1", "n2", "n5", "m"}},
		{"r[1-2]-n[1-2]", []string{"r1-n1", "r1-n2", "r2-n1", "r2-n2"}},
		{"a[1-2]b", []string{"a1b", "a2b"}},
		{" n[9-10] ", []string{"n9", "n10"}},
	} {
		got, err := Expand(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestExpandErrors(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"n[01-1", "never closed (truncated?)"},
		{"n[01-18],gpu-a-r02-n[", "never closed"},
		{"n]", "']' without '['"},
		{"n[[1]]", "a bracket inside a bracket"},
		{"n[]", "empty brackets"},
		{"n[3-1]", "runs backwards"},
		{"n[a-b]", `"a" is not a number`},
		{"n[1-]", "a missing number"},
		{"a,,b", "an empty name at column 3"},
		{"n[0-99999999]", "more than"},
	} {
		_, err := Expand(tc.in)
		assert.ErrorContains(t, err, tc.err, tc.in)
	}
}

func TestCheckName(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{"gpu-a-r01-n01", ""},
		{"node_1.cluster", ""},
		{"", "empty"},
		{"gpu[1]", "hostlist syntax"},
		{"a,b", "hostlist syntax"},
		{"a b", "' '"},
		{"a=b", "'='"},
		{"-a", "starts with"},
		{"DEFAULT", "reserved"},
		{strings.Repeat("x", 65), "longer than Slurm's 64"},
	} {
		err := CheckName(tc.in, 64)
		if tc.err == "" {
			assert.NoError(t, err, tc.in)
		} else {
			assert.ErrorContains(t, err, tc.err, tc.in)
		}
	}
}

// randomNames draws names such as the integrator writes, and some that
// are not: mixed widths, prefixes with digits, names without numbers.
func randomNames(r *rand.Rand) []string {
	n := r.IntN(40)
	out := make([]string, 0, n)
	for range n {
		prefix := []string{"gpu-a-r01-n", "gpu-b-r12-n", "n", "node", "x"}[r.IntN(5)]
		switch r.IntN(6) {
		case 0:
			out = append(out, prefix)
		case 1:
			out = append(out, fmt.Sprintf("%s%d", prefix, r.IntN(130)))
		default:
			out = append(out, fmt.Sprintf("%s%02d", prefix, r.IntN(40)))
		}
	}
	return out
}

// Compress then Expand gives the names back, sorted, without duplicates.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 14))
	for range 2000 {
		names := randomNames(r)
		got, err := Expand(Compress(names))
		require.NoError(t, err)
		want := slices.Clone(names)
		slices.Sort(want)
		want = slices.Compact(want)
		slices.Sort(got)
		if len(want) == 0 {
			require.Empty(t, got)
			continue
		}
		require.Equal(t, want, got, "names %v compressed %q", names, Compress(names))
	}
}

// Slurm's own scontrol reads what Compress writes, and writes the same
// expression for names of one width (the integrator's); for any names
// it expands the expression to the same set.
func TestAgainstScontrol(t *testing.T) {
	scontrol := peer.Need(t, "scontrol")
	conf := filepath.Join(t.TempDir(), "slurm.conf")
	require.NoError(t, os.WriteFile(conf, []byte("ClusterName=hostlist\nSlurmctldHost=localhost\n"), 0o644))
	run := func(args ...string) string {
		t.Helper()
		t.Setenv("SLURM_CONF", conf)
		out, err := peer.Run(10*time.Second, append([]string{scontrol}, args...)...)
		require.NoError(t, err)
		return strings.TrimSpace(out)
	}
	uniform := []string{}
	for r := 1; r <= 3; r++ {
		for n := 1; n <= 18; n++ {
			if n != 7 {
				uniform = append(uniform, fmt.Sprintf("gpu-a-r%02d-n%02d", r, n))
			}
		}
	}
	assert.Equal(t, run("show", "hostlistsorted", strings.Join(uniform, ",")), Compress(uniform))

	rnd := rand.New(rand.NewPCG(2, 14))
	for range 20 {
		names := randomNames(rnd)
		if len(names) == 0 {
			continue
		}
		expr := Compress(names)
		got := strings.Fields(run("show", "hostnames", expr))
		want, err := Expand(expr)
		require.NoError(t, err)
		slices.Sort(got)
		slices.Sort(want)
		assert.Equal(t, want, got, "scontrol show hostnames %s", expr)
	}
}

func TestAbbrev(t *testing.T) {
	assert.Equal(t, "gpu-b-r07-n[01-02].cluster.example,gpu-b-r08-n01.cluster.example", Abbrev([]string{"gpu-b-r07-n02.cluster.example", "gpu-b-r07-n01.cluster.example", "gpu-b-r08-n01.cluster.example"}))
	assert.Equal(t, "n[1-2],x,n1.a", Abbrev([]string{"n1", "n2", "x", "n1.a"}))
}
