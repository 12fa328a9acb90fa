#!/bin/bash
# A manual compaction of one database with -subcompactions=1 and 4: a
# fillrandom of BYTES (default 1 GB) of 1 KiB values with automatic
# compactions off (so every table is in L0, and CompactRange is one L0 to
# L6 compaction, the kind max_subcompactions splits), then, on fresh copies
# of that directory, `compact` with each setting in ORDER (default 1 4 4 1:
# interleaved). Build /tmp/strata-dbbench first (go build -o
# /tmp/strata-dbbench ./cmd/dbbench).
set -u
OUT=${OUT:-/tmp/subout}
BYTES=${BYTES:-1000000000}
DIR=${DIR:-/tmp/subbench}
STRATA=/tmp/strata-dbbench
mkdir -p $OUT $DIR
vs=1024; num=$((BYTES / (vs + 16)))
common="-compression_type=none -key_size=16 -value_size=$vs -num=$num -cache_size=8388608 -write_buffer_size=67108864"
rm -rf $DIR/base
echo "== $(date +%T) fill: $STRATA -db=$DIR/base -benchmarks=fillrandom -disable_auto_compactions $common -seed=1" | tee -a $OUT/log
$STRATA -db=$DIR/base -benchmarks=fillrandom,flush -disable_auto_compactions $common -seed=1 > $OUT/fill.out 2>&1
grep -E "^fillrandom" $OUT/fill.out | tee -a $OUT/log
du -sm $DIR/base | tee -a $OUT/log
i=0
for sc in ${ORDER:-1 4 4 1}; do
  i=$((i+1)); db=$DIR/c$i; rm -rf $db; cp -a $DIR/base $db; sync
  echo "== $(date +%T) run $i: /usr/bin/time -v $STRATA -db=$db -use_existing_db -benchmarks=compact,stats -subcompactions=$sc $common" | tee -a $OUT/log
  /usr/bin/time -v $STRATA -db=$db -use_existing_db -benchmarks=compact,stats -subcompactions=$sc $common > $OUT/c$i-sc$sc.out 2>&1
  grep -E "^compact |Elapsed|Maximum resident|Percent of CPU|strata.stats|Sum " $OUT/c$i-sc$sc.out | tee -a $OUT/log
  rm -rf $db
done
echo "== done $(date +%T)" | tee -a $OUT/log
