#!/bin/bash
# Remakes the RocksDB 7.8.3 integrated-BlobDB fixtures of this directory with
# Debian's rocksdb-tools (db_bench, ldb). Not run by tests.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
WORK=${WORK:-$(mktemp -d)}
mk() { # shape, db_bench args...
	local shape=$1; shift
	rm -rf "$WORK/$shape" "$here/$shape"
	mkdir -p "$WORK/$shape" "$here/$shape/expected"
	db_bench -db="$WORK/$shape/db" -seed=1 -threads=1 -num=2000 \
		-enable_blob_files=1 -min_blob_size=1024 "$@" >/dev/null 2>&1
	rm -f "$WORK/$shape/db/LOCK" "$WORK/$shape/db"/LOG*
	cp -r "$WORK/$shape/db" "$here/$shape/db"
	rm -rf "$WORK/$shape/copy"; cp -r "$here/$shape/db" "$WORK/$shape/copy"
	# The values are too large to keep in hex: each line keeps the key, the
	# value's length and its SHA-256.
	ldb --db="$WORK/$shape/copy" scan --hex | while read -r k _ v; do
		h=${v#0x}
		printf '%s %d %s\n' "$k" $((${#h} / 2)) "$(printf '%s' "$h" | xxd -r -p | sha256sum | cut -d' ' -f1)"
	done > "$here/$shape/expected/scan.txt"
	rm -rf "$WORK/$shape/copy"; cp -r "$here/$shape/db" "$WORK/$shape/copy"
	ldb manifest_dump --path="$(ls "$WORK/$shape/copy"/MANIFEST-*)" --verbose --hex |
		grep -v -e '^--- level \([7-9]\|[1-6][0-9]\) ---' > "$here/$shape/expected/manifest_dump.txt"
}
# fill: one fillrandom of 1000 fixed 2000-byte values, no compression; two
# flushes, no compaction; the last part is in the WAL.
mk fill -benchmarks=fillrandom -num=1000 -value_size=2000 -compression_type=none \
	-blob_compression_type=none -write_buffer_size=1048576 -blob_file_size=2097152
# mixed: values of 100-3000 bytes (about a third stay inline), fillrandom then
# overwrite, snappy tables and blobs, small memtables and blob files, L0
# trigger 2 and blob GC (age cutoff 0.5), so the MANIFEST holds blob file
# additions, garbage records and compactions that relocated blobs.
mk mixed -benchmarks=fillrandom,overwrite -value_size_distribution_type=uniform \
	-value_size_min=100 -value_size_max=3000 -compression_type=snappy \
	-blob_compression_type=snappy -write_buffer_size=262144 -blob_file_size=524288 \
	-enable_blob_garbage_collection=1 -blob_garbage_collection_age_cutoff=0.5 \
	-level0_file_num_compaction_trigger=2 -max_bytes_for_level_base=1048576 \
	-target_file_size_base=262144
