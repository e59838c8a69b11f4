package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const stream = `{"Action":"start","Package":"github.com/seamdc/seam/internal/a"}
{"Action":"output","Package":"github.com/seamdc/seam/internal/a","Output":"-test.shuffle 42\n"}
{"Action":"run","Package":"github.com/seamdc/seam/internal/a","Test":"TestOK"}
{"Action":"output","Package":"github.com/seamdc/seam/internal/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"github.com/seamdc/seam/internal/a","Test":"TestOK","Elapsed":0.1}
{"Action":"output","Package":"github.com/seamdc/seam/internal/a","Output":"ok  \tgithub.com/seamdc/seam/internal/a\t75.0s\n"}
{"Action":"pass","Package":"github.com/seamdc/seam/internal/a","Elapsed":75}
{"Action":"run","Package":"github.com/seamdc/seam/internal/b","Test":"TestBad"}
{"Action":"output","Package":"github.com/seamdc/seam/internal/b","Test":"TestBad","Output":"    b_test.go:9: boom\n"}
{"Action":"fail","Package":"github.com/seamdc/seam/internal/b","Test":"TestBad","Elapsed":0.2}
{"Action":"output","Package":"github.com/seamdc/seam/internal/b","Output":"-test.shuffle 7\n"}
{"Action":"output","Package":"github.com/seamdc/seam/internal/b","Output":"FAIL\tgithub.com/seamdc/seam/internal/b\t0.3s\n"}
{"Action":"fail","Package":"github.com/seamdc/seam/internal/b","Elapsed":0.3}
`

func TestFollowAndReport(t *testing.T) {
	var out bytes.Buffer
	results, failed, err := follow(strings.NewReader(stream), &out)
	require.NoError(t, err)
	assert.True(t, failed)
	report(&out, results, map[string]float64{"default": 60, "internal/b": 10})
	got := out.String()
	assert.NotContains(t, got, "=== RUN   TestOK", "a passing test's output is not shown")
	assert.NotContains(t, got, "-test.shuffle 42")
	assert.Contains(t, got, "b_test.go:9: boom")
	assert.Contains(t, got, "-test.shuffle 7", "a failed package's seed, to repeat it")
	assert.Contains(t, got, "  internal/a                              75.0 s of    60 s  OVER BUDGET\n")
	assert.Contains(t, got, "  all packages                            75.3 s of    70 s budgeted; CI stops at 5400 s\n")
	assert.Contains(t, got, "1 package(s) over budget")
}
