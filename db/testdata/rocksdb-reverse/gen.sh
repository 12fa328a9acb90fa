#!/usr/bin/env bash
# Regenerates the reverse-comparator fixture in this directory: a database
# ordered by rocksdb.ReverseBytewiseComparator whose tables, MANIFEST and
# WAL RocksDB 7.8.3 (Debian rocksdb-tools' ldb) wrote. Not run by tests.
#
# ldb has no --comparator flag, but --try_load_options (its default for an
# existing database) builds the options from the OPTIONS file in the
# directory, and RocksDB resolves comparator=rocksdb.ReverseBytewiseComparator
# by name. So Strata creates the empty database (MANIFEST, OPTIONS naming the
# reverse comparator, an empty WAL) and ldb writes everything else:
#   MKREV=/path/to/binary bash gen.sh
# where MKREV opens DIR with db.Options{CreateIfMissing: true,
# Comparer: db.ReverseBytewiseComparer()} and closes it (see README.md).
# Outputs are not byte-for-byte reproducible (identities, session ids, file
# times); keys, values and the split between tables and the WAL are.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
WORK="${WORK:-$(mktemp -d)}"
DB="$WORK/db"
rm -rf "$DB"
"${MKREV:?set MKREV to the program that creates the empty reverse database}" "$DB"
L=(ldb --db="$DB" --try_load_options)

# 300 keys, then a second version of every third one: ldb load reads
# "key ==> value" lines into the WAL.
for i in $(seq 0 299); do printf 'key%04d ==> value-%d-%s\n' "$i" "$i" "$(printf '%*s' $((i % 17)) '' | tr ' ' x)"; done > "$WORK/load1"
"${L[@]}" load < "$WORK/load1"
# The open of compact replays that WAL into an L0 table; compact then
# rewrites the range (one level of tables).
"${L[@]}" compact
for i in $(seq 0 3 299); do printf 'key%04d ==> second-%d\n' "$i" "$i"; done > "$WORK/load2"
"${L[@]}" load < "$WORK/load2"
"${L[@]}" delete key0007
"${L[@]}" delete key0100
# In reverse order key0150 sorts before key0140: the range holds
# key0149 down to key0141 and key0150 itself (its start), not key0140.
"${L[@]}" deleterange key0150 key0140
"${L[@]}" batchput key0500 five-hundred key0001 one-again a-first-key zzz
# Left in the WAL: this open flushes the previous WAL into a second table,
# and these writes stay in the new WAL.
"${L[@]}" delete key0299
"${L[@]}" batchput zz-last-in-wal wal-value key0010 in-the-wal key0298 also-in-the-wal

rm -rf "$HERE/db"; mkdir -p "$HERE/db"
( cd "$DB" && for f in *; do case "$f" in LOG*|LOCK) ;; *) cp -p "$f" "$HERE/db/";; esac; done )
# The expected scan, from a copy (ldb's open flushes the WAL).
C="$WORK/copy"; rm -rf "$C"; cp -rp "$HERE/db" "$C"
ldb --db="$C" --try_load_options scan --hex > "$HERE/ldb-scan-hex.expected"
ls -l "$HERE/db"
wc -l "$HERE/ldb-scan-hex.expected"
