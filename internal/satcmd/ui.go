package satcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/seamdc/seam/internal/liveview"
	"github.com/seamdc/seam/internal/runner"
)

// liveUI is sat run --ui: the live view of the run, served while it
// runs (internal/liveview).
type liveUI struct {
	srv  *liveview.Server
	ctl  *runControl
	done chan error
}

// runControl is the run the page controls, once it exists: the
// runner's own Pause, Unpause and AbortBy.
type runControl struct{ r atomic.Pointer[runner.Runner] }

var errNotStarted = errors.New("the run has not started yet")

func (c *runControl) Pause(by string) error {
	if r := c.r.Load(); r != nil {
		return r.Pause(by)
	}
	return errNotStarted
}

func (c *runControl) Unpause(by string) error {
	if r := c.r.Load(); r != nil {
		return r.Unpause(by)
	}
	return errNotStarted
}

func (c *runControl) AbortBy(by, via string) {
	if r := c.r.Load(); r != nil {
		r.AbortBy(by, via)
	}
}

// uiTokens are --ui-token-file's tokens, or, without it, an operator's
// token for who and a viewer's token, made for this run; configured
// says they came from a file.
func uiTokens(f runFlags, who string) (tokens []liveview.Token, configured bool, err error) {
	if f.uiTokens != "" {
		tokens, err = liveview.ReadTokens(f.uiTokens)
		return tokens, true, err
	}
	return []liveview.Token{liveview.NewToken(liveview.Operator, who), liveview.NewToken(liveview.Viewer, "viewer")}, false, nil
}

// startUI serves the live view on --ui and sets it as cfg's observer;
// without --ui it does nothing. The addresses to open are printed on
// stderr.
func startUI(ctx context.Context, f runFlags, cfg *runner.Config, stderr io.Writer, log *slog.Logger) (*liveUI, error) {
	if f.ui == "" {
		return nil, nil
	}
	tokens, configured, err := uiTokens(f, cfg.Operator.Who())
	if err != nil {
		return nil, err
	}
	if err := liveview.CheckAddr(f.ui, configured); err != nil {
		return nil, err
	}
	ui := &liveUI{ctl: &runControl{}, done: make(chan error, 1)}
	ui.srv, err = liveview.New(liveview.Config{Tokens: tokens, Control: ui.ctl, Log: log})
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", f.ui)
	if err != nil {
		return nil, fmt.Errorf("--ui %s: %w (is another sat run serving there? pick another port)", f.ui, err)
	}
	base := "http://" + l.Addr().String() + "/"
	if configured {
		fmt.Fprintf(stderr, "sat run: live view at %s#token=YOUR-TOKEN (tokens from %s)\n", base, f.uiTokens)
	} else {
		for _, t := range tokens {
			what := "read-only"
			if t.Role == liveview.Operator {
				what = "operator " + t.Name + ": pause, resume and abort"
			}
			fmt.Fprintf(stderr, "sat run: live view (%s) at %s#token=%s\n", what, base, t.Value)
		}
	}
	go func() { ui.done <- ui.srv.Serve(ctx, l) }()
	cfg.Observer = ui.srv
	return ui, nil
}

// bind gives the page the run to control.
func (ui *liveUI) bind(r *runner.Runner) {
	if ui != nil {
		ui.ctl.r.Store(r)
	}
}

// close stops serving, once the pages had the run's end (or a second
// of wall time: the run has ended, and the live view holds nothing up).
func (ui *liveUI) close() {
	if ui == nil {
		return
	}
	select {
	case <-ui.srv.Ended():
	case <-time.After(time.Second):
	}
	ui.srv.Close()
	<-ui.done
}
