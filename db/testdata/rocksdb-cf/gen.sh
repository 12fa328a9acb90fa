#!/usr/bin/env bash
# Regenerates the RocksDB 7.8.3 column-family fixtures in this directory with
# Debian's rocksdb-tools 7.8.3 (/usr/bin/db_bench, /usr/bin/ldb). Not run by
# tests. Outputs are not byte-for-byte reproducible (DB identity, session ids,
# unique ids, file times differ per run); keys, values, family names and ids,
# file numbers and the split between tables and WAL are deterministic.
#   bash gen.sh            (WORK=/some/scratch bash gen.sh to keep the scratch)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${WORK:-$(mktemp -d)}"
rm -rf "$WORK"; mkdir -p "$WORK"

BENCH=(-key_size=16 -value_size=32 -write_buffer_size=65536
       -compression_type=none -disable_auto_compactions=true -threads=1)

# finish NAME SRC: copies the DB directory SRC (minus LOG*, LOCK) to
# NAME/db and records NAME/expected/ from scratch copies of it, so that
# NAME/db stays exactly as RocksDB left it (ldb's open replays and flushes
# the WAL into new tables).
finish() {
  local name="$1" src="$2" out="$HERE/$1" fams f c wal n
  rm -rf "$out"; mkdir -p "$out/db" "$out/expected"
  ( cd "$src" && for f in *; do case "$f" in LOG*|LOCK) ;; *) cp -p "$f" "$out/db/";; esac; done )
  local before; before=$(cd "$out/db" && sha256sum * )

  c="$WORK/$name-copy"; rm -rf "$c"; mkdir -p "$c"; cp -rp "$out/db" "$c/db"
  ( cd "$c" && ldb --db=db list_column_families ) > "$out/expected/families.txt"
  fams=$(sed -n 's/^{\(.*\)}$/\1/p' "$out/expected/families.txt" | tr -d ' ' | tr ',' ' ')
  for f in $fams; do
    rm -rf "$c"; mkdir -p "$c"; cp -rp "$out/db" "$c/db"
    ldb --db="$c/db" --column_family="$f" scan --hex > "$out/expected/$f.scan"
  done

  rm -rf "$c"; mkdir -p "$c"; cp -rp "$out/db" "$c/db"
  ( cd "$c" && ldb manifest_dump --path="$(ls db/MANIFEST-*)" --verbose --hex ) \
    | awk '!/^--- level ([7-9]|[1-9][0-9]) ---/' > "$out/expected/manifest_dump.txt"
  for wal in $(cd "$c/db" && ls *.log 2>/dev/null); do
    ( cd "$c" && ldb dump_wal --walfile="db/$wal" --header --print_value ) > "$WORK/wal.txt"
    n=$(($(wc -l < "$WORK/wal.txt") - 1))
    { echo "# ldb dump_wal --walfile=db/$wal --header --print_value"
      echo "# records=$n sha256_of_full_output=$(sha256sum < "$WORK/wal.txt" | cut -d' ' -f1)"
      echo "# ops by type(column family id):"
      tail -n +2 "$WORK/wal.txt" | grep -o -E '(PUT|DELETE|SINGLE_DELETE|MERGE|DELETE_RANGE)(\([0-9]+\))?' \
        | sort | uniq -c | sed 's/^/#   /'
      if [ "$n" -le 60 ]; then cat "$WORK/wal.txt"; else
        head -n 21 "$WORK/wal.txt"; echo "... ($((n-30)) records omitted) ..."; tail -n 10 "$WORK/wal.txt"; fi
    } > "$out/expected/${wal%.log}.dump_wal.txt"
  done
  rm -rf "$c"

  [ "$before" = "$(cd "$out/db" && sha256sum *)" ] || { echo "$name/db changed" >&2; exit 1; }
}

# 1. dbbench4: four families; one L0 table per family (the `flush`
# benchmark flushes every family) and a second round of writes only in the WAL
# (RocksDB does not flush at close when the WAL is on).
db_bench -benchmarks=fillrandom,flush,overwrite -num_column_families=4 -num=2000 \
  -seed=11 "${BENCH[@]}" -db="$WORK/dbbench4" > "$WORK/dbbench4.out" 2>&1
finish dbbench4 "$WORK/dbbench4"

# 2. ldb_created: every ldb command opens the DB, which replays the previous
# command's WAL into one L0 table per family with data, and leaves its own
# writes in a new WAL.
L=(ldb --db="$WORK/ldb_created")
"${L[@]}" --create_if_missing --compression_type=no batchput d1 v1 d2 v2 d3 v3
"${L[@]}" create_column_family cf_a
"${L[@]}" create_column_family cf_b
"${L[@]}" --column_family=cf_a batchput a1 va1 a2 va2
"${L[@]}" --column_family=cf_b batchput b1 vb1 b2 vb2 b3 vb3
"${L[@]}" --column_family=cf_b delete b2
"${L[@]}" delete d2
"${L[@]}" drop_column_family cf_a
"${L[@]}" create_column_family cf_c
"${L[@]}" --column_family=cf_b put b4 vb4
"${L[@]}" --column_family=cf_c batchput c1 vc1 c2 vc2
"${L[@]}" --column_family=cf_c delete c1
finish ldb_created "$WORK/ldb_created"

# 2b. ldb_noflush: the same commands with avoid_flush_during_recovery=true, so
# no open flushes anything: no table at all, one WAL per writing command, and
# cf_a's records (family 1, dropped) stay in a live WAL. ldb has no flag for
# that option, but it loads the DB's newest OPTIONS file, so that file is
# edited once after the first command; every later OPTIONS file is RocksDB's
# own. Two extra commands at the end put into a family cf_tmp (id 4) and drop
# it in the last session, so the newest MANIFEST holds a ColumnFamilyDrop
# (ldb_created's MANIFEST only shows cf_a's drop as max_column_family=3: every
# open writes a new MANIFEST from a snapshot of the live families).
L=(ldb --db="$WORK/ldb_noflush")
"${L[@]}" --create_if_missing --compression_type=no batchput d1 v1 d2 v2 d3 v3
sed -i 's/^  avoid_flush_during_recovery=false/  avoid_flush_during_recovery=true/' \
  "$(ls "$WORK"/ldb_noflush/OPTIONS-* | sort | tail -n 1)"
"${L[@]}" create_column_family cf_a
"${L[@]}" create_column_family cf_b
"${L[@]}" --column_family=cf_a batchput a1 va1 a2 va2
"${L[@]}" --column_family=cf_b batchput b1 vb1 b2 vb2 b3 vb3
"${L[@]}" --column_family=cf_b delete b2
"${L[@]}" delete d2
"${L[@]}" drop_column_family cf_a
"${L[@]}" create_column_family cf_c
"${L[@]}" --column_family=cf_b put b4 vb4
"${L[@]}" --column_family=cf_c batchput c1 vc1 c2 vc2
"${L[@]}" --column_family=cf_c delete c1
"${L[@]}" create_column_family cf_tmp
"${L[@]}" --column_family=cf_tmp put t1 vt1
"${L[@]}" drop_column_family cf_tmp
finish ldb_noflush "$WORK/ldb_noflush"

# 3. wal_only: four families, no table at all: every write is only in the WAL.
db_bench -benchmarks=fillrandom -num_column_families=4 -num=500 \
  -seed=17 "${BENCH[@]}" -db="$WORK/wal_only" > "$WORK/wal_only.out" 2>&1
finish wal_only "$WORK/wal_only"

# 4. atomic_flush: db_bench has no -atomic_flush flag; it takes the options
# from an OPTIONS file instead (dbbench4's, with atomic_flush=true and
# enable_pipelined_write=false, which atomic_flush requires). The `flush`
# benchmark then flushes the four families as one MANIFEST atomic group.
sed -e 's/^  atomic_flush=false/  atomic_flush=true/' \
    -e 's/^  enable_pipelined_write=true/  enable_pipelined_write=false/' \
    "$(ls "$WORK"/dbbench4/OPTIONS-* | sort | tail -n 1)" > "$WORK/atomic.ini"
db_bench -benchmarks=fillrandom,flush,overwrite -options_file="$WORK/atomic.ini" \
  -num_column_families=4 -num=1000 -key_size=16 -value_size=32 -seed=13 -threads=1 \
  -db="$WORK/atomic_flush" > "$WORK/atomic_flush.out" 2>&1
finish atomic_flush "$WORK/atomic_flush"

ldb --version
echo "done; scratch in $WORK"
