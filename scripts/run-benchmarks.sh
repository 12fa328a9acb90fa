#!/usr/bin/env bash
# run-benchmarks.sh: measure Strata's dbbench side by side with RocksDB's
# db_bench and the Go peers (Pebble, goleveldb, Badger), interleaved, and
# produce the figures in docs/benchmarks.md.
#
#   scripts/run-benchmarks.sh [OUT]        # OUT defaults to /tmp/strata-bench
#
# Phases (PHASES, default "peers main bigcache overwrite chart report"):
#   peers     basic and seek suites, 1 rep, all five engines
#             (strata, rocksdb, pebble, goleveldb, badger)
#   main      basic, seek and pr9407 suites, 2 more reps, strata/rocksdb/pebble
#             (together with "peers" that makes 3 reps of basic and seek)
#   bigcache  readrandom,readseq and seekrandom with -cache_size=1 GiB,
#             2 reps, strata/rocksdb/pebble, snappy
#   overwrite fillrandom then overwrite in one process (the suite has no
#             overwrite), 2 reps, strata/rocksdb/pebble, snappy
#   chart     one long fillrandom,overwrite run of dbbench drawing
#             throughput and p99 over time into docs/img/fill-overwrite.svg
#   report    the markdown tables of docs/benchmarks.md (OUT/tables.md) and
#             docs/img/ratios.svg, by bench/chart
#
# The first two phases are the peer suite, bench/peers/run_baselines.sh
# (PEERS_DIR), with our binary added through ROCKSDB_BENCHES. Databases live
# under DATA (default /dev/shm/strata-bench) and are removed at the end.
# Summaries: python3 $PEERS_DIR/summarize.py OUT/<phase>/results.tsv
# Other env: DB_BENCH (RocksDB's binary), DBBENCH and PEERBENCH (where our
# and the peers' binaries are built), SKIP_BUILD=1 (use them as they are), NUM.
set -uo pipefail

OUT=${1:-/tmp/strata-bench}
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PEERS_DIR=${PEERS_DIR:-"$ROOT/bench/peers"}
DATA=${DATA:-/dev/shm/strata-bench}
PHASES=${PHASES:-"peers main bigcache overwrite chart report"}
NUM=${NUM:-1000000}
DB_BENCH=${DB_BENCH:-/usr/bin/db_bench}
DBBENCH=${DBBENCH:-/tmp/dbbench}
PEERBENCH=${PEERBENCH:-/tmp/peerbench}
BIG_CACHE=1073741824

mkdir -p "$OUT" "$DATA"
trap 'rm -rf "$DATA"' EXIT
if [[ -z "${SKIP_BUILD:-}" ]]; then # SKIP_BUILD=1: use the binaries as they are
	(cd "$ROOT" && go build -o "$DBBENCH" ./cmd/dbbench) || exit 1
	(cd "$PEERS_DIR" && go build -o "$PEERBENCH" .) || exit 1
fi

baselines() { # baselines OUTDIR REPS, with the suite's env vars set by the caller
	DATA="$DATA" PEERBENCH="$PEERBENCH" NUM="$NUM" \
		ROCKSDB_BENCHES="strata=$DBBENCH rocksdb=$DB_BENCH" \
		bash "$PEERS_DIR/run_baselines.sh" "$1" "$2"
}

# phase_run ENGINE REP LABEL flags...: as run_baselines.sh's run(), with
# -cache_size=$BIG_CACHE appended in the bigcache phase; results go to
# OUT/$phase.
phase_run() {
	local eng=$1 rep=$2 label=$3 o="$OUT/$phase" cmd
	shift 3
	case $eng in
	strata) cmd=("$DBBENCH") ;;
	rocksdb) cmd=("$DB_BENCH") ;;
	*) cmd=("$PEERBENCH" "-engine=$eng") ;;
	esac
	cmd+=("-db=$DATA/$eng" "$@")
	[[ $phase == bigcache ]] && cmd+=("-cache_size=$BIG_CACHE")
	mkdir -p "$o/logs"
	echo "[$(date +%T)] rep=$rep $eng $label: ${cmd[*]}" | tee -a "$o/commands.log"
	"${cmd[@]}" >"$o/logs/$label.$eng.rep$rep.log" 2>&1 ||
		echo "  !! exit $? ($label $eng)" | tee -a "$o/commands.log"
	tr '\r' '\n' <"$o/logs/$label.$eng.rep$rep.log" | grep -a " micros/op " |
		while IFS= read -r line; do
			printf '%s\t%s\t%s\t%s\n' "$rep" "$eng" "$label" "$line" >>"$o/results.tsv"
		done
}

for phase in $PHASES; do
	case $phase in
	peers)
		SUITES="basic seek" ENGINES_GO="pebble goleveldb badger" baselines "$OUT/peers" 1
		;;
	main)
		SUITES="basic seek pr9407" ENGINES_GO="pebble" PR_DURATION=15 baselines "$OUT/main" 2
		;;
	bigcache)
		c=snappy
		for rep in 1 2; do
			for eng in strata rocksdb pebble; do
				phase_run $eng $rep "fillrandom.$c" -benchmarks=fillrandom -num=$NUM -compression_type=$c -seed=1
				phase_run $eng $rep "read.$c" -use_existing_db -benchmarks=readrandom,readseq -num=$NUM -reads=$NUM -compression_type=$c -seed=2
				rm -rf "${DATA:?}/$eng"
				phase_run $eng $rep "seekfill.$c" -benchmarks=fillrandom -num=$NUM -prefix_size=12 -bloom_bits=16 -compression_type=$c -seed=1
				phase_run $eng $rep "seek.$c" -use_existing_db -benchmarks=seekrandom -num=$NUM -reads=$NUM -prefix_size=12 -bloom_bits=16 -compression_type=$c -seed=2
				rm -rf "${DATA:?}/$eng"
			done
		done
		;;
	overwrite)
		for rep in 1 2; do
			for eng in strata rocksdb pebble; do
				phase_run $eng $rep overwrite.snappy -benchmarks=fillrandom,overwrite -num=$NUM -compression_type=snappy -seed=1
				rm -rf "${DATA:?}/$eng"
			done
		done
		;;
	chart)
		mkdir -p "$ROOT/docs/img"
		"$DBBENCH" -db="$DATA/chart" -benchmarks=fillrandom,overwrite -num=3000000 -seed=1 \
			-report_interval_seconds=1 -report_file="$OUT/fill-overwrite.csv" \
			-report_plot="$ROOT/docs/img/fill-overwrite.svg" >"$OUT/chart.log" 2>&1
		grep -a " micros/op " "$OUT/chart.log"
		rm -rf "${DATA:?}/chart"
		;;
	report)
		# The 1 GiB runs get their own workload names; of the overwrite
		# phase only the overwrite lines are new.
		sed -E 's/\t(read|seek|fillrandom|seekfill)\.snappy\t/\t\1.snappy-1GiB\t/' \
			"$OUT/bigcache/results.tsv" >"$OUT/bigcache-relabel.tsv"
		grep -P '\toverwrite ' "$OUT/overwrite/results.tsv" >"$OUT/overwrite-only.tsv"
		# benchchart is its own module (gonum stays out of the library's).
		chartbin="$(cd "$OUT" && pwd)/benchchart"
		go build -C "$ROOT/bench/chart" -o "$chartbin" . || exit 1
		chart() { "$chartbin" "$@"; }
		all="$OUT/peers/results.tsv $OUT/main/results.tsv"
		{
			chart -table -engines strata,rocksdb,pebble,goleveldb,badger \
				-workloads fillseq.none,fillrandom.none,readrandom.none,readseq.none,seekrandom.none $all
			chart -table -engines strata,rocksdb,pebble,goleveldb,badger \
				-workloads fillseq.snappy,fillrandom.snappy,readrandom.snappy,readseq.snappy,seekrandom.snappy $all
			chart -table -engines strata,rocksdb,pebble "$OUT/overwrite/results.tsv"
			chart -table -engines strata,rocksdb,pebble \
				-workloads readrandom.snappy-1GiB,readseq.snappy-1GiB,seekrandom.snappy-1GiB "$OUT/bigcache-relabel.tsv"
			chart -table -engines strata,rocksdb,pebble -workloads pr9407fill,pr9407seek "$OUT/main/results.tsv"
		} | tee "$OUT/tables.md"
		# shellcheck disable=SC2086
		chart -o "$ROOT/docs/img/ratios.svg" -base pebble -engines strata,rocksdb,pebble,goleveldb,badger \
			-workloads fillseq.none,fillrandom.none,readrandom.none,readseq.none,seekrandom.none,fillseq.snappy,fillrandom.snappy,overwrite.snappy,readrandom.snappy,readseq.snappy,seekrandom.snappy,readrandom.snappy-1GiB,seekrandom.snappy-1GiB,pr9407fill,pr9407seek \
			-title "median ops/sec relative to Pebble (1 thread, num=$NUM, data in ${DATA%/*})" \
			$all "$OUT/overwrite-only.tsv" "$OUT/bigcache-relabel.tsv"
		;;
	*) echo "unknown phase $phase" >&2 ;;
	esac
done
