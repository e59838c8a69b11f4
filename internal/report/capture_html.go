package report

import (
	"fmt"
	"html/template"
)

// capturePlots draws each capture's plot for the HTML page (nil where a
// capture has none).
func capturePlots(r *Run) ([]*htmlPlot, error) {
	out := make([]*htmlPlot, len(r.Captures))
	for i, c := range r.Captures {
		if c.Plot == nil || len(c.Plot.Measured) == 0 {
			continue
		}
		svg, err := c.Plot.SVG()
		if err != nil {
			return nil, fmt.Errorf("capture %s: %w", c.File, err)
		}
		out[i] = &htmlPlot{SVG: template.HTML(svg), Legend: legend(c.Plot), Caption: captureCaption(c)}
	}
	return out, nil
}

func captureCaption(c Capture) string {
	return fmt.Sprintf("%d samples of %s at %g samples/s as %d RMS values over one cycle, refreshed every half cycle (IEC 61000-4-30 Urms(1/2)), in %% of %g %s; the %s mask drawn from the commanded edge, which the capture's %s was aligned on (recorder clock offset %+.3f s).",
		c.Samples, c.Channel, c.Rate, c.Plot.Samples, c.Nominal, c.Unit, c.Mask, c.AlignedBy, c.OffsetS)
}
