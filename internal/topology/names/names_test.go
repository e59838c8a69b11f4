package names

import (
	"strings"
	"testing"
)

// TestNode: the names vet and topology refuse, in the words both print.
func TestNode(t *testing.T) {
	for _, tc := range []struct {
		slurm, kube string
		want        []string
	}{
		{"gpu-a-r01-n01", "gpu-a-r01-n01.cluster.example", nil},
		{"gpu-a-r01-n01", "", nil},
		{"gpu_a", "", []string{`Kubernetes cannot take the name "gpu_a": '_': lower-case letters, digits and '-' (not first or last) only`}},
		{"gpu-a-r01-n[01]", "gpu-a-r01-n01", []string{`Slurm cannot take the name: "gpu-a-r01-n[01]" has '[' at position 12: Slurm names take letters, digits, '-', '_' and '.' (brackets and commas are hostlist syntax)`}},
		{"", "", []string{"Slurm cannot take the name: an empty name"}},
		{"n1", "N1", []string{`Kubernetes cannot take the name "N1": 'N': lower-case letters, digits and '-' (not first or last) only`}},
		{"ALL", "", []string{`Slurm cannot take the name: "ALL" is a reserved word in slurm.conf`, `Kubernetes cannot take the name "ALL": 'A': lower-case letters, digits and '-' (not first or last) only`}},
		{"a", "a..b", []string{`Kubernetes cannot take the name "a..b": each dot-separated part needs 1 to 63 characters`}},
	} {
		errs := Node(tc.slurm, tc.kube)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if len(got) != len(tc.want) {
			t.Errorf("Node(%q, %q) = %q, want %q", tc.slurm, tc.kube, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("Node(%q, %q)[%d] = %q, want %q", tc.slurm, tc.kube, i, got[i], tc.want[i])
			}
		}
	}
}

// TestSwitch: a rack's name as its leaf switch.
func TestSwitch(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"a-r01", ""},
		{"a-r01 (row A)", `Slurm cannot take it as a switch name: "a-r01 (row A)" has ' ' at position 6: Slurm names take letters, digits, '-', '_' and '.' (brackets and commas are hostlist syntax)`},
		{string(make([]byte, 65)), "longer than Slurm's 64"},
	} {
		err := Switch(tc.name)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Switch(%q) = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("Switch(%q) = %v, want %q", tc.name, err, tc.want)
		}
	}
}
