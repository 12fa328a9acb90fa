#!/usr/bin/env python3
"""Where writers spend time off CPU, from a Go execution trace.

    dbbench -benchmarks=fillrandom ... -histogram -trace=run.trace
    go tool trace -d=parsed run.trace > run.parsed
    scripts/trace-offcpu.py run.parsed [-threads N] [-min_us 100] [-top 20]

The writers are the N goroutines (the benchmark's threads) whose state
transitions most often have DB.write on their stack. For each interval in
which one of them was not running (Running -> Waiting, Runnable or Syscall,
and back) the script records its length, the reason the trace gives and the
innermost Strata frames of the stack it left from; it prints the longest
intervals and, for those of at least -min_us microseconds, the count and
total time by (state, reason, innermost frame). A long interval in Waiting
is the writer blocked on something; in Runnable it was preempted and waited
for a CPU; in Syscall it was in the kernel (and, past ~20 us, lost its P).
"""
import argparse, collections, re

ap = argparse.ArgumentParser()
ap.add_argument('parsed')
ap.add_argument('-threads', type=int, default=1)
ap.add_argument('-min_us', type=float, default=100)
ap.add_argument('-top', type=int, default=20)
ap.add_argument('-mark', default='strata/db.(*DB).write')
a = ap.parse_args()

hdr = re.compile(r'^M=(-?\d+) P=(-?\d+) G=(-?\d+) (\w+) Time=(\d+)(.*)$')
tr = re.compile(r'GoID=(\d+) (\w+)->(\w+) Reason="([^"]*)"')

def events():
    """Yields (time, goid, from, to, reason, transition-stack frames)."""
    cur = None
    for line in open(a.parsed):
        m = hdr.match(line)
        if m:
            if cur:
                yield cur
            cur = None
            if m.group(4) == 'StateTransition':
                x = tr.search(m.group(6))
                if x:
                    cur = [int(m.group(5)), int(x.group(1)), x.group(2), x.group(3), x.group(4), [], False]
            continue
        if cur is None:
            continue
        if line.startswith('TransitionStack='):
            cur[6] = True
        elif line.startswith('Stack='):
            cur[6] = False
        elif cur[6] and line.startswith('\t') and not line.startswith('\t\t'):
            cur[5].append(line.strip().split(' @ ')[0])
    if cur:
        yield cur

count = collections.Counter()
for t, g, fr, to, reason, frames, _ in events():
    if any(a.mark in f for f in frames):
        count[g] += 1
writers = {g for g, _ in count.most_common(a.threads)}
print('writer goroutines:', sorted(writers))

t0 = None
off, gaps = {}, []
for t, g, fr, to, reason, frames, _ in events():
    t0 = t if t0 is None else t0
    if g not in writers:
        continue
    if fr == 'Running' and to != 'Running':
        fs = [f.replace('github.com/stratadb/strata/', '') for f in frames if 'stratadb' in f][:5] or frames[:3]
        off[g] = (t, to, reason, fs)
    elif to == 'Running' and g in off:
        s, st, reason, fs = off.pop(g)
        gaps.append(((t - s) / 1e3, (s - t0) / 1e6, g, st, reason, fs))
gaps.sort(reverse=True)
print('longest intervals off CPU (us, at ms, goroutine, state, reason, frames):')
for d, at, g, st, reason, fs in gaps[:a.top]:
    print('%9.0f %9.1f G%d %s %r | %s' % (d, at, g, st, reason, ' < '.join(fs)))
agg = collections.defaultdict(lambda: [0, 0.0])
for d, at, g, st, reason, fs in gaps:
    if d >= a.min_us:
        k = (st, reason, fs[0] if fs else '')
        agg[k][0] += 1
        agg[k][1] += d
print('intervals >= %g us by cause (count, total ms, state, reason, innermost frame):' % a.min_us)
for k, v in sorted(agg.items(), key=lambda kv: -kv[1][1])[:a.top]:
    print('%6d %9.1f  %s %r %s' % (v[0], v[1] / 1e3, k[0], k[1], k[2]))
