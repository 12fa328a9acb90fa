#!/bin/bash
# Scale runs: how Strata and Pebble behave from 1M to 50M keys, in one
# window (engines interleaved at each N). Build first:
#   go build -o /tmp/dbbench ./cmd/dbbench
#   (cd bench/peers && go build -o /tmp/peerbench .)
#   go build -C bench/chart -o /tmp/benchchart .     # for the chart
# then: scripts/scale.sh            (or SCALE_NS="100000 300000" SCALE_READS=100000 scripts/scale.sh)
#
# For each N and each engine, with the flags of scripts/side-by-side.sh
# (16-byte keys, 100-byte values, -compression_type=none, 8 MiB cache):
#   1. fillrandom -num=N -seed=1, then waitforcompaction (untimed) and stats
#      (prints "<engine>.stats: write_amp=..."), into a fresh DB;
#   2. readrandom -reads=R -seed=2 on that DB (-use_existing_db), then delete it;
#   3. the same fill with -prefix_size=12 -bloom_bits=16 (workload "seekfill");
#   4. seekrandom -reads=R -seed=2 on that DB, then delete it.
# Two fills per engine and N, as side-by-side.sh (readrandom without a
# filter, seekrandom with prefix 12 and bloom 16), so the ratios compare
# with the 1M figures measured there. SCALE_ONE_FILL=1 skips fill 1 and
# runs readrandom on the prefix+bloom DB instead (half the fill time; the
# readrandom figures are then with a filter and not comparable to those).
#
# Settings (environment):
#   SCALE_NS       key counts              (default "1000000 10000000 50000000")
#   SCALE_READS    reads per read run, R   (default 1000000)
#   SCALE_DIR      where the DBs go        (default /tmp/scale: a disk, not
#                  /dev/shm; one DB at a time, about 140 bytes a key, 7 GB at 50M)
#   SCALE_OUT      output directory        (default $SCALE_DIR/out-<date>)
#   SCALE_ENGINES  engines, in run order   (default "strata pebble")
#   SCALE_REPS     reps of the whole N list (default 1; the chart takes medians)
#   SCALE_CACHE    -cache_size in bytes    (default 8388608)
#   SCALE_ONE_FILL see above               (default 0)
#   SCALE_SEEK     0 skips the prefix+bloom fill and seekrandom (default 1)
#   DBBENCH, PEERBENCH, BENCHCHART  binaries (default /tmp/dbbench,
#                  /tmp/peerbench, /tmp/benchchart)
#
# Output in SCALE_OUT: results.tsv (header row; engine, N, workload,
# micros_op, ops_sec, maxrss_kb, db_bytes, write_amp, the result line),
# one log per run (logs/), meta.txt (machine, binaries, settings), and,
# when BENCHCHART exists, scale.svg, scale.png and table.md.
# db_bytes is `du -sb` of the DB after the fill process exits (WAL
# included; on the read rows, the size of the DB read). write_amp is
# (flush + compaction table bytes) / user batch bytes, counted by the fill
# process from Open, after waitforcompaction; "-" on read rows.
set -u
NS=${SCALE_NS:-"1000000 10000000 50000000"}
R=${SCALE_READS:-1000000}
DIR=${SCALE_DIR:-/tmp/scale}
OUT=${SCALE_OUT:-$DIR/out-$(date +%Y%m%d-%H%M%S)}
ENGINES=${SCALE_ENGINES:-"strata pebble"}
REPS=${SCALE_REPS:-1}
CACHE=${SCALE_CACHE:-8388608}
ONE_FILL=${SCALE_ONE_FILL:-0}
DBBENCH=${DBBENCH:-/tmp/dbbench}
PEERBENCH=${PEERBENCH:-/tmp/peerbench}
BENCHCHART=${BENCHCHART:-/tmp/benchchart}
SEEK_FLAGS="-prefix_size=12 -bloom_bits=16"

bin() { # engine -> command
  case $1 in
    strata) echo "$DBBENCH" ;;
    *) echo "$PEERBENCH -engine=$1" ;;
  esac
}
for e in $ENGINES; do
  b=$(bin "$e"); b=${b%% *}
  [ -x "$b" ] || { echo "scale.sh: $b (engine $e) is not an executable; build it first (see the top of $0)" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "scale.sh: /usr/bin/time (GNU time) is needed for peak RSS" >&2; exit 1; }

mkdir -p "$DIR" "$OUT/logs" || exit 1
TSV=$OUT/results.tsv

# Room for the largest DB (one engine's DB exists at a time): about 140
# bytes a key, and half as much again for compaction outputs in flight.
maxn=0; for n in $NS; do [ "$n" -gt "$maxn" ] && maxn=$n; done
need=$(( maxn * 140 * 3 / 2 ))
avail=$(( $(df -Pk "$DIR" | awk 'NR==2 {print $4}') * 1024 ))
if [ "$avail" -lt "$need" ] && [ "${SCALE_FORCE:-0}" != 1 ]; then
  echo "scale.sh: $DIR has $((avail >> 30)) GiB free, $((need >> 30)) GiB wanted for N=$maxn (SCALE_FORCE=1 runs anyway)" >&2
  exit 1
fi

{
  echo "date: $(date -Is)"
  echo "host: $(uname -srm), $(nproc) CPUs, $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo) memory"
  echo "dir: $DIR ($(df -PTh "$DIR" | awk 'NR==2 {print $2 ", " $1}'))"
  echo "settings: NS=\"$NS\" READS=$R ENGINES=\"$ENGINES\" REPS=$REPS CACHE=$CACHE ONE_FILL=$ONE_FILL"
  for e in $ENGINES; do b=$(bin "$e"); b=${b%% *}; echo "binary $e: $b $(sha256sum < "$b" | cut -c1-16) $(date -r "$b" -Is)"; done
  git -C "$(dirname "$0")" log -1 --format='strata checkout: %h %s' 2>/dev/null
} > "$OUT/meta.txt"
printf 'engine\tN\tworkload\tmicros_op\tops_sec\tmaxrss_kb\tdb_bytes\twrite_amp\tline\n' > "$TSV"
echo "scale.sh: writing $OUT" >&2

# run ENGINE N WORKLOAD DB DBBYTES ARGS...: one process; appends a TSV row.
# WORKLOAD names the row; the benchmark whose result line is taken is the
# first of -benchmarks. DBBYTES "" = measure the DB after the run.
run() {
  local e=$1 n=$2 wl=$3 db=$4 dbbytes=$5; shift 5
  local log="$OUT/logs/$e-$n-$wl-r$rep.log" bench
  bench=$(printf '%s\n' "$@" | sed -n 's/^-benchmarks=\([a-z]*\).*/\1/p')
  echo "scale.sh: $(date +%T) $e N=$n $wl" >&2
  # shellcheck disable=SC2046 # bin's output is a command and its flags
  echo "+ $(bin "$e") -db=$db $*" > "$log"
  /usr/bin/time -f maxrss_kb=%M -a -o "$log.time" $(bin "$e") -db="$db" "$@" >> "$log" 2>&1
  local rc=$?
  cat "$log.time" >> "$log"; rm -f "$log.time"
  local line micros ops rss wamp
  line=$(tr '\r' '\n' < "$log" | grep -E "^$bench +: +[0-9.]+ micros/op" | tail -1)
  rss=$(sed -n 's/^maxrss_kb=\([0-9]*\)$/\1/p' "$log" | tail -1)
  wamp=$(sed -n 's/^[a-z]*\.stats: write_amp=\([0-9.]*\) .*/\1/p' "$log" | tail -1)
  [ -z "$dbbytes" ] && dbbytes=$(du -sb "$db" 2>/dev/null | cut -f1)
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    echo "scale.sh: $e N=$n $wl FAILED (exit $rc), see $log" >&2
    micros=-; ops=-; line="FAILED exit $rc"
  else
    micros=$(awk '{print $3}' <<< "$line"); ops=$(awk '{print $5}' <<< "$line")
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$e" "$n" "$wl" "$micros" "$ops" "${rss:--}" "${dbbytes:--}" "${wamp:--}" "$line" >> "$TSV"
  LAST_DB_BYTES=$dbbytes
}

for rep in $(seq 1 "$REPS"); do
for n in $NS; do
for e in $ENGINES; do
  db=$DIR/db-$e
  common=(-num="$n" -compression_type=none -cache_size="$CACHE")
  rm -rf "$db"
  if [ "$ONE_FILL" != 1 ]; then
    run "$e" "$n" fillrandom "$db" "" -benchmarks=fillrandom,waitforcompaction,stats "${common[@]}" -seed=1
    run "$e" "$n" readrandom "$db" "$LAST_DB_BYTES" -use_existing_db -benchmarks=readrandom "${common[@]}" -reads="$R" -seed=2
    rm -rf "$db"
  fi
  if [ "${SCALE_SEEK:-1}" = 0 ]; then continue; fi
  # shellcheck disable=SC2086 # SEEK_FLAGS is a list of flags
  run "$e" "$n" seekfill "$db" "" -benchmarks=fillrandom,waitforcompaction,stats "${common[@]}" $SEEK_FLAGS -seed=1
  if [ "$ONE_FILL" = 1 ]; then
    # shellcheck disable=SC2086
    run "$e" "$n" readrandom "$db" "$LAST_DB_BYTES" -use_existing_db -benchmarks=readrandom "${common[@]}" $SEEK_FLAGS -reads="$R" -seed=2
  fi
  # shellcheck disable=SC2086
  run "$e" "$n" seekrandom "$db" "$LAST_DB_BYTES" -use_existing_db -benchmarks=seekrandom "${common[@]}" $SEEK_FLAGS -reads="$R" -seed=2
  rm -rf "$db"
done
done
done

if [ -x "$BENCHCHART" ]; then
  engs=$(echo "$ENGINES" | tr ' ' ',')
  "$BENCHCHART" -scale -engines="$engs" -title="micros/op against keys (N); $R reads" \
    -o "$OUT/scale.svg,$OUT/scale.png" "$TSV" || echo "scale.sh: chart failed" >&2
  "$BENCHCHART" -scale -table -engines="$engs" -workloads=fillrandom,readrandom,seekfill,seekrandom "$TSV" > "$OUT/table.md" ||
    echo "scale.sh: table failed" >&2
else
  echo "scale.sh: no $BENCHCHART; chart with: benchchart -scale -o scale.svg,scale.png $TSV" >&2
fi
column -t -s $'\t' "$TSV" | cut -c1-140
echo "scale.sh: done: $OUT" >&2
