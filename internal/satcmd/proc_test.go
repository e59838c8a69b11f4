package satcmd

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// satProc is the sat binary running in a process of its own, for the
// tests that kill it: its stdout is read line by line, ready closes at
// the first line that starts with the prefix it was given (readyAt is
// when), and exited receives its end once both outputs are read.
type satProc struct {
	cmd     *exec.Cmd
	ready   chan struct{}
	readyAt time.Time
	exited  chan error
	out     strings.Builder
	stderr  strings.Builder
}

func startSat(t *testing.T, bin, readyPrefix string, args ...string) *satProc {
	t.Helper()
	p := &satProc{cmd: exec.Command(bin, args...), ready: make(chan struct{}), exited: make(chan error, 1)}
	stdout, err := p.cmd.StdoutPipe()
	require.NoError(t, err)
	p.cmd.Stderr = &p.stderr
	require.NoError(t, p.cmd.Start())
	var wg sync.WaitGroup
	wg.Go(func() {
		sc := bufio.NewScanner(stdout)
		seen := false
		for sc.Scan() {
			p.out.WriteString(sc.Text() + "\n")
			if !seen && strings.HasPrefix(sc.Text(), readyPrefix) {
				seen = true
				p.readyAt = time.Now()
				close(p.ready)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	})
	go func() { wg.Wait(); p.exited <- p.cmd.Wait() }()
	return p
}

// killAfter waits d for the process to end, else kills it (SIGKILL);
// it returns whether it was killed, and the exit.
func (p *satProc) killAfter(d time.Duration) (bool, error) {
	select {
	case err := <-p.exited:
		return false, err
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		return true, <-p.exited
	}
}

// output is what it printed, stdout then stderr (once it exited).
func (p *satProc) output() string { return p.out.String() + p.stderr.String() }
