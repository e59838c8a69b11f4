package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// csvHeader names the columns of the CSV report: one row per check, the
// numbers unformatted so a spreadsheet can compute with them.
var csvHeader = []string{
	"level", "module", "boundary", "case", "case_verdict", "clause", "clause_pos",
	"check", "kind", "side", "channel", "unit", "measured", "limit", "margin", "check_verdict", "detail",
	"case_start", "case_end",
}

// CSV writes one row per check (a case without checks gets one row with
// the check columns empty), then one per waveform capture of the case:
// kind "capture", the capture's file in the check column, its mask and
// what it found (with the recorder's clock offset) in the detail.
func CSV(w io.Writer, r *Run) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		head := []string{c.Level, c.Module, c.Boundary, c.ID, c.Verdict, c.ClausePath, c.ClausePos}
		tail := []string{rfc3339(c.Start), rfc3339(c.End)}
		if len(c.Checks) == 0 {
			row := append(append(append([]string{}, head...), "", "", "", "", "", "", "", "", "", c.Reason), tail...)
			if err := cw.Write(row); err != nil {
				return err
			}
		}
		for _, k := range c.Checks {
			row := append(append([]string{}, head...), k.ID, k.Kind, k.Side, k.Channel, k.Unit,
				csvNum(k.HasValue, k.Measured), csvNum(k.HasLimit, k.Limit), csvNum(k.HasValue, k.Margin), k.Verdict, k.Detail)
			if err := cw.Write(append(row, tail...)); err != nil {
				return err
			}
		}
		for _, p := range r.Captures {
			if p.Case != c.ID {
				continue
			}
			row := append(append([]string{}, head...), p.File, "capture", "", p.Channel, p.Unit, "", "", "", p.Verdict, p.Mask+" mask: "+p.Detail)
			if err := cw.Write(append(row, tail...)); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv report: %w", err)
	}
	return nil
}

func csvNum(ok bool, v float64) string {
	if !ok {
		return ""
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
