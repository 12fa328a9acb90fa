#!/usr/bin/env bash
# Runs YCSB load + workloads A-F against every engine at 1 and 4 threads,
# engines interleaved (strata, pebble, badger, bbolt at 1 thread, then the
# same at 4, REPS times), each engine and thread count in its own process so
# that its peak RSS (VmHWM) is its own. Writes the raw log to $OUT and
# prints a summary of the RESULT and RSS lines at the end.
#
#   bench/ycsb/run.sh                  # 1M records, 1M ops per workload
#   RECORDS=10000000 bench/ycsb/run.sh # the 10M size
#   RECORDS=100000 OPS=100000 OPS_E=20000 bench/ycsb/run.sh
#
# Environment: RECORDS (1000000), OPS (= RECORDS), OPS_E (workload E's
# operationcount, default OPS), THREADS ("1 4"), ENGINES ("strata pebble
# badger bbolt"), WORKLOADS (a,b,c,d,e,f), CACHE_MB (64), MEMTABLE_MB (64;
# 0 for each engine's default), REPS (1), DIR (a fresh directory under
# /dev/shm when it exists, else under $TMPDIR), OUT (ycsb-<date>.txt).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

RECORDS=${RECORDS:-1000000}
OPS=${OPS:-$RECORDS}
OPS_E=${OPS_E:-$OPS}
THREADS=${THREADS:-"1 4"}
ENGINES=${ENGINES:-"strata pebble badger bbolt"}
WORKLOADS=${WORKLOADS:-a,b,c,d,e,f}
CACHE_MB=${CACHE_MB:-64}
MEMTABLE_MB=${MEMTABLE_MB:-64}
REPS=${REPS:-1}
OUT=${OUT:-ycsb-$(date -u +%Y-%m-%d).txt}
if [ -z "${DIR:-}" ]; then
	base=/dev/shm
	[ -d "$base" ] || base=${TMPDIR:-/tmp}
	DIR=$(mktemp -d "$base/strata-ycsb.XXXXXX")
fi

bin=$(mktemp -d)/ycsb
trap 'rm -rf "$(dirname "$bin")" "$DIR"' EXIT
(cd "$here" && go build -o "$bin" ./cmd/ycsb)

{
	echo "# bench/ycsb/run.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "# RECORDS=$RECORDS OPS=$OPS OPS_E=$OPS_E THREADS='$THREADS' ENGINES='$ENGINES' WORKLOADS=$WORKLOADS CACHE_MB=$CACHE_MB MEMTABLE_MB=$MEMTABLE_MB REPS=$REPS DIR=$DIR"
	echo "# $(nproc) CPUs; $(uname -sr); $(go version); load: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$OUT"

for rep in $(seq "$REPS"); do
	for t in $THREADS; do
		for e in $ENGINES; do
			echo "## rep=$rep engine=$e threads=$t load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT"
			"$bin" -engine "$e" -dir "$DIR/$e" -threads "$t" -records "$RECORDS" -ops "$OPS" -ops_e "$OPS_E" \
				-workloads "$WORKLOADS" -cache_mb "$CACHE_MB" -memtable_mb "$MEMTABLE_MB" 2>&1 | tee -a "$OUT"
			rm -rf "${DIR:?}/$e"
		done
	done
done

echo "# summary (ops/s, p99 us of every call)"
grep -E '^(RESULT|RSS) ' "$OUT"
