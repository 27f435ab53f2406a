# verdictbot — run "make help" for the targets.
GO       ?= go
PKGS     ?= ./...
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
FUZZTIME ?= 30s
SIM_ADDR ?= 127.0.0.1:8099

.PHONY: help build test test-short lint bench fuzz sim clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/verdictbot (static)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/verdictbot ./cmd/verdictbot

test: ## vet, then every test with the race detector (fuzz seeds included)
	$(GO) vet $(PKGS)
	$(GO) test -race -count=1 $(PKGS)

test-short: ## quick tests without the race detector
	$(GO) test -short $(PKGS)

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)

bench: ## run the benchmarks (figures go in docs/PERFORMANCE.md)
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

fuzz: ## run each fuzz target for FUZZTIME (default 30s)
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

sim: ## serve the simulator of both services on SIM_ADDR
	$(GO) run ./cmd/verdictbot sim --addr $(SIM_ADDR)

clean: ## remove build output
	rm -rf bin
