#!/bin/bash
# Strata and Pebble side by side, alternating, on the same db_bench command
# lines: 1M keys (16 B keys, 100 B values), no compression, /dev/shm, 8 MiB
# block cache (given explicitly) unless stated. Every line is prefixed with the engine and
# followed by the process's peak RSS.
#
# Build first:
#   go build -o /tmp/dbbench ./cmd/dbbench
#   (cd bench/peers && go build -o /tmp/peerbench .)
# Then: scripts/side-by-side.sh > /tmp/sbs.txt   (REPS=3 by default;
# ENGINES="strata pebble rocksdb" adds RocksDB's own db_bench, from
# apt-get install rocksdb-tools: an assertion build, so its writes are slow)
N=${N:-1000000}
REPS=${REPS:-3}
DIR=${DIR:-/dev/shm}
run() { # name label cmd...
  local name=$1 label=$2; shift 2
  /usr/bin/time -f "maxrss_kb=%M" "$@" 2>&1 | tr '\r' '\n' |
    grep -E "^(fillseq|fillrandom|overwrite|readrandom|readseq|seekrandom) |maxrss" |
    sed "s/^/$name $label /"
}
for rep in $(seq 1 "$REPS"); do
for e in ${ENGINES:-strata pebble}; do
  case $e in
    strata) B="${DBBENCH:-/tmp/dbbench}" ;;
    rocksdb) B="${ROCKSDB_DB_BENCH:-/usr/bin/db_bench}" ;;
    *) B="${PEERBENCH:-/tmp/peerbench} -engine=$e" ;;
  esac
  D=$DIR/sbs-$e
  # The cache size is given on every line: RocksDB 11's db_bench defaults
  # to 32 MiB (7.8's to 8 MiB, as ours and the peers do).
  C="-compression_type=none -cache_size=8388608"
  rm -rf $D
  run $e fillseq $B -db=$D -benchmarks=fillseq -num=$N $C -seed=1
  rm -rf $D
  run $e fillrandom $B -db=$D -benchmarks=fillrandom -num=$N $C -seed=1
  run $e overwrite $B -db=$D -use_existing_db -benchmarks=overwrite -num=$N $C -seed=3
  run $e read8m $B -db=$D -use_existing_db -benchmarks=readrandom,readseq -num=$N -reads=300000 $C -seed=2
  run $e read1g $B -db=$D -use_existing_db -benchmarks=readrandom -num=$N -reads=300000 -compression_type=none -seed=2 -cache_size=1073741824
  for t in 2 4; do
    rm -rf $D
    run $e fillrandom-t$t $B -db=$D -benchmarks=fillrandom -threads=$t -num=$((N / t)) $C -seed=1
  done
  rm -rf $D
  run $e seekfill $B -db=$D -benchmarks=fillrandom -num=$N -prefix_size=12 -bloom_bits=16 $C -seed=1
  run $e seek $B -db=$D -use_existing_db -benchmarks=seekrandom -num=$N -reads=300000 -prefix_size=12 -bloom_bits=16 $C -seed=2
  rm -rf $D
done
done
