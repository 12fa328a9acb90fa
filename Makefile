# The project's checks, one target each; .ci/run runs `make ci`.
# Every target runs on a 2-core machine in minutes; the long soak and crash
# loops take flags or env vars (STRATA_LONG=1) and are not run here.

GO ?= go
# Nested modules (each with its own go.mod, outside ./...).
MODULES := raftstore raftetcd bench/chart bench/peers
# Packages with concurrent code, run under the race detector.
RACE_PKGS := ./db/... ./internal/... ./table/... ./stress/...

.PHONY: ci test testrace testinvariants lint modules stress bench

# What CI runs, in this order.
ci: lint test modules testrace testinvariants

# The README's test command.
test:
	$(GO) test ./...

testrace:
	$(GO) test -race $(RACE_PKGS)

# Self-checks that cost too much for production builds (//go:build invariants).
testinvariants:
	$(GO) test -tags invariants ./...

# gofmt, vet, and vet and cross-compile of the other platforms the engine
# builds for.
lint:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then \
		echo "gofmt needed:" >&2; echo "$$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	GOOS=darwin $(GO) vet ./...
	GOOS=windows $(GO) vet ./...
	GOOS=darwin $(GO) build ./...
	GOOS=windows $(GO) build ./...
	GOARCH=386 $(GO) vet ./...

# vet and test of every nested module.
modules:
	@set -e; for m in $(MODULES); do \
		echo "== $$m"; (cd $$m && $(GO) vet ./... && $(GO) test ./...); done
	cd raftetcd && $(GO) test -race -short ./...

# Short stress runs: every mode for seconds (see docs/reliability.md for the
# long ones).
stress:
	$(GO) run ./cmd/stress -mem -threads 4 -ops_per_thread 5000 -reopen 2000
	$(GO) run ./cmd/stress -mode compact -seeds 8 -ops 3000
	$(GO) run ./cmd/stress -mode metamorphic -seeds 4
	$(GO) run ./cmd/stress -mode linearize -mem -histories 50

# Short benchmarks (the figures in docs/ come from cmd/dbbench and the
# scripts in scripts/, not from these).
bench:
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./internal/memtable ./table
	$(GO) run ./cmd/dbbench -benchmarks=fillrandom,readrandom,seekrandom -num=100000 -prefix_size=12 -bloom_bits=10
