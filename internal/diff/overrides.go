package diff

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
)

// Override changes the severity of the findings it matches. A line of an
// override file reads
//
//	RULE[:SIDE] SEVERITY [PATH-PREFIX]
//
// with SIDE supplier or consumer and SEVERITY ERR, WARN, INFO or OFF (drop
// the finding). Later lines win over earlier ones; # starts a comment.
type Override struct {
	Rule, Side, Path string
	Severity         Severity
	Off              bool
	Line             int
}

// Overrides is an ordered list of overrides.
type Overrides []Override

// ReadOverrides reads an override file.
func ReadOverrides(file string) (Overrides, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("severity overrides: %w", err)
	}
	return ParseOverrides(file, b)
}

// ParseOverrides parses an override file's content; errors name file:line.
func ParseOverrides(file string, b []byte) (Overrides, error) {
	var out Overrides
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		o, err := parseOverride(f)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, n, err)
		}
		o.Line = n
		out = append(out, o)
	}
	return out, sc.Err()
}

func parseOverride(f []string) (Override, error) {
	if len(f) < 2 || len(f) > 3 {
		return Override{}, fmt.Errorf("want RULE[:SIDE] SEVERITY [PATH-PREFIX], got %q", strings.Join(f, " "))
	}
	var o Override
	o.Rule, o.Side, _ = strings.Cut(f[0], ":")
	if _, ok := RuleByID(o.Rule); !ok {
		return Override{}, fmt.Errorf("unknown rule %q (docs/diff-rules.md lists them)", o.Rule)
	}
	if o.Side != "" && o.Side != "supplier" && o.Side != "consumer" {
		return Override{}, fmt.Errorf("unknown side %q (want supplier or consumer)", o.Side)
	}
	if strings.EqualFold(f[1], "OFF") {
		o.Off = true
	} else {
		sev, err := ParseSeverity(f[1])
		if err != nil {
			return Override{}, fmt.Errorf("%w, or OFF", err)
		}
		o.Severity = sev
	}
	if len(f) == 3 {
		o.Path = f[2]
	}
	return o, nil
}

func (o Override) matches(f Finding) bool {
	return o.Rule == f.Rule && (o.Side == "" || o.Side == f.Side) &&
		(o.Path == "" || f.Path == o.Path || strings.HasPrefix(f.Path, o.Path+"."))
}

// Apply returns r with the overrides applied.
func (os Overrides) Apply(r Result) Result {
	out := r
	out.Findings = []Finding{}
	for _, f := range r.Findings {
		keep := true
		for _, o := range os {
			if o.matches(f) {
				keep = !o.Off
				if !o.Off {
					f.Severity = o.Severity
				}
			}
		}
		if keep {
			out.Findings = append(out.Findings, f)
		}
	}
	return out
}
