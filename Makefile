# verdictbot — run "make help" for the targets.
GO       ?= go
PKGS     ?= ./...
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# The same names as .goreleaser.yaml's ldflags (cmd/verdictbot/buildinfo.go).
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
FUZZTIME ?= 30s
SIM_ADDR ?= 127.0.0.1:8099
# make sim's task progression: demo (a URL ~2 s, a file ~5 s), or realistic
# (a URL ~12 s, a file ~4.5 minutes, as the real services) or fast.
SIM_PROFILE ?= demo
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

# Release and deployment tools: the one place their versions are pinned.
# `make tools` installs each with `go install MODULE@VERSION` (checked
# against the Go checksum database) into bin/tools/NAME@VERSION/, so a new
# version is a new directory and an old binary is never used by mistake.
# goreleaser v2.15.1: the newest that builds with Go 1.26 (v2.18 needs a
# newer Go); it embeds ko v0.18.1, hence KO_VERSION. helm v3: the major
# version the chart's apiVersion v2 targets and admins run.
GORELEASER_VERSION      ?= v2.15.1
HELM_VERSION            ?= v3.22.0
KO_VERSION              ?= v0.18.1
CRANE_VERSION           ?= v0.21.3
CYCLONEDX_GOMOD_VERSION ?= v1.10.0
TOOLS      := $(CURDIR)/bin/tools
GORELEASER := $(TOOLS)/goreleaser@$(GORELEASER_VERSION)/goreleaser
HELM       := $(TOOLS)/helm@$(HELM_VERSION)/helm
KO         := $(TOOLS)/ko@$(KO_VERSION)/ko
CRANE      := $(TOOLS)/crane@$(CRANE_VERSION)/crane
CYCLONEDX  := $(TOOLS)/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VERSION)/cyclonedx-gomod
# The chart, and the Kubernetes version helm template renders for (helm
# built with go install assumes 1.20, below the chart's kubeVersion).
CHART        := deploy/helm/verdictbot
KUBE_VERSION ?= 1.31.0
MONITORING   := --api-versions monitoring.coreos.com/v1/ServiceMonitor --api-versions monitoring.coreos.com/v1/PrometheusRule

.PHONY: help build run demo test test-short soak lint docs readme bench bench-long cover fuzz sim docker clean \
	tools tools-ci release-check release-snapshot chart-check

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

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

# The generated parts of README.md and docs/*.md (between <!-- NAME:begin
# … --> and <!-- NAME:end --> markers): the settings tables (package
# config), the /scan command table (the registry) and the package list
# (internal/docgen); verdictbot's subcommands (cmd/verdictbot's cliCommands,
# in package main, so written by its own test). Without -update the same
# tests fail when a generated part is stale.
docs: ## rewrite the generated parts of README.md and docs/ (settings, commands, packages) from the code
	$(GO) test -count=1 -run '^TestGeneratedDocs$$' ./internal/docgen -update
	$(GO) test -count=1 -run '^TestDocsCommandList$$' ./cmd/verdictbot -update

readme: docs ## the old name of make docs

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

sim: ## serve the simulator of both services on SIM_ADDR (SIM_PROFILE=demo; realistic as the real services)
	$(GO) run ./cmd/verdictbot sim --addr $(SIM_ADDR) --profile $(SIM_PROFILE)

docker: ## build the container image IMAGE:VERSION (needs a Docker engine)
	@docker info >/dev/null 2>&1 || { echo "make docker needs a running Docker engine (docker info failed)"; exit 1; }
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) --build-arg DATE=$(DATE) -t $(IMAGE):$(VERSION) .

tools: $(GORELEASER) $(HELM) $(KO) $(CRANE) $(CYCLONEDX) ## install the pinned release and chart tools into bin/tools (go install)

tools-ci: $(GORELEASER) $(HELM) ## the tools CI's checks need (goreleaser, helm)

$(TOOLS)/goreleaser@%/goreleaser:
	GOBIN=$(@D) $(GO) install github.com/goreleaser/goreleaser/v2@$*
# helm is installed beside and renamed into place: the chart tests look
# for it while CI installs it in the background, and must never run a
# half-written binary.
$(TOOLS)/helm@%/helm:
	GOBIN=$(@D).partial $(GO) install helm.sh/helm/v3/cmd/helm@$*
	mkdir -p $(@D) && mv $(@D).partial/helm $@ && rmdir $(@D).partial
$(TOOLS)/ko@%/ko:
	GOBIN=$(@D) $(GO) install github.com/google/ko@$*
$(TOOLS)/crane@%/crane:
	GOBIN=$(@D) $(GO) install github.com/google/go-containerregistry/cmd/crane@$*
$(TOOLS)/cyclonedx-gomod@%/cyclonedx-gomod:
	GOBIN=$(@D) $(GO) install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$*

release-check: $(GORELEASER) ## goreleaser check: .goreleaser.yaml is valid
	$(GORELEASER) check

# GoReleaser reads the commit, its date and the remote's URL from git; in a
# checkout with no remote (`git ls-remote --get-url` fails) it drops all
# three and stamps "none". Without a remote, the project's URL is given
# through git's environment (no change to .git/config; nothing is fetched).
GIT_REMOTE_ENV = $(if $(shell git remote 2>/dev/null),,GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/verdictbot/verdictbot.git)

# --skip=ko: GoReleaser's ko step loads a snapshot image into a Docker
# daemon; scripts/snapshot-image.sh builds the same image with ko into dist/.
release-snapshot: $(GORELEASER) $(CYCLONEDX) $(KO) $(CRANE) ## a release into dist/ without publishing: archives, SBOMs, checksums, the image as an OCI archive
	$(GIT_REMOTE_ENV) PATH="$(dir $(CYCLONEDX)):$$PATH" $(GORELEASER) release --snapshot --clean --skip=ko
	KO=$(KO) CRANE=$(CRANE) scripts/snapshot-image.sh dist
	@cd dist && sha256sum verdictbot_*_image.oci.tar >> checksums.txt && ls -l

chart-check: $(HELM) ## helm lint and helm template of the chart, both stores, with and without the Prometheus Operator
	$(HELM) lint --strict $(CHART)
	$(HELM) lint --strict $(CHART) --set store=postgres
	$(HELM) template verdictbot $(CHART) --kube-version $(KUBE_VERSION) >/dev/null
	$(HELM) template verdictbot $(CHART) --kube-version $(KUBE_VERSION) $(MONITORING) --set store=postgres >/dev/null

clean: ## remove build output
	rm -rf bin dist coverage.out
