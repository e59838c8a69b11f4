# seam — two commands do everything: `make demo` and `make test`.
GO ?= go
EXAMPLE := contracts/examples/threemodule
OUT ?= out
# make demo: shortened holds and a faster simulated site keep it to a
# few minutes
DEMO_HOLD ?= 5s
DEMO_SCALE ?= 30

.PHONY: build test demo bench lint fmt clean

build:
	$(GO) build -o bin/ ./cmd/...

test:
	$(GO) vet ./...
	$(GO) test -count=1 -p 1 ./...

demo: build
	@mkdir -p $(OUT)
	@echo "== contractc vet $(EXAMPLE)"
	./bin/contractc vet $(EXAMPLE)
	@echo
	@echo "== contractc budget $(EXAMPLE)"
	./bin/contractc budget $(EXAMPLE)
	@# the example's SAT and IST plans against the simulated site: holds
	@# capped at $(DEMO_HOLD) and site time $(DEMO_SCALE)× wall time (the
	@# evidence records both)
	@mkdir -p $(OUT)/plans $(OUT)/evidence
	@for level in sat ist; do \
	  echo; echo "== contractc compile $(EXAMPLE) --level $$level --max-hold $(DEMO_HOLD)"; \
	  ./bin/contractc compile $(EXAMPLE) --level $$level --max-hold $(DEMO_HOLD) -o $(OUT)/plans/$$level.json || exit $$?; \
	  rm -rf $(OUT)/evidence/$$level; \
	  echo; echo "== sat run $(OUT)/plans/$$level.json --sim --time-scale $(DEMO_SCALE) --out $(OUT)/evidence/$$level"; \
	  ./bin/sat run $(OUT)/plans/$$level.json --sim --time-scale $(DEMO_SCALE) --out $(OUT)/evidence/$$level || exit $$?; \
	  echo; echo "== sat verify $(OUT)/evidence/$$level"; \
	  ./bin/sat verify $(OUT)/evidence/$$level || exit $$?; \
	done
	@echo; echo "evidence bundles: $(OUT)/evidence/sat $(OUT)/evidence/ist"
	@# keep last: report on every evidence bundle the steps above wrote
	@for d in $(OUT)/evidence/*/; do \
	  [ -f "$$d/results.json" ] || continue; \
	  echo; echo "== sat report $$d"; \
	  ./bin/sat report "$$d" || exit $$?; \
	  echo "HTML report: $${d}report/report.html"; \
	done

# The figures the issues name, one table per package (ns/op and the
# custom metrics each benchmark reports). Heavy benchmarks run a fixed
# number of times; the whole table takes a few minutes.
BENCH_PKGS := ./internal/contract ./internal/compile ./internal/diff ./internal/sign \
	./internal/probe ./internal/sim ./internal/grade ./internal/runner ./internal/report
bench:
	@mkdir -p $(OUT)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 3x $(BENCH_PKGS) | tee $(OUT)/bench.txt
	@echo "benchmarks written to $(OUT)/bench.txt"

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin $(OUT)
