#!/usr/bin/env python3
# Medians [min-max] per value size and engine of scripts/blob-write-bench.sh's
# results.tsv files: MB/s of fillrandom and overwrite, peak RSS (MB of
# 1048576 bytes) and CPU seconds (user + system).
# Usage: scripts/blob-write-bench-summary.py OUT/results.tsv [more.tsv...]
import sys,statistics as st,collections
rows=collections.defaultdict(list)
for f in sys.argv[1:]:
    for l in open(f):
        p=l.split('\t')
        if len(p)<8 or not p[3]: continue
        rows[(p[1],p[0])].append((float(p[3]),float(p[4]),int(p[5])/1024,float(p[6])+float(p[7])))
for (vs,cfg),r in sorted(rows.items(), key=lambda x:(int(x[0][0]),x[0][1])):
    med=lambda i: st.median([x[i] for x in r])
    rng=lambda i: "%.1f-%.1f"%(min(x[i] for x in r),max(x[i] for x in r))
    print(f"{vs}\t{cfg}\tn={len(r)}\tfill {med(0):.1f} [{rng(0)}]\tow {med(1):.1f} [{rng(1)}]\trss {med(2):.0f}\tcpu {med(3):.2f} [{rng(3)}]")
