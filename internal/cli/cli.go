// Package cli holds what the seam commands share: flag parsing that
// accepts flags after positional arguments, and exit codes.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Exit codes shared by contractc and sat.
const (
	ExitOK       = 0
	ExitTool     = 1 // the tool failed: bad arguments, unreadable input
	ExitFindings = 2 // findings, a failed test, breaking changes
	ExitAborted  = 3 // a run was aborted
)

// UsageError is a mistake in the command line.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef builds a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{fmt.Sprintf(format, args...)} }

// Parse parses args with fs, allowing flags before, between and after
// positional arguments, and returns the positional arguments.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &UsageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// RelDir names dir as a user would from the working directory: relative
// when it lies below it, else as given.
func RelDir(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		return dir
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return dir
}
