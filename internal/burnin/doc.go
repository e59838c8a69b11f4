// Package burnin is sat burnin's logic: GPU burn-in of a module's nodes
// before they join the pool. The ladder (Run) takes each node through
// its diagnostic, its telemetry under load and a single-node
// all-reduce, then ring pairs, racks and the module, and bisects every
// low group to its node; jobs go through an Executor (Slurm: srun
// inside a reservation that keeps users off the nodes; Tools: the
// simulated tools in process; a Recording: a site's recorded outputs,
// whose bisection cannot re-run and implicates nodes for a re-test
// rather than holding them). The tools' output is read by the
// adapters of package ingest. Analyze judges per-node measures with
// robust statistics per cohort (scope, rank count, SKU, measure) and
// absolute floors per SKU; Facility grades the module-wide run against
// the boundaries' transient clauses; WriteBundle keeps everything as
// evidence with per-node baselines; Compare holds site baselines against
// the factory's; Gate releases or keeps the nodes' burn-in holds and
// provisions those that passed. docs/burnin.md describes it.
package burnin
