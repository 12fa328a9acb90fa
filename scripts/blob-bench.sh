#!/bin/bash
# Blob files on vs off, side by side: for each value size (1, 4 and 16 KiB),
# each engine configuration in turn (interleaved): fillrandom then overwrite
# in one process (BYTES of data each, default 1 GB), then waitforcompaction
# and stats; readrandom (num/5 reads) in a fresh process. Every run goes
# under /usr/bin/time -v: its "File system outputs" (512-byte blocks, WAL
# included) give the bytes each engine wrote, and its peak RSS. The
# databases go to a disk directory (DIR), so that those bytes are counted
# (tmpfs writes are not).
#
# Build first:
#   go build -o /tmp/strata-dbbench ./cmd/dbbench
#   (cd bench/peers && go build -o /tmp/peerbench .)
# Then: OUT=/tmp/blobout scripts/blob-bench.sh
# Pebble's waitforcompaction did not return with value separation on (10
# minutes), so Pebble runs get SETTLE seconds (60) after overwrite, then are
# stopped (SIGTERM); RocksDB is Debian's db_bench 7.8.3, an assertion build.
set -u
OUT=${OUT:-/tmp/blobout}
DIR=${DIR:-/tmp/blobbench}
STRATA=/tmp/strata-dbbench
PEER=/tmp/peerbench
ROCKS=${ROCKS:-/usr/bin/db_bench}
SIZES=${SIZES:-"1024 4096 16384"}
CONFIGS=${CONFIGS:-"strata-off strata-on pebble-on rocksdb-on pebble-off"}
mkdir -p $OUT $DIR
common="-compression_type=none -key_size=16 -cache_size=8388608 -write_buffer_size=67108864"
for vs in $SIZES; do
  num=$((${BYTES:-1000000000} / (vs + 16)))
  reads=$((num / 5))
  for cfg in $CONFIGS; do
    db=$DIR/$cfg-$vs; rm -rf $db
    case $cfg in
      strata-off) w="$STRATA -db=$db"; r="$STRATA -db=$db -use_existing_db"; extra="" ; wb="fillrandom,overwrite,waitforcompaction,stats";;
      strata-on) w="$STRATA -db=$db"; r="$STRATA -db=$db -use_existing_db"; extra="-enable_blob_files -min_blob_size=512"; wb="fillrandom,overwrite,waitforcompaction,stats";;
      pebble-on) w="$PEER -engine=pebble -db=$db"; r="$PEER -engine=pebble -db=$db -use_existing_db"; extra="-enable_blob_files -min_blob_size=512"; wb="fillrandom,overwrite,stats,waitforcompaction";;
      pebble-off) w="$PEER -engine=pebble -db=$db"; r="$PEER -engine=pebble -db=$db -use_existing_db"; extra=""; wb="fillrandom,overwrite,stats,waitforcompaction";;
      rocksdb-on) w="$ROCKS -db=$db -statistics"; r="$ROCKS -db=$db -use_existing_db"; extra="-enable_blob_files=1 -min_blob_size=512"; wb="fillrandom,overwrite,waitforcompaction,stats";;
    esac
    tag=$cfg-$vs
    echo "== $(date +%T) $tag write: $w -benchmarks=$wb -num=$num -value_size=$vs $common $extra -seed=1" | tee -a $OUT/log
    case $cfg in
    pebble-*)
      # peerbench's waitforcompaction did not return with value separation
      # on (10 min): give Pebble SETTLE seconds after overwrite, then stop it.
      /usr/bin/time -v $w -benchmarks=$wb -num=$num -value_size=$vs $common $extra -seed=1 > $OUT/$tag.write.out 2>&1 &
      tp=$!
      while kill -0 $tp 2>/dev/null && ! grep -q '^overwrite ' $OUT/$tag.write.out; do sleep 1; done
      for i in $(seq 1 ${SETTLE:-60}); do kill -0 $tp 2>/dev/null || break; sleep 1; done
      kill -0 $tp 2>/dev/null && { echo "stopped after ${SETTLE:-60}s of settling" | tee -a $OUT/log; pkill -TERM -P $tp; }
      wait $tp;;
    *)
      /usr/bin/time -v $w -benchmarks=$wb -num=$num -value_size=$vs $common $extra -seed=1 > $OUT/$tag.write.out 2>&1;;
    esac
    grep -E "^(fillrandom|overwrite) |(strata|pebble).stats:|File system outputs|Maximum resident|Elapsed|Sum |rocksdb.(compact|flush).write.bytes|rocksdb.blobdb.blob.file.bytes.written|wal.bytes" $OUT/$tag.write.out | tee -a $OUT/log
    du -sm $db | tee -a $OUT/log
    case $cfg in strata-off|strata-on|pebble-on|rocksdb-on)
      echo "== $(date +%T) $tag read: $r -benchmarks=readrandom -num=$num -reads=$reads -value_size=$vs $common $extra -seed=2" | tee -a $OUT/log
      /usr/bin/time -v $r -benchmarks=readrandom -num=$num -reads=$reads -value_size=$vs $common $extra -seed=2 > $OUT/$tag.read.out 2>&1
      grep -E "^readrandom |Maximum resident" $OUT/$tag.read.out | tee -a $OUT/log;;
    esac
    rm -rf $db
  done
done
echo "== done $(date +%T)" | tee -a $OUT/log
