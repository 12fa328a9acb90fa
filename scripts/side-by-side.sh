#!/bin/bash
# Build first: go build -o /tmp/dbbench ./cmd/dbbench; (cd scripts/peers && go build -o /tmp/peerbench .)
# Side by side: Strata (new), Pebble; 1M keys, no compression, /dev/shm, 8 MiB cache.
N=1000000
run() { # name cmd...
  local name=$1; shift
  /usr/bin/time -f "maxrss_kb=%M" "$@" 2>&1 | tr '\r' '\n' | grep -E "^(fillseq|fillrandom|overwrite|readrandom|readseq|seekrandom) |maxrss" | sed "s/^/$name /"
}
for rep in 1 2; do
for e in strata pebble; do
  if [ $e = strata ]; then B="${DBBENCH:-/tmp/dbbench}"; else B="${PEERBENCH:-/tmp/peerbench} -engine=pebble"; fi
  rm -rf /dev/shm/sbs-$e
  run $e $B -db=/dev/shm/sbs-$e -benchmarks=fillseq -num=$N -compression_type=none -seed=1
  rm -rf /dev/shm/sbs-$e
  run $e $B -db=/dev/shm/sbs-$e -benchmarks=fillrandom -num=$N -compression_type=none -seed=1
  run $e $B -db=/dev/shm/sbs-$e -use_existing_db -benchmarks=readrandom,readseq -num=$N -reads=300000 -compression_type=none -seed=2
  rm -rf /dev/shm/sbs-$e
  run $e $B -db=/dev/shm/sbs-$e -benchmarks=fillrandom -num=$N -prefix_size=12 -bloom_bits=16 -compression_type=none -seed=1
  run $e $B -db=/dev/shm/sbs-$e -use_existing_db -benchmarks=seekrandom -num=$N -reads=300000 -prefix_size=12 -bloom_bits=16 -compression_type=none -seed=2
done
done
rm -rf /dev/shm/sbs-*
