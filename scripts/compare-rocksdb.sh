#!/usr/bin/env bash
# compare-rocksdb.sh: run the same db_bench arguments through Strata's
# dbbench and RocksDB's db_bench, interleaved, N times each, and print the
# median ops/sec per benchmark with the ratio strata/rocksdb.
#
#   scripts/compare-rocksdb.sh [-n N] [db_bench flags...]
#   scripts/compare-rocksdb.sh -n 3 -benchmarks=fillrandom,readrandom -num=1000000 -seed=1
#
# Each run gets its own fresh database directory (under $TMPDIR) unless the
# arguments name -db. DB_BENCH selects RocksDB's binary (default: db_bench on
# PATH, e.g. /usr/bin/db_bench from `apt-get install rocksdb-tools`); without
# it only dbbench runs. Note the Debian build has assertions on: its writes
# are 1.5-2.2x slower than a release build (see docs/benchmarks.md).
set -euo pipefail

n=3
if [[ "${1:-}" == "-n" ]]; then n="$2"; shift 2; fi
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/compare-rocksdb.XXXXXX")"
trap 'rm -rf "$work"' EXIT

strata="$work/dbbench"
(cd "$root" && go build -o "$strata" ./cmd/dbbench)
rocks="${DB_BENCH:-$(command -v db_bench || true)}"
if [[ -z "$rocks" ]]; then
	echo "note: db_bench not found (apt-get install -y rocksdb-tools); running dbbench only" >&2
fi

has_db=0
for a in "$@"; do [[ "$a" == -db=* || "$a" == --db=* ]] && has_db=1; done

results="$work/results.tsv" # engine <tab> benchmark <tab> ops/sec
: >"$results"
run_one() { # engine binary run-index [db_bench flags...]
	local eng="$1" bin="$2" i="$3" dbargs=()
	shift 3
	if [[ $has_db == 0 ]]; then dbargs=("-db=$work/db-$eng-$i"); fi
	local out="$work/out-$eng-$i.txt"
	if ! "$bin" "${dbargs[@]}" "$@" >"$out" 2>"$work/err-$eng-$i.txt"; then
		echo "$eng run $i failed; stderr:" >&2
		cat "$work/err-$eng-$i.txt" >&2
		exit 1
	fi
	# "name : X micros/op N ops/sec ..." -> name, N
	awk -v e="$eng" '$2 == ":" && $4 == "micros/op" { print e "\t" $1 "\t" $5 }' "$out" >>"$results"
	rm -rf "$work/db-$eng-$i"
}

for ((i = 1; i <= n; i++)); do
	echo "run $i/$n: strata" >&2
	run_one strata "$strata" "$i" "$@"
	if [[ -n "$rocks" ]]; then
		echo "run $i/$n: rocksdb" >&2
		run_one rocksdb "$rocks" "$i" "$@"
	fi
done

# Median per (engine, benchmark), then one row per benchmark.
awk -F'\t' '
	{ k = $1 SUBSEP $2; v[k, ++c[k]] = $3; if (!($2 in seen)) { seen[$2] = 1; order[++nb] = $2 } }
	function median(k,   m, i, j, t, a) {
		m = c[k]; if (m == 0) return ""
		for (i = 1; i <= m; i++) a[i] = v[k, i] + 0
		for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return (m % 2) ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
	}
	END {
		printf "%-18s %14s %14s %8s\n", "benchmark", "strata ops/s", "rocksdb ops/s", "ratio"
		for (i = 1; i <= nb; i++) {
			b = order[i]; s = median("strata" SUBSEP b); r = median("rocksdb" SUBSEP b)
			ratio = (s != "" && r != "" && r > 0) ? sprintf("%.2f", s / r) : "-"
			printf "%-18s %14s %14s %8s\n", b, (s == "" ? "-" : sprintf("%.0f", s)), (r == "" ? "-" : sprintf("%.0f", r)), ratio
		}
	}' "$results"
