package report

import (
	"fmt"

	"github.com/seamdc/seam/internal/evidence"
)

// feedSamples streams samples.csv once and hands each sample to the
// cases that grade or plot its channel and ran while it was taken. It
// returns how many samples it read.
func feedSamples(dir string, cases []*caseState) (int, error) {
	byChannel := map[string][]*caseState{}
	for _, cs := range cases {
		if len(cs.graders) == 0 && cs.plot == nil {
			continue
		}
		for ch := range cs.channels() {
			byChannel[ch] = append(byChannel[ch], cs)
		}
	}
	n := 0
	err := scanSamplesAt(dir, func(s evidence.Sample, at int64) error {
		n++
		for _, cs := range byChannel[s.Channel] {
			if cs.takes(s, at) {
				cs.add(s)
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("re-grading from the raw samples: %w", err)
	}
	return n, nil
}

// channels are the channels the case grades or plots.
func (cs *caseState) channels() map[string]bool {
	out := map[string]bool{}
	for _, k := range cs.pc.Checks {
		out[k.Channel] = true
	}
	if cs.plot != nil {
		out[cs.plot.channel] = true
		if cs.plot.excitation != "" {
			out[cs.plot.excitation] = true
		}
	}
	return out
}
