// Package version is the seam tool version, recorded in plans, evidence
// and signatures, and checked by sat against the plan it runs.
package version

// Version is set at build time with -ldflags "-X .../version.Version=…".
var Version = "0.1.0-dev"
