package runner

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/evidence"
	"github.com/seamdc/seam/internal/grade"
	"github.com/seamdc/seam/internal/plan"
)

// gradeCase grades every check of a case from the samples the case
// wrote to the bundle (bytes from..to of samples.csv, synced), exactly
// as an offline re-grade reads them: each check sees its channel's
// samples taken between the timeline's start and end.
func (r *Runner) gradeCase(c plan.Case, tl grade.Timeline, from, to int64) ([]grade.Verdict, error) {
	return gradeFile(filepath.Join(r.cfg.Dir, evidence.SamplesFile), c, tl, from, to)
}

// gradeFile grades a case's checks from its byte range of samples.csv.
func gradeFile(path string, c plan.Case, tl grade.Timeline, from, to int64) ([]grade.Verdict, error) {
	if to < from {
		return nil, fmt.Errorf("sample range %d..%d is reversed", from, to)
	}
	graders := make([]*grade.Grader, len(c.Checks))
	byChannel := map[string][]*grade.Grader{}
	for i, k := range c.Checks {
		graders[i] = grade.New(k, tl, grade.Options{})
		byChannel[k.Channel] = append(byChannel[k.Channel], graders[i])
	}
	err := scanSamples(path, from, to, func(s evidence.Sample) {
		gs := byChannel[s.Channel]
		if len(gs) == 0 || s.Time.Before(tl.Start) || s.Time.After(tl.End) {
			return
		}
		g := grade.Sample{Time: s.Time, Value: s.Value, Good: s.Quality == "good"}
		for _, gr := range gs {
			gr.Add(g)
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]grade.Verdict, len(graders))
	for i, g := range graders {
		out[i] = g.Verdict()
	}
	return out, nil
}

// scanSamples reads samples.csv from byte from to byte to.
func scanSamples(path string, from, to int64, f func(evidence.Sample)) error {
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(io.NewSectionReader(file, from, to-from))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if text == "" || text == strings.TrimSuffix(samplesHeader, "\n") {
			continue
		}
		s, err := parseSample(text)
		if err != nil {
			return fmt.Errorf("%s, line %d after byte %d: %w", path, line, from, err)
		}
		f(s)
	}
	return sc.Err()
}

const samplesHeader = "channel,time,value,quality\n"

// parseSample reads "channel,time,value,quality"; the channel is
// everything before the last three fields.
func parseSample(line string) (evidence.Sample, error) {
	var s evidence.Sample
	i := strings.LastIndexByte(line, ',')
	if i < 0 {
		return s, fmt.Errorf("not a sample: %q", line)
	}
	s.Quality, line = line[i+1:], line[:i]
	i = strings.LastIndexByte(line, ',')
	if i < 0 {
		return s, fmt.Errorf("not a sample: %q", line)
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	if err != nil {
		return s, err
	}
	s.Value, line = v, line[:i]
	i = strings.LastIndexByte(line, ',')
	if i < 0 {
		return s, fmt.Errorf("not a sample: %q", line)
	}
	t, err := time.Parse(time.RFC3339Nano, line[i+1:])
	if err != nil {
		return s, err
	}
	s.Time, s.Channel = t, line[:i]
	return s, nil
}
