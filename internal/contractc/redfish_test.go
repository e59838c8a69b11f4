package contractc

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seamdc/seam/internal/cli"
)

// A service that takes the connection and never answers: the import
// gives up after --timeout, saying so and naming the URL, instead of
// waiting for ever as http.DefaultClient would.
func TestRedfishImportTimesOut(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})

	const timeout = 300 * time.Millisecond
	url := "http://" + ln.Addr().String() + "/redfish/v1"
	var out, errb bytes.Buffer
	start := time.Now()
	code := Main([]string{"redfish", "--import", url, "--timeout", timeout.String()}, &out, &errb)
	took := time.Since(start)

	assert.Equal(t, cli.ExitTool, code, errb.String())
	assert.Contains(t, errb.String(), url+"/: timed out after 300ms")
	assert.Empty(t, out.String())
	assert.GreaterOrEqual(t, took, timeout, "gave up before its timeout")
	assert.Less(t, took, timeout+5*time.Second, "ran well past its timeout")
}

func TestRedfishTimeoutFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := Main([]string{"redfish", "--import", "out", "--timeout", "0s"}, &out, &errb)
	assert.Equal(t, cli.ExitTool, code)
	assert.Contains(t, errb.String(), "--timeout 0s: want a positive duration")
}
