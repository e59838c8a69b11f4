package ingest

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// rankRe is the rank line's grammar as a regular expression: parseRank
// reads it by hand, for speed, and must agree with it.
var rankRe = regexp.MustCompile(`^#?\s*Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$`)

func FuzzParseRank(f *testing.F) {
	for _, s := range []string{
		"#  Rank  0 Group  0 Pid  41221 on  node-a01 device  0 [0x1b] NVIDIA H100 80GB HBM3",
		"#  Rank 15 Group  0 Pid   9001 on gpu-b2 device  7 [0000:df:00.0] NVIDIA H200",
		"#  Rank  3 Group  0 Pid  1234 on host device  3 [0x9c]",
		"# Rank 1 Group 0 Pid 2 on h device 1 [a[b] x",
		"#  Rank  x Group  0 Pid  1 on h device 0 [0x1] G",
		"#  Rank  1 Group  0 Pid  1 on h device 0[0x1] G",
		"#  Rank  1 Group  0 Pid  1 on h device 0 [0x1 G",
		"#  Rank  1 Group  0 Pid  1 on h extra device 0 [0x1] G",
		"Rank 2 Group 0 Pid 9 on n device 2 [b]",
		"#  Rank  1 Group  0 Pid  1 on h device +1 [0x1] G",
		"# Using devices",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = strings.TrimSpace(s)
		got := parseRank(s, 7)
		m := rankRe.FindStringSubmatch(s)
		if (got == nil) != (m == nil) {
			t.Fatalf("%q: parseRank %v, the grammar %q", s, got, m)
		}
		if m == nil {
			return
		}
		rank, err1 := strconv.Atoi(m[1])
		dev, err2 := strconv.Atoi(m[3])
		if err1 != nil || err2 != nil {
			return // numbers past int: parseRank declines them
		}
		want := NCCLRank{Rank: rank, Host: m[2], Device: dev, Bus: m[4], GPU: strings.TrimSpace(m[5]), Line: 7}
		if *got != want {
			t.Fatalf("%q: parseRank %+v, the grammar %+v", s, *got, want)
		}
	})
}
