# gpupool — build, demo and test. `make demo` and `make test` work on a fresh machine:
# they fetch what they need (Go modules, the chDB library, protoc for the generated
# code check) into caches and reuse them.

SHELL         := /bin/bash
GO            ?= go
CHDB_VERSION  := 26.7.3-stable.1
CACHE         := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/gpupool
CHDB_LIB      := $(CACHE)/chdb/$(CHDB_VERSION)/libchdb.so
TOOLS         := $(CACHE)/bin
PROTOC_GEN_GO := $(TOOLS)/protoc-gen-go
PROTOBUF_VER  := v1.36.12
STATICCHECK   := honnef.co/go/tools/cmd/staticcheck@v0.8.2
BIN           := bin/gpupool
DEMO_FLAGS    ?=
# Packages with goroutines talking to each other: also tested with the race detector.
RACE_PKGS     := ./ingest/... ./collector/... ./bus/... ./store/chdb/... ./auth/...
FUZZTIME      ?= 10s

export GPUPOOL_CHDB_LIB ?= $(CHDB_LIB)
# go-nvml's cgo preamble declares NVML calls NVIDIA has deprecated; gpupool calls none
# of them, so their warnings are noise on every build.
export CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations

IMAGE         ?= ghcr.io/gpupool/gpupool
IMAGE_TAG     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

.PHONY: all deps deps-run build image demo test test-race bench fuzz lint fmt-check vet generate generate-check tools clean

all: build

## deps-run: what running gpupool needs: Go modules and the embedded ClickHouse library (npm @chdb/lib-linux-x64-gnu).
deps-run: $(CHDB_LIB)
	@PROGRESS_DU="$$($(GO) env GOMODCACHE)" tools/progress.sh step "downloading Go modules (once)" $(GO) mod download

## deps: deps-run, and what the tests need besides: chromium (apt) for the browser tests, shellcheck (apt) for the Slurm scripts,
## prometheus (apt: promtool and the server) for the alert-rule, metrics and scrape tests.
## slurmctld, slurmd, slurm-client and munge (apt) for the live Slurm tests (testservers/slurm; GPUPOOL_TEST_NO_SLURM=1 skips).
## etcd-server (apt) and kube-apiserver (built once from tools/kube-apiserver into the cache, minutes) for the live
## Kubernetes tests (scheduler/executor/kubernetes/kubetest; GPUPOOL_TEST_NO_KUBE=1 skips).
deps: deps-run
	@command -v shellcheck >/dev/null || { echo "installing shellcheck (Debian package; checks deploy/slurm's scripts in their test)"; \
		(apt-get install -y -qq shellcheck >/dev/null 2>&1 || (apt-get update -qq >/dev/null && apt-get install -y -qq shellcheck >/dev/null)) || \
		{ echo "cannot install shellcheck: run 'apt-get install shellcheck' as root"; exit 1; }; }
	@[ "$$GPUPOOL_TEST_NO_PROMETHEUS" = 1 ] || deploy/testservers/prometheus.sh
	@[ "$$GPUPOOL_TEST_NO_SLURM" = 1 ] || deploy/testservers/slurm.sh
	@[ "$$GPUPOOL_TEST_NO_KUBE" = 1 ] || deploy/testservers/kube-apiserver.sh
	@[ -n "$$GPUPOOL_CHROMIUM" ] || command -v chromium >/dev/null || { echo "installing chromium (Debian package; renders the HTML report in its test)"; \
		(apt-get install -y -qq chromium >/dev/null 2>&1 || (apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null)) || \
		{ echo "cannot install chromium: run 'apt-get install chromium' as root, or set GPUPOOL_CHROMIUM"; exit 1; }; }

$(CHDB_LIB):
	@echo "fetching libchdb $(CHDB_VERSION) (a download of about 180 MB, 566 MB unpacked, once) into $(dir $@)"
	@mkdir -p "$(dir $@)"
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && cd "$$tmp" && \
		PROGRESS_DU="$$tmp" $(CURDIR)/tools/progress.sh step "downloading @chdb/lib-linux-x64-gnu (npm)" \
			npm pack --silent --cache "$$tmp/npm-cache" "@chdb/lib-linux-x64-gnu@$(CHDB_VERSION)" >/dev/null && \
		$(CURDIR)/tools/progress.sh step "unpacking libchdb.so" \
			tar xzf chdb-lib-linux-x64-gnu-$(CHDB_VERSION).tgz package/libchdb.so && \
		mv package/libchdb.so "$@.tmp" && mv "$@.tmp" "$@"

## build: the gpupool binary (needs no native library to build or start).
build:
	@mkdir -p bin
	$(GO) build -o $(BIN) ./cmd/gpupool

## image: the container images (Dockerfile targets server, server-chdb, collector; docs/deployment.md).
image:
	docker build --target server      --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE):$(IMAGE_TAG) .
	docker build --target server-chdb --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE)-chdb:$(IMAGE_TAG) .
	docker build --target collector   --build-arg VERSION=$(IMAGE_TAG) -t $(IMAGE)-collector:$(IMAGE_TAG) .

## demo: simulate a day of a small fleet through NATS, ClickHouse, the analyzer and the scheduler (policies off, then on) in a few minutes.
## The first build says what it compiles, with elapsed time (tools/progress.sh); a warm one prints nothing.
demo: deps-run
	@mkdir -p bin
	@tools/progress.sh build $(BIN) ./cmd/gpupool
	./$(BIN) demo $(DEMO_FLAGS)

## test: formatting, vet, generated code, every test, and the race detector on the concurrent packages.
test: deps fmt-check vet generate-check
	$(GO) test -count=1 -timeout 30m ./...
	$(GO) test -count=1 -timeout 30m -race $(RACE_PKGS)

test-race: deps
	$(GO) test -count=1 -race ./...

## bench: throughput, latency, size and memory measurements (see docs/measurements.md); about 120 minutes on 2 cores
## (the analyzer's simulated-week scoring and the 1,000-GPU chargeback month take most of it).
## GPUPOOL_BENCH_OUTAGE=30s shortens the 5-minute store outage of the catch-up benchmark.
bench: deps
	$(GO) test -run '^$$' -bench 'IngestThroughput' -benchtime 1x -count 5 ./bench/
	$(GO) test -run '^$$' -bench 'BytesPerRow|BytesPerValue|CollectorHeap10k|IngestLatency' -benchtime 1x -count 1 -timeout 30m ./bench/
	$(GO) test -run '^$$' -bench 'IngestBacklogRSS' -benchtime 1x -count 3 -timeout 30m ./bench/
	$(GO) test -run '^$$' -bench 'IngestOutageCatchUp' -benchtime 1x -count 1 -timeout 30m ./bench/
	$(GO) test -run '^$$' -bench 'NATSClusterNodeLoss' -benchtime 1x -count 1 -timeout 30m ./bench/
	$(GO) test -run '^$$' -bench 'CollectorTick' -benchtime 2000x -count 1 ./bench/
	$(GO) test -run '^$$' -bench . -benchtime 1000x ./collector/sim/ ./collector/nvml/ ./collector/dcgm/ ./collector/attribution/ ./schemas/...
	$(GO) test -run '^$$' -bench 'Admission' ./scheduler/
	$(GO) test -run '^$$' -bench 'ExternalLookup' -benchtime 1x ./scheduler/
	$(GO) run ./scheduler/placement/sim/cmd -load 0.75,0.95 -seed 1,2,3
	$(GO) test -run '^$$' -bench 'AdmissionPlacement' -benchtime 5x ./bench/
	$(GO) test -run '^$$' -bench 'FragmentationTrace' -benchtime 1x -timeout 30m ./scheduler/placement/frag/
	$(GO) test -run '^$$' -bench 'SubmitQueueLength' -benchtime 2000x ./scheduler/
	$(GO) test -run '^$$' -bench 'SubmitLatency' -benchtime 1x ./bench/
	$(GO) test -run '^$$' -bench 'EnforcementWeek|DefragmentDays' -benchtime 1x ./internal/simrun/
	$(GO) test -run '^$$' -bench 'Pass1000GPUs' -benchtime 1x -timeout 30m ./analyzer/findings/
	$(GO) test -run '^$$' -bench 'Pipeline10k' -benchtime 1x -timeout 60m ./bench/
	$(GO) test -run '^$$' -bench 'ChargebackMonth' -benchtime 1x -timeout 2h ./analyzer/chargeback/
	$(GO) test -run '^$$' -bench 'ScoreSimulatedWeek' -benchtime 1x -timeout 2h ./analyzer/findings/
	$(GO) test -run '^$$' -bench 'ConsolePages|FleetStateNow' -benchtime 5x -timeout 30m ./console/
	$(GO) test -run '^$$' -bench 'ForecastBacktestSim' -benchtime 1x ./internal/simhistory/
	cd bench/peers && $(GO) run . -gpus 1000 -ticks 360 -runs 3

## fuzz: a short run of every fuzz target (tools/fuzz.sh finds them all).
fuzz:
	tools/fuzz.sh "$(GO)" $(FUZZTIME)

lint: fmt-check vet
	$(GO) run $(STATICCHECK) ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

## tools: protoc (Debian package) and protoc-gen-go (pinned), for generate.
tools: $(PROTOC_GEN_GO)
	@command -v protoc >/dev/null || { echo "installing protoc (Debian protobuf-compiler)"; \
		(apt-get install -y -qq protobuf-compiler >/dev/null 2>&1 || (apt-get update -qq >/dev/null && apt-get install -y -qq protobuf-compiler >/dev/null)) || \
		{ echo "cannot install protoc: run 'apt-get install protobuf-compiler' as root"; exit 1; }; }

$(PROTOC_GEN_GO):
	GOBIN=$(TOOLS) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOBUF_VER)

## generate: regenerate schemas/wirepb from gpupool.proto.
generate: tools
	cd schemas/wirepb && PATH="$(TOOLS):$$PATH" protoc --go_out=. --go_opt=paths=source_relative gpupool.proto

## generate-check: fail if the committed generated code is not what generate makes.
generate-check: tools
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		cp schemas/wirepb/gpupool.proto "$$tmp/" && \
		(cd "$$tmp" && PATH="$(TOOLS):$$PATH" protoc --go_out=. --go_opt=paths=source_relative gpupool.proto) && \
		diff -q "$$tmp/gpupool.pb.go" schemas/wirepb/gpupool.pb.go >/dev/null || \
		{ echo "schemas/wirepb/gpupool.pb.go is stale: run make generate"; exit 1; }

clean:
	rm -rf bin gpupool-data
