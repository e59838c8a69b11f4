package diag

import (
	"encoding/json"
	"io"
	"sort"
)

// SARIF 2.1.0 types: only the parts code-scanning tools read.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri,omitempty"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID               string       `json:"id"`
	ShortDescription sarifMessage `json:"shortDescription"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID           string          `json:"ruleId"`
	Level            string          `json:"level"`
	Message          sarifMessage    `json:"message"`
	Locations        []sarifLocation `json:"locations,omitempty"`
	RelatedLocations []sarifLocation `json:"relatedLocations,omitempty"`
}

type sarifLocation struct {
	ID               int           `json:"id,omitempty"`
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
	Message          *sarifMessage `json:"message,omitempty"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn,omitempty"`
}

// SARIF writes a SARIF 2.1.0 log with one run; rules maps rule ids to a
// short description.
func SARIF(w io.Writer, l List, rules map[string]string) error {
	run := sarifRun{Tool: sarifTool{Driver: sarifDriver{Name: "contractc",
		InformationURI: "https://github.com/seamdc/seam/blob/main/docs/contracts.md"}}, Results: []sarifResult{}}
	ids := make([]string, 0, len(rules))
	for id := range rules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{ID: id, ShortDescription: sarifMessage{rules[id]}})
	}
	for _, d := range l {
		r := sarifResult{RuleID: d.Rule, Level: map[Severity]string{Info: "note", Warning: "warning", Error: "error"}[d.Severity],
			Message: sarifMessage{d.Message}}
		if d.Hint != "" {
			r.Message.Text += " Fix: " + d.Hint
		}
		if d.Pos.IsValid() {
			r.Locations = []sarifLocation{location(d.Pos, nil, 0)}
		}
		for i, rel := range d.Related {
			if rel.Pos.IsValid() {
				r.RelatedLocations = append(r.RelatedLocations, location(rel.Pos, &sarifMessage{rel.Message}, i+1))
			}
		}
		run.Results = append(run.Results, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(sarifLog{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0", Runs: []sarifRun{run}})
}

func location(p Pos, msg *sarifMessage, id int) sarifLocation {
	loc := sarifLocation{ID: id, Message: msg, PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: p.File}}}
	if p.Line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: p.Line, StartColumn: p.Col}
	}
	return loc
}
