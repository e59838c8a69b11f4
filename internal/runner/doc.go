// Package runner executes a test plan against a site: a real one through
// a site binding, or the simulated one. It is the part of sat that a
// commissioning engineer trusts with a live load bank, so safety comes
// first and every decision leaves evidence.
//
// A run:
//
//  1. writes run_start, the plan and the binding into the evidence bundle
//     (internal/evidence) and starts a heartbeat to every load bank;
//  2. preflights without energising anything: every channel the plan
//     samples is bound, readable and fresh, its device updates at least
//     as fast as the plan needs, every load bank is at 0 kW and in remote
//     control, every interlock channel reads inside its limits;
//  3. asks for explicit risk acceptance (--accept-risk=energize, or an
//     interactive yes; --sim implies it) and prepares the banks;
//  4. runs each case not yet completed: preconditions, sampling of the
//     case's channels at the plan's rates with interlocks checked on every
//     sample, the step program on the clock, and grading of every check
//     at the case's end with internal/grade, from the samples as written
//     to the bundle;
//  5. zeroes the banks, writes results.json and the manifest.
//
// A signed run (Config.Signer) seals the bundle at every case end, at
// its results and end, and at least every minute (internal/evidence). A
// plan is checked to be current by hashing the contract files it names
// (CheckPlan): the runner imports neither the compiler nor the contract
// model.
//
// # Safety
//
// An interlock trip (a safety channel outside its limits, or silent for
// longer than its max_silence_s), the first interrupt, a manual step no
// operator can confirm, or a fatal device problem aborts the run: every
// load bank gets setpoint 0 at once (it drops the load at its own fastest
// rate), the runner confirms 0 kW by read-back, flushes the evidence and
// stops with outcome aborted; the bundle stays resumable. Kill (the
// second interrupt) writes setpoint 0 and enable off to every bank
// without waiting. While the runner lives it refreshes each bank's
// heartbeat; if it dies, the banks' watchdogs drop the load.
//
// # Journal records
//
// The runner adds these record kinds to the evidence journal (data in
// brackets; times are site times):
//
//	run_start     the run: plan digest, tool, site, binding, time scale, operator
//	preflight     the checks before energising: problems, banks, channels read
//	accept_risk   who accepted the risk of energising, and how
//	prepare       a load bank made ready: its status
//	case_start    a case begins: index, title, clause
//	precondition  a precondition and whether it held
//	operator      a manual step or stated precondition and who confirmed it, when
//	step          a step as it ran: start, end, load edges, setpoint writes, detail
//	interlock     an interlock trip: channel, value, limits, or silence
//	abort         why the run stopped, and how long the banks took to read 0 kW
//	zero          a load bank zeroed: its read-back
//	case_end      a case's result (results.Case) and its grading timeline
//	heartbeat     a load bank heartbeat that failed
//	watchdog      a load bank's heartbeat watchdog tripped: how late the heartbeats were
//	watchdog_reset a tripped bank reset once it read 0 kW and the operator confirmed
//
// and the evidence package's own: bundle, checkpoint, seal, resume, file,
// run_end, amend.
package runner
