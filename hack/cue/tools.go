//go:build tools

// Package cue pins cuelang.org/go/cmd/cue; build it with
// `go build -o BIN cuelang.org/go/cmd/cue` from this directory.
package cue

import _ "cuelang.org/go/cmd/cue"
