# seam — two commands do everything: `make demo` and `make test`.
GO ?= go
EXAMPLE := contracts/examples/threemodule
OUT ?= out

.PHONY: build test demo bench lint fmt clean

build:
	$(GO) build -o bin/ ./cmd/...

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

demo: build
	@mkdir -p $(OUT)
	@echo "== contractc vet $(EXAMPLE)"
	./bin/contractc vet $(EXAMPLE)
	@echo
	@echo "== contractc budget $(EXAMPLE)"
	./bin/contractc budget $(EXAMPLE)
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
