package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// Logger is the log a command writes to stderr beside its own output:
// format "json" gives slog's JSON lines for a machine; anything else
// gives lines a person reads between progress lines ("prog: warning:
// message (key=value, …)"), with no timestamps or level= fields.
func Logger(w io.Writer, prog, format string, level slog.Level) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(&humanHandler{w: w, prog: prog, level: level, mu: &sync.Mutex{}})
}

// LogFormatUsage is the help text of a --log-format flag.
const LogFormatUsage = "stderr log lines: text (for a person) or json (for a machine)"

type humanHandler struct {
	w     io.Writer
	prog  string
	level slog.Level
	attrs []slog.Attr
	group string
	mu    *sync.Mutex
}

func (h *humanHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *humanHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(h.prog)
	b.WriteString(": ")
	switch {
	case r.Level >= slog.LevelError:
		b.WriteString("error: ")
	case r.Level >= slog.LevelWarn:
		b.WriteString("warning: ")
	}
	b.WriteString(r.Message)
	var kv []string
	add := func(a slog.Attr) {
		if a.Equal(slog.Attr{}) {
			return
		}
		key := a.Key
		if h.group != "" {
			key = h.group + "." + key
		}
		kv = append(kv, fmt.Sprintf("%s=%v", key, a.Value.Resolve()))
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(func(a slog.Attr) bool { add(a); return true })
	if len(kv) > 0 {
		b.WriteString(" (" + strings.Join(kv, ", ") + ")")
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *humanHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *humanHandler) WithGroup(name string) slog.Handler {
	c := *h
	if c.group != "" {
		name = c.group + "." + name
	}
	c.group = name
	return &c
}
