#!/bin/bash
# Large-value writes with blob files on, interleaved reps: for each value
# size, REPS rounds of each engine in turn, fillrandom then overwrite in one
# process (BYTES of data each, default 1 GB), under /usr/bin/time -v (peak
# RSS, user and system CPU). No waitforcompaction: the figures are the
# write throughput. One line per run in OUT/results.tsv:
#   engine, value size, rep, fillrandom MB/s, overwrite MB/s, peak RSS KB,
#   user s, system s.
#
# STRATA is a list of name=binary pairs (cmd/dbbench builds, e.g. two
# commits to compare); Pebble is bench/peers' peerbench with its value
# separation on.
#   go build -o /tmp/strata-dbbench ./cmd/dbbench
#   (cd bench/peers && go build -o /tmp/peerbench .)
#   STRATA="new=/tmp/strata-dbbench" OUT=/tmp/bwout scripts/blob-write-bench.sh
set -u
OUT=${OUT:-/tmp/bwout}
DIR=${DIR:-/tmp/blobwritebench}
PEER=${PEER:-/tmp/peerbench}
STRATA=${STRATA:-"strata=/tmp/strata-dbbench"}
SIZES=${SIZES:-"16384 4096"}
REPS=${REPS:-3}
MIN=${MIN_BLOB_SIZE:-1024}
mkdir -p $OUT
common="-compression_type=none -key_size=16 -cache_size=8388608 -write_buffer_size=67108864 -enable_blob_files -min_blob_size=$MIN"
for vs in $SIZES; do
  num=$((${BYTES:-1000000000} / (vs + 16)))
  for rep in $(seq 1 $REPS); do
    for e in $STRATA pebble; do
      name=${e%%=*}; db=$DIR/$name; rm -rf $db
      if [ "$name" = pebble ]; then b="$PEER -engine=pebble -db=$db"; else b="${e#*=} -db=$db"; fi
      tag=$name-$vs-$rep
      echo "== $(date +%T) load $(cut -d' ' -f1 /proc/loadavg) $tag: $b -benchmarks=fillrandom,overwrite -num=$num -value_size=$vs $common -seed=1" >> $OUT/log
      /usr/bin/time -v $b -benchmarks=fillrandom,overwrite -num=$num -value_size=$vs $common -seed=1 > $OUT/$tag.out 2>&1
      f=$(grep '^fillrandom ' $OUT/$tag.out | awk '{print $(NF-1)}')
      o=$(grep '^overwrite ' $OUT/$tag.out | awk '{print $(NF-1)}')
      rss=$(grep 'Maximum resident' $OUT/$tag.out | awk '{print $NF}')
      u=$(grep 'User time' $OUT/$tag.out | awk '{print $NF}')
      s=$(grep 'System time' $OUT/$tag.out | awk '{print $NF}')
      echo -e "$name\t$vs\t$rep\t$f\t$o\t$rss\t$u\t$s" | tee -a $OUT/results.tsv
      rm -rf $db
    done
  done
done
echo "== done $(date +%T)" >> $OUT/log
