// Package dryrun is what a dry run does instead of writing. Every write
// seam makes outside its own output (device points and load banks, BMC
// controls, the scheduler, the Kubernetes API, the lifecycle store,
// state, journal and audit files) goes through the writer of its kind
// of peer; a dry run hands that writer a Recorder, and the writer then
// prints each write it would make as "would …", with the exact command
// or request, logs it, and writes nothing anywhere.
package dryrun

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// Peers: the kinds of peer a write goes to.
const (
	Device     = "device"     // a device point or load bank (Modbus, SNMP)
	BMC        = "bmc"        // a BMC control (Redfish)
	Scheduler  = "scheduler"  // Slurm's commands
	Kubernetes = "kubernetes" // the Kubernetes API
	Store      = "store"      // the lifecycle store
	File       = "file"       // a state, journal or audit file
)

// Write is one write a dry run did not make.
type Write struct {
	Peer string `json:"peer"`
	What string `json:"what"`
}

// Recorder takes a dry run's writes: it prints each on Out as
// "would <what>" and logs it. A nil *Recorder is no dry run: writers
// test for it (Active) and write for real.
type Recorder struct {
	Out io.Writer
	Log *slog.Logger

	mu     sync.Mutex
	writes []Write
}

// New records to out, logging to log (either may be nil).
func New(out io.Writer, log *slog.Logger) *Recorder {
	if out == nil {
		out = io.Discard
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{Out: out, Log: log}
}

// Active reports whether this is a dry run.
func (r *Recorder) Active() bool { return r != nil }

// Would records a write to peer that a dry run does not make: what is
// the exact command or request ("run: scontrol update …", "PATCH
// https://…/Controls/PowerLimit {"SetPoint":600}").
func (r *Recorder) Would(peer, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	r.mu.Lock()
	r.writes = append(r.writes, Write{Peer: peer, What: what})
	fmt.Fprintf(r.Out, "would %s\n", what)
	r.mu.Unlock()
	r.Log.Info("dry run: would "+what, "peer", peer, "dry_run", true)
}

// Merge records sub's writes as r's, without printing them again (sub
// printed them to its own Out): a writer that runs in parallel records
// each part apart, then merges them in order.
func (r *Recorder) Merge(sub *Recorder) {
	w := sub.Writes()
	r.mu.Lock()
	r.writes = append(r.writes, w...)
	r.mu.Unlock()
}

// Writes are the writes recorded so far, in order.
func (r *Recorder) Writes() []Write {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Write(nil), r.writes...)
}
