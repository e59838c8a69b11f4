# seam — two commands do everything: `make demo` and `make test`.
GO ?= go
SHELL := bash
EXAMPLE := contracts/examples/threemodule
OUT ?= out
# make demo: shortened holds keep it to a few minutes; the simulated site
# runs in lockstep with the run, as fast as the machine allows (a time
# scale only caps the speed: DEMO_SCALE=1 watches it in real time)
DEMO_HOLD ?= 5s
DEMO_SCALE ?= max
# more flags for sat run, e.g. DEMO_RUN_FLAGS="--defect p1-slow-recovery"
DEMO_RUN_FLAGS ?=

.PHONY: build test demo bench fuzz lint fmt clean

build:
	$(GO) build -o bin/ ./cmd/...

# make test: install (as root) or name the Debian packages the tests
# need, then every test, packages one at a time in random order, with
# each package's time against its budget at the end
test:
	@bash .ci/peers
	$(GO) vet ./...
	@set -o pipefail; $(GO) test -count=1 -p 1 -shuffle=on -json ./... | $(GO) run ./hack/testbudget .ci/budgets

demo: build
	@mkdir -p $(OUT)
	@echo "== contractc vet $(EXAMPLE)"
	./bin/contractc vet $(EXAMPLE)
	@echo
	@echo "== contractc budget $(EXAMPLE)"
	./bin/contractc budget $(EXAMPLE)
	@# the inventory: what one feed and one cooling loop take down (exit 2
	@# when something stops), and the scheduler topology generated from it
	@echo; echo "== contractc blast $(EXAMPLE) p1/block/a l1/loop"
	./bin/contractc blast $(EXAMPLE) p1/block/a l1/loop || [ $$? -eq 2 ]
	@echo; echo "== contractc topology $(EXAMPLE)"
	./bin/contractc topology $(EXAMPLE) -o $(OUT)/topology.conf
	./bin/contractc topology $(EXAMPLE) --format slurm-block -o $(OUT)/topology-block.conf
	./bin/contractc topology $(EXAMPLE) --format k8s -o $(OUT)/nodes.yaml
	@echo; echo "== contractc domains $(EXAMPLE)"
	./bin/contractc domains $(EXAMPLE)
	@echo; echo "== contractc maintenance $(EXAMPLE)"
	./bin/contractc maintenance $(EXAMPLE) --tz UTC
	@echo; echo "== facilityd run --config deploy/facilityd.demo.json --dry-run --once (a drill on the example: what it would do)"
	./bin/facilityd run --config deploy/facilityd.demo.json --dry-run --once \
	  --raise cooling_redundancy_lost@cooling_loop=l2 --raise ups_on_battery@power_block=p1 \
	  2>$(OUT)/facilityd-drill.log || { cat $(OUT)/facilityd-drill.log; exit 1; }
	@# the example's SAT and IST plans against the simulated site, holds
	@# capped at $(DEMO_HOLD) (the evidence records it); every bundle is
	@# verified and reported, passed or not, and make fails at the end
	@# if any level did not pass
	@mkdir -p $(OUT)/plans $(OUT)/evidence
	@failed=""; \
	for level in sat ist; do \
	  echo; echo "== contractc compile $(EXAMPLE) --level $$level --max-hold $(DEMO_HOLD)"; \
	  ./bin/contractc compile $(EXAMPLE) --level $$level --max-hold $(DEMO_HOLD) -o $(OUT)/plans/$$level.json || exit $$?; \
	  rm -rf $(OUT)/evidence/$$level; \
	  echo; echo "== sat run $(OUT)/plans/$$level.json --sim --time-scale $(DEMO_SCALE) $(DEMO_RUN_FLAGS) --out $(OUT)/evidence/$$level"; \
	  ./bin/sat run $(OUT)/plans/$$level.json --sim --time-scale $(DEMO_SCALE) $(DEMO_RUN_FLAGS) --out $(OUT)/evidence/$$level || failed="$$failed $$level"; \
	  [ -f $(OUT)/evidence/$$level/journal.jsonl ] || continue; \
	  echo; echo "== sat verify $(OUT)/evidence/$$level"; \
	  ./bin/sat verify $(OUT)/evidence/$$level || failed="$$failed $$level-verify"; \
	  echo; echo "== sat report $(OUT)/evidence/$$level"; \
	  ./bin/sat report $(OUT)/evidence/$$level || failed="$$failed $$level-report"; \
	done; \
	echo; \
	for level in sat ist; do \
	  [ -f $(OUT)/evidence/$$level/report/report.html ] && echo "HTML report ($$level): $(OUT)/evidence/$$level/report/report.html"; \
	done; \
	if [ -n "$$failed" ]; then echo "make demo: did not pass:$$failed (the reports above say why)"; exit 1; fi
	@# the site's day after handover, with the commands a user types: through
	@# a throwaway Slurm on loopback where Slurm is installed (as root), else
	@# with scheduler none, which prints each drain and undrain it would send
	@echo; echo "== a day in the life of the site (hack/day-in-the-life.sh, docs/day-in-the-life.md)"
	@rm -rf $(OUT)/day $(OUT)/slurm; mkdir -p $(OUT)/day
	@if why=$$(bash hack/local-slurm.sh start $(OUT)/slurm); then \
	  echo "$$why"; \
	  SLURM_CONF=$(abspath $(OUT))/slurm/slurm.conf WORK=$(abspath $(OUT))/day bash hack/day-in-the-life.sh; rc=$$?; \
	  bash hack/local-slurm.sh stop $(OUT)/slurm; \
	else \
	  echo "$$why: the operate half runs with scheduler none, printing each drain and undrain it would send"; \
	  WORK=$(abspath $(OUT))/day bash hack/day-in-the-life.sh; rc=$$?; \
	fi; \
	echo; echo "the day in the life: $(OUT)/day (its story above; sat lifecycle history gpu-a-r01-n03 --store $(OUT)/day/site.db)"; \
	for level in sat ist; do echo "HTML report ($$level): $(OUT)/evidence/$$level/report/report.html"; done; \
	exit $$rc

# The figures the issues name, one table per package (ns/op and the
# custom metrics each benchmark reports). Heavy benchmarks run a fixed
# number of times; the whole table takes a few minutes.
BENCH_PKGS := ./internal/clock ./internal/contract ./internal/gridsignal ./internal/compile ./internal/diff ./internal/sign \
	./internal/probe ./internal/sim ./internal/sim/fleet ./internal/grade ./internal/runner ./internal/report ./internal/inventory \
	./internal/redfish ./internal/discover ./internal/topology ./internal/domains ./internal/drain ./internal/alarm \
	./internal/lifecycle ./internal/burnin ./internal/headroom ./internal/drain/kubeha ./internal/drain/facilityd \
	./internal/capping ./internal/capping/apply ./internal/bmcrotate ./internal/liveview ./internal/comtrade ./internal/netbox ./internal/tsa ./internal/satcmd ./internal/burnin/kubeexec ./internal/scheduler/kubernetes ./internal/firmware \
	./internal/fwupdate ./internal/fwrollout
# the served fleet (1,689 and 3,378 BMCs), discovery of 1,000 BMCs, a
# drain of 10,080 nodes in a real slurmctld, facilityd's memory with
# 100,224 nodes and the lifecycle store with 100,000 elements (both
# engines), 10,000 holds by two writers on either engine, take from half
# a minute to minutes a run, a facilityd leader's
# failover on Kubernetes 20 s a round, and a burn-in of 288 nodes
# through 288 slurmds about six minutes, caps applied to 1,000 served
# BMCs (half a minute to serve them), a rack burned in through a
# kube-apiserver, topology labels applied to 1,000 of its nodes and
# 10,000 nodes' recorded burn-in graded (its 42,535 files written
# first), a firmware rollout to 1,000 served BMCs: once each
BENCH_ONCE := ^(BenchmarkServedFleet|BenchmarkDiscover|BenchmarkAlarmToDrained10000|BenchmarkMemory100k|BenchmarkStore|BenchmarkLedgerContention|BenchmarkLeaderFailover|BenchmarkBurnin288ThroughSlurm|BenchmarkApply1000|BenchmarkRackThroughKubernetes|BenchmarkApplyLabels1000|BenchmarkGradeRecorded10k|BenchmarkWebhookStormSlurm|BenchmarkWebhookMillionAlerts|BenchmarkRollout1000)$$
bench: build
	@mkdir -p $(OUT)
	$(GO) test -run '^$$' -bench . -skip '$(BENCH_ONCE)' -benchmem -benchtime 3x $(BENCH_PKGS) | tee $(OUT)/bench.txt
	$(GO) test -run '^$$' -bench '$(BENCH_ONCE)' -benchmem -benchtime 1x ./internal/sim ./internal/discover ./internal/drain ./internal/drain/facilityd ./internal/lifecycle ./internal/drain/kubeha ./internal/burnin ./internal/capping/apply ./internal/burnin/kubeexec ./internal/scheduler/kubernetes ./internal/burnin/recorded ./internal/fwrollout | tee -a $(OUT)/bench.txt
	@# vet against the cue command seam links (built from hack/cue), compile
	@# against vet, and the probe against the bare client, beside their goals
	cd hack/cue && $(GO) build -o $(abspath $(OUT))/cue cuelang.org/go/cmd/cue
	$(GO) run ./hack/ratios -cue $(OUT)/cue -contractc bin/contractc -bench $(OUT)/bench.txt | tee -a $(OUT)/bench.txt
	@echo "benchmarks written to $(OUT)/bench.txt"

# make fuzz: each fuzz target for FUZZTIME (go test runs their seeds in
# testdata/fuzz on every make test; this searches for new inputs)
FUZZTIME ?= 1m
FUZZ_TARGETS := ./internal/plan:FuzzDecode ./internal/evidence:FuzzJournal ./internal/evidence:FuzzSamples \
	./internal/evidence:FuzzAudit ./internal/profile:FuzzRegisterCodec ./internal/profile:FuzzSNMPCodec \
	./internal/compile:FuzzContractLoad ./internal/comtrade:FuzzParse
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do pkg=$${t%%:*}; name=$${t##*:}; \
	  echo "== $$name in $$pkg for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

lint:
	@test -z "$$(gofmt -l .)" || { echo "gofmt needed:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

fmt:
	gofmt -w .

clean:
	rm -rf bin $(OUT)
