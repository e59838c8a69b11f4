// Package ingest reads what the real GPU tools print, exactly as
// printed, into typed results: `dcgmi diag -r N -j` in DCGM 3.x's and
// 4.x's JSON shapes with its exit code, nccl-tests' tables (header,
// rank lines, every column, footer) and `nvidia-smi --query-gpu …
// --format=csv` with its placeholders. Each parser is an Adapter for
// one tool; a vendor's tools (AMD's rccl-tests print the same tables)
// plug in as further adapters. Nothing here decides a pass on its own
// beyond the tool's own verdict: a result that cannot be read is an
// error naming its file and line, never a pass.
package ingest

import "io"

// readAll is io.ReadAll, in one allocation of the right size where the
// reader knows its length (a bytes.Reader over an output in memory:
// 10,000 nodes' outputs are read at once).
func readAll(r io.Reader) ([]byte, error) {
	lr, ok := r.(interface{ Len() int })
	if !ok {
		return io.ReadAll(r)
	}
	buf := make([]byte, lr.Len())
	n, err := io.ReadFull(r, buf)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, err
	}
	return buf[:n], nil
}
