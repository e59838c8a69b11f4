// Command testbudget reads `go test -json` on stdin, prints what go test
// prints without -v (a line per package, and the whole output of every
// test and package that failed, with the -shuffle seed to repeat it),
// and ends with each package's time against its budget (.ci/budgets). It
// exits 1 when a test or a build failed.
//
//	go test -json ./... | go run ./hack/testbudget .ci/budgets
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// ciLimit is how long CI lets the whole run take.
const ciLimit = 90 * 60.0

type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Elapsed    float64
	Output     string
}

type pkgResult struct {
	name    string
	elapsed float64
	outcome string // pass, fail, skip (no test files)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go test -json ./... | testbudget BUDGETS")
		os.Exit(2)
	}
	budgets, err := readBudgets(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbudget:", err)
		os.Exit(2)
	}
	results, failed, err := follow(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbudget:", err)
		os.Exit(2)
	}
	report(os.Stdout, results, budgets)
	if failed {
		fmt.Println("FAIL: see the failures above")
		os.Exit(1)
	}
}

func readBudgets(path string) (map[string]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want a package and seconds", path, n)
		}
		s, err := strconv.ParseFloat(fields[1], 64)
		if err != nil || s <= 0 {
			return nil, fmt.Errorf("%s:%d: %q is not a number of seconds", path, n, fields[1])
		}
		out[fields[0]] = s
	}
	if out["default"] == 0 {
		return nil, fmt.Errorf("%s: no default budget", path)
	}
	return out, sc.Err()
}

// follow prints the tests' results to w and collects each package's;
// failed is set by a failed test, package or build.
func follow(r io.Reader, w io.Writer) ([]pkgResult, bool, error) {
	var results []pkgResult
	failed := false
	held := map[[2]string]*strings.Builder{} // output of a test (or package) not yet ended
	hold := func(pkg, test, out string) {
		k := [2]string{pkg, test}
		if held[k] == nil {
			held[k] = &strings.Builder{}
		}
		held[k].WriteString(out)
	}
	flush := func(pkg, test string) {
		k := [2]string{pkg, test}
		if b := held[k]; b != nil {
			fmt.Fprint(w, b.String())
		}
		delete(held, k)
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(w, sc.Text()) // go test's own complaint, not JSON
			continue
		}
		switch e.Action {
		case "build-output":
			fmt.Fprint(w, e.Output)
		case "build-fail":
			failed = true
		case "output":
			if e.Test == "" && summary(e.Output) {
				fmt.Fprint(w, e.Output)
				continue
			}
			hold(e.Package, e.Test, e.Output)
		case "pass", "skip":
			delete(held, [2]string{e.Package, e.Test})
			if e.Test == "" {
				results = append(results, pkgResult{name: e.Package, elapsed: e.Elapsed, outcome: e.Action})
			}
		case "fail":
			failed = true
			flush(e.Package, e.Test)
			if e.Test == "" {
				results = append(results, pkgResult{name: e.Package, elapsed: e.Elapsed, outcome: e.Action})
			}
		}
	}
	return results, failed, sc.Err()
}

// summary reports whether a package's output line is its result line.
func summary(line string) bool {
	for _, p := range []string{"ok  \t", "FAIL\t", "?   \t", "FAIL\n"} {
		if strings.HasPrefix(line, p) {
			return true
		}
	}
	return false
}

// report prints each tested package's time against its budget, slowest
// first.
func report(w io.Writer, results []pkgResult, budgets map[string]float64) {
	sort.SliceStable(results, func(i, j int) bool { return results[i].elapsed > results[j].elapsed })
	total, budgeted := 0.0, 0.0
	fmt.Fprintln(w, "\ntest time by package, against its budget (.ci/budgets):")
	over := 0
	for _, r := range results {
		if r.outcome == "skip" {
			continue
		}
		name := strings.TrimPrefix(r.name, "github.com/seamdc/seam/")
		b, ok := budgets[name]
		if !ok {
			b = budgets["default"]
		}
		total += r.elapsed
		budgeted += b
		mark := ""
		if r.elapsed > b {
			mark = "  OVER BUDGET"
			over++
		}
		fmt.Fprintf(w, "  %-36s %7.1f s of %5.0f s%s\n", name, r.elapsed, b, mark)
	}
	fmt.Fprintf(w, "  %-36s %7.1f s of %5.0f s budgeted; CI stops at %.0f s\n", "all packages", total, budgeted, ciLimit)
	if over > 0 {
		fmt.Fprintf(w, "%d package(s) over budget: make them faster, or raise .ci/budgets with a reason\n", over)
	}
}
