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

bench:
	@mkdir -p $(OUT)
	$(GO) test -run '^$$' -bench . -benchmem ./... | tee $(OUT)/bench.txt

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin $(OUT)
