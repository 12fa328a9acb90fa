#!/usr/bin/env python3
"""Medians of scripts/side-by-side.sh output: ops/sec and peak RSS per
engine and run, and the Strata/Pebble ratio of the medians.
Usage: scripts/side-by-side-summary.py < /tmp/sbs.txt"""
import re
import statistics
import sys
from collections import defaultdict

ops = defaultdict(list)   # (engine, label, bench) -> [ops/sec]
rss = defaultdict(list)   # (engine, label) -> [MB]
order = []
for line in sys.stdin:
    f = line.split()
    if len(f) < 3:
        continue
    eng, label = f[0], f[1]
    m = re.search(r"maxrss_kb=(\d+)", line)
    if m:
        rss[(eng, label)].append(int(m.group(1)) / 1000)
        continue
    m = re.match(r"(\S+)\s*:\s*[\d.]+ micros/op (\d+) ops/sec", " ".join(f[2:]))
    if m:
        key = (label, m.group(1))
        if key not in order:
            order.append(key)
        ops[(eng,) + key].append(int(m.group(2)))

rocks = any(k[0] == "rocksdb" for k in ops)
print("| run | benchmark | Strata ops/s | Pebble ops/s | Strata / Pebble | peak RSS MB, Strata vs Pebble |"
      + (" RocksDB ops/s | Strata / RocksDB |" if rocks else ""))
print("|---|---|--:|--:|--:|--:|" + ("--:|--:|" if rocks else ""))
for label, bench in order:
    s, p = ops.get(("strata", label, bench)), ops.get(("pebble", label, bench))
    if not s or not p:
        continue
    ms, mp = statistics.median(s), statistics.median(p)
    rs, rp = rss.get(("strata", label)), rss.get(("pebble", label))
    r = f"{statistics.median(rs):.0f} vs {statistics.median(rp):.0f}" if rs and rp else ""
    extra = ""
    if rocks:
        k = ops.get(("rocksdb", label, bench))
        extra = f" {statistics.median(k):,.0f} | {ms / statistics.median(k):.2f}x |" if k else " | |"
    print(f"| {label} | {bench} | {ms:,.0f} | {mp:,.0f} | {ms / mp:.2f}x | {r} |" + extra)
