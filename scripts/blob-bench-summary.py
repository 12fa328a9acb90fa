#!/usr/bin/env python3
# The table of docs/benchmarks.md, "Blob files", from scripts/blob-bench.sh's
# output directory: python3 scripts/blob-bench-summary.py OUT (BYTES as the run).
import re, sys, glob, os
out = sys.argv[1] if len(sys.argv) > 1 else '/work/benchtmp/out'
def grab(p, pat, g=1, cast=float):
    try: s = open(p).read()
    except FileNotFoundError: return None
    m = re.search(pat, s, re.M)
    return cast(m.group(g)) if m else None
rows = []
for vs in (1024, 4096, 16384):
    for cfg in ('strata-off', 'strata-on', 'pebble-off', 'pebble-on', 'rocksdb-on'):
        w = f'{out}/{cfg}-{vs}.write.out'; r = f'{out}/{cfg}-{vs}.read.out'
        if not os.path.exists(w): continue
        num = int(os.environ.get('BYTES','1000000000')) // (vs + 16)
        fill = grab(w, r'^fillrandom\s+:.*?([\d.]+) MB/s')
        ow = grab(w, r'^overwrite\s+:.*?([\d.]+) MB/s')
        user = grab(w, r'user_bytes=(\d+)') or grab(w, r'rocksdb.wal.bytes COUNT : (\d+)')
        if user is None:
            user = 2 * num * (vs + 16 + 12 + 1 + 2 + (1 if vs < 128 else 2 if vs < 16384 else 3))
        fs = grab(w, r'File system outputs: (\d+)')
        wafs = (fs * 512 - user) / user if fs else None
        own = grab(w, r'(?:strata|pebble)\.stats: write_amp=([\d.]+)')
        if own is None and cfg.startswith('rocksdb'):
            fl = grab(w, r'rocksdb.flush.write.bytes COUNT : (\d+)') or 0
            co = grab(w, r'rocksdb.compact.write.bytes COUNT : (\d+)') or 0
            bl = grab(w, r'rocksdb.blobdb.blob.file.bytes.written COUNT : (\d+)') or 0
            own = (fl + co) / user if user else None  # flush.write.bytes includes the blob files
        rss = grab(w, r'Maximum resident set size \(kbytes\): (\d+)')
        el = grab(w, r'Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)', cast=str)
        rd = grab(r, r'^readrandom\s+:\s+([\d.]+) micros/op (\d+) ops/sec', 2)
        rrss = grab(r, r'Maximum resident set size \(kbytes\): (\d+)')
        f = lambda x, fmt: (fmt % x) if x is not None else '-'
        rows.append(f"| {vs} | {cfg} | {f(fill,'%.1f')} | {f(ow,'%.1f')} | {f(own,'%.2f')} | {f(wafs,'%.2f')} | {f(rss and rss/1024,'%.0f')} | {el or '-'} | {f(rd,'%d')} | {f(rrss and rrss/1024,'%.0f')} |")
print('| value | engine | fillrandom MB/s | overwrite MB/s | W-amp (engine) | W-amp (bytes written) | peak RSS MB | wall | readrandom ops/s | read RSS MB |')
print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
print('\n'.join(rows))
