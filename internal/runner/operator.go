package runner

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/seamdc/seam/internal/clock"
)

// Operator is the person (or stand-in) who accepts the risk of
// energising and confirms manual steps and stated preconditions.
type Operator interface {
	// Who names the operator in the evidence.
	Who() string
	// AcceptRisk asks for explicit acceptance of the risk of energising
	// the site as summary describes; it returns how it was given.
	AcceptRisk(ctx context.Context, summary string) (how string, err error)
	// Confirm shows a manual step or a precondition and waits for the
	// operator to confirm it was done, or holds.
	Confirm(ctx context.Context, p Prompt) (Answer, error)
}

// Prompt is what an operator is asked to do or confirm.
type Prompt struct {
	Case   string
	Step   string // a step id, or "precondition N"
	Action string
	Expect string
}

// Answer is an operator's confirmation.
type Answer struct {
	By       string
	Prompted time.Time
	At       time.Time
	Text     string
}

// ErrNoOperator is returned by an operator who cannot confirm anything:
// a non-interactive run on a real site.
var ErrNoOperator = errors.New("a person must confirm this step, and the run is not interactive")

// ErrRefused is returned when the operator answers anything but yes.
var ErrRefused = errors.New("the operator did not confirm")

// Simulator is the operator of a simulated run: the risk is accepted by
// --sim itself, and the simulator performs and confirms manual steps.
// Name is the person who runs it (sat run --operator), if given.
type Simulator struct {
	Clock clock.Clock
	Name  string
}

// Who is the person who runs the simulation, or "simulator".
func (s Simulator) Who() string {
	if s.Name != "" {
		return s.Name
	}
	return "simulator"
}

// AcceptRisk accepts: --sim implies it.
func (Simulator) AcceptRisk(context.Context, string) (string, error) {
	return "implied: the site is simulated", nil
}

// Confirm confirms at once.
func (s Simulator) Confirm(context.Context, Prompt) (Answer, error) {
	now := s.Clock.Now()
	return Answer{By: "simulator", Prompted: now, At: now, Text: "yes"}, nil
}

// Unattended is the operator of a non-interactive run on a real site:
// it accepts the risk only when --accept-risk=energize was given, and
// stops at any manual step.
type Unattended struct {
	Name     string
	Accepted bool // --accept-risk=energize
}

// Who is the name given.
func (u Unattended) Who() string { return u.Name }

// AcceptRisk accepts only with the flag.
func (u Unattended) AcceptRisk(context.Context, string) (string, error) {
	if !u.Accepted {
		return "", errors.New("energising needs explicit risk acceptance: pass --accept-risk=energize, or run sat on a terminal and answer yes")
	}
	return "--accept-risk=energize", nil
}

// Confirm refuses: nobody is there.
func (u Unattended) Confirm(_ context.Context, p Prompt) (Answer, error) {
	return Answer{}, fmt.Errorf("case %s %s: %q: %w: run sat run on a terminal, or against the simulated site", p.Case, p.Step, p.Action, ErrNoOperator)
}

// Terminal is an operator at a terminal: prompts go to Out, answers come
// from In, one line each.
type Terminal struct {
	Name     string
	In       io.Reader
	Out      io.Writer
	Clock    clock.Clock
	Accepted bool // --accept-risk=energize was given: do not ask again
	// OnLine, if set, gets the lines typed while no prompt waits (p to
	// pause, r to resume); set it before Listen.
	OnLine func(line string)

	once  sync.Once
	lines chan string
	mu    sync.Mutex // one prompt at a time
}

// Who is the name given.
func (t *Terminal) Who() string { return t.Name }

// Listen starts reading the terminal: a line goes to the prompt that
// waits for it, or else to OnLine.
func (t *Terminal) Listen() { t.start() }

func (t *Terminal) start() {
	t.once.Do(func() {
		t.lines = make(chan string)
		go func() {
			sc := bufio.NewScanner(t.In)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if t.OnLine == nil {
					t.lines <- line
					continue
				}
				select {
				case t.lines <- line: // a prompt waits for it
				default:
					t.OnLine(line)
				}
			}
			close(t.lines)
		}()
	})
}

// ask prints q and waits for a line.
func (t *Terminal) ask(ctx context.Context, q string) (string, error) {
	t.start()
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprint(t.Out, q)
	select {
	case <-ctx.Done():
		fmt.Fprintln(t.Out)
		return "", ctx.Err()
	case line, ok := <-t.lines:
		if !ok {
			return "", fmt.Errorf("%w: the terminal closed", ErrNoOperator)
		}
		return line, nil
	}
}

// AcceptRisk shows the summary and wants "yes".
func (t *Terminal) AcceptRisk(ctx context.Context, summary string) (string, error) {
	if t.Accepted {
		return "--accept-risk=energize", nil
	}
	line, err := t.ask(ctx, "\n"+summary+"\nType yes to energise, anything else to stop: ")
	if err != nil {
		return "", err
	}
	if !strings.EqualFold(line, "yes") {
		return "", fmt.Errorf("%w: answered %q", ErrRefused, line)
	}
	return "interactive yes at the terminal", nil
}

// Confirm shows the action and the expected response and wants "yes"
// once it is done.
func (t *Terminal) Confirm(ctx context.Context, p Prompt) (Answer, error) {
	prompted := t.Clock.Now()
	q := fmt.Sprintf("\n── manual step: case %s, %s\n   do:     %s\n", p.Case, p.Step, p.Action)
	if p.Expect != "" {
		q += fmt.Sprintf("   expect: %s\n", p.Expect)
	}
	q += "Type yes when done (anything else aborts the run): "
	line, err := t.ask(ctx, q)
	if err != nil {
		return Answer{}, err
	}
	a := Answer{By: t.Name, Prompted: prompted, At: t.Clock.Now(), Text: line}
	if !strings.EqualFold(line, "yes") && !strings.EqualFold(line, "y") {
		return a, fmt.Errorf("case %s %s: %w: answered %q", p.Case, p.Step, ErrRefused, line)
	}
	return a, nil
}
