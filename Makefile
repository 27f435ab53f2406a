# verdictbot — run "make help" for the targets.
GO       ?= go
PKGS     ?= ./...
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
FUZZTIME ?= 30s
SIM_ADDR ?= 127.0.0.1:8099
# make test RACE=   runs every test without the race detector, which needs
# cgo and so a C compiler (gcc); Go turns cgo off when none is on PATH.
RACE     ?= -race
# make bench BENCH=Extract   runs only the benchmarks matching the regexp.
BENCH    ?= .
# Benchmarks that take minutes each: make bench-long, not make bench.
LONG_BENCH ?= PollToVerdictLatency|RestartWith10kCards|Due100k
# make soak SOAK=2m   runs the chaos soak's load that long (then its drain, up to 4 min);
# the test bounds itself at SOAK + 10 min (go test's -timeout cannot add durations).
# A failed soak leaves the replicas' logs under bin/soak/_artifacts/.
SOAK     ?= 30m
# make soak needs PostgreSQL (the replicas share it; one fault stops it).
SOAK_DATABASE_URL ?= $(or $(VERDICTBOT_TEST_DATABASE_URL),postgres://postgres@127.0.0.1:5432/test?sslmode=disable)
# make docker tags the image $(IMAGE):$(VERSION).
IMAGE    ?= verdictbot

.PHONY: help build run demo test test-short soak lint readme bench bench-long cover fuzz sim docker clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/verdictbot (static)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/verdictbot ./cmd/verdictbot

run: ## run the bot against Slack (settings from the environment, see README)
	$(GO) run ./cmd/verdictbot run

demo: ## try it without Slack or API keys (verdictbot shell)
	@echo "make demo: compiling verdictbot with go run (the first time also downloads the Go modules: about a minute)..."
	@echo "make demo: then 'verdictbot shell' starts: a local channel, the built-in simulator of both services, no Slack, no keys"
	$(GO) run ./cmd/verdictbot shell

test: ## vet, then every test with the race detector (fuzz seeds included; needs gcc, or RACE= for none)
	@[ -n "$$VERDICTBOT_TEST_DATABASE_URL" ] || echo "VERDICTBOT_TEST_DATABASE_URL unset: PostgreSQL conformance suite skipped"
	@[ -z "$(RACE)" ] || [ "$$($(GO) env CGO_ENABLED)" = 1 ] || { echo "make test: the race detector needs cgo, which needs a C compiler (gcc) on PATH: install gcc, or run make test RACE= (every test, no race detector) or make test-short"; exit 1; }
	$(GO) vet $(PKGS)
	$(GO) test $(RACE) -count=1 -timeout 20m $(PKGS)

# make test-short runs 4 test binaries at once (-p; the default is one per
# core): under -short their tests mostly wait on timers and sockets, not on
# the CPU. On 2 cores (November 2026) the whole run took 68 s with 2, 39 s
# with 4.
SHORT_P  ?= 4

test-short: ## quick tests without the race detector, the slow end-to-end ones skipped (under a minute)
	$(GO) test -short -p $(SHORT_P) $(PKGS)

soak: ## chaos soak: 3 replicas on PostgreSQL under load and random faults for SOAK (default 30m); stops the local PostgreSQL at times
	@mkdir -p $(CURDIR)/bin/soak
	VERDICTBOT_SOAK=$(SOAK) VERDICTBOT_TEST_DATABASE_URL='$(SOAK_DATABASE_URL)' \
	  $(GO) test -count=1 -run '^TestSoak$$' -timeout 0 -v -artifacts -outputdir $(CURDIR)/bin/soak ./cmd/verdictbot/

lint: ## gofmt, go vet, staticcheck (pinned in go.mod as a tool) and go mod tidy -diff
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) tool staticcheck $(PKGS)
	$(GO) mod tidy -diff

readme: ## rewrite README.md's /scan command table from the command registry
	$(GO) test -count=1 -run '^TestREADMECommandTable$$' ./commands -update-readme

bench: ## the benchmarks matching BENCH but the long ones (under 10 min; figures in docs/PERFORMANCE.md)
	$(GO) test -run '^$$' -bench '$(BENCH)' -skip '$(LONG_BENCH)' -benchmem -timeout 20m $(PKGS)

bench-long: ## the benchmarks that take minutes each (LONG_BENCH; about 10 min)
	$(GO) test -run '^$$' -bench '$(LONG_BENCH)' -benchtime 1x -benchmem -timeout 60m $(PKGS)

cover: ## tests with coverage into coverage.out; prints the total
	$(GO) test -count=1 -coverprofile=coverage.out $(PKGS)
	@$(GO) tool cover -func=coverage.out | tail -n 1

fuzz: ## run each fuzz target for FUZZTIME (default 30s)
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

sim: ## serve the simulator of both services on SIM_ADDR
	$(GO) run ./cmd/verdictbot sim --addr $(SIM_ADDR)

docker: ## build the container image IMAGE:VERSION (needs a Docker engine)
	@docker info >/dev/null 2>&1 || { echo "make docker needs a running Docker engine (docker info failed)"; exit 1; }
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMAGE):$(VERSION) .

clean: ## remove build output
	rm -rf bin coverage.out
