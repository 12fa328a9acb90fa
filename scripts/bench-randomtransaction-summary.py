#!/usr/bin/env python3
"""Medians of scripts/bench-randomtransaction.sh's output (stdin): ops/s and
aborts per tool, kind and thread count, as a Markdown table. A run that did
not finish (a crash, an assertion) counts as failed and names its error."""
import re
import statistics
import sys

runs = {}  # (kind, threads, tool) -> list of (ops, aborts0, aborts_all) or error
cur = None
for line in sys.stdin:
    m = re.match(r"## rep=\d+ tool=(\w+) kind=-(\w+) threads=(\d+)", line)
    if m:
        cur = (m.group(2), int(m.group(3)), m.group(1))
        runs.setdefault(cur, []).append({"err": None})
        continue
    if cur is None:
        continue
    r = runs[cur][-1]
    m = re.search(r"randomtransaction :.* (\d+) ops/sec .*transactions:(\d+) aborts:(\d+)", line)
    if m:
        r["ops"], r["aborts0"] = int(m.group(1)), int(m.group(3))
    m = re.search(r"all threads: transactions:(\d+) aborts:(\d+)", line)
    if m:
        r["aborts_all"], r["txns_all"] = int(m.group(2)), int(m.group(1))
    if "Verify Success" in line:
        r["ok"] = True
    if "Assertion" in line or "Segmentation" in line or "FAILED" in line:
        r["err"] = line.strip()[-100:]
    m = re.match(r"rc=(\d+)", line)
    if m:
        r["rc"] = int(m.group(1))

print("| kind | threads | Strata ops/s | db_bench ops/s | Strata aborts (thread 0 / all) | db_bench aborts (thread 0) | runs ok (Strata, db_bench) |")
print("|---|---|---|---|---|---|---|")
for kind in ("optimistic_transaction_db", "transaction_db"):
    for threads in (1, 4):
        cells = []
        oks = []
        for tool in ("strata", "rocksdb"):
            rs = runs.get((kind, threads, tool), [])
            good = [r for r in rs if r.get("rc") == 0 and r.get("ok") and "ops" in r]
            oks.append(f"{len(good)}/{len(rs)}")
            if good:
                ops = statistics.median(r["ops"] for r in good)
                a0 = statistics.median(r["aborts0"] for r in good)
                aa = statistics.median(r.get("aborts_all", r["aborts0"]) for r in good)
                cells.append((f"{ops:.0f}", f"{a0:.0f} / {aa:.0f}" if tool == "strata" else f"{a0:.0f}"))
            else:
                errs = sorted({(r.get("err") or f"rc={r.get('rc')}") for r in rs})
                cells.append(("failed: " + "; ".join(errs), "—"))
        print(f"| {kind} | {threads} | {cells[0][0]} | {cells[1][0]} | {cells[0][1]} | {cells[1][1]} | {oks[0]}, {oks[1]} |")
