#!/usr/bin/env python3
"""Summarizes a bench/ycsb/run.sh log as the markdown tables of
docs/benchmarks.md: ops/s (TOTAL p99 us) per workload, engine and thread
count; peak RSS; and the tails of the writes and scans.

usage: bench/ycsb/summarize.py LOG...

With REPS > 1, or several logs, each cell is the median over the runs (of
two, their mean); the error count is the largest of any run."""
import re
import statistics
import sys
from collections import defaultdict

KV = re.compile(r'(\S+)=(\S+)')


def parse(paths):
    results = defaultdict(list)  # (engine, threads, phase) -> [RESULT dict]
    ops = defaultdict(list)      # (engine, threads, phase, op) -> [op dict]
    rss = defaultdict(list)      # (engine, threads, after) -> [MB]
    pending = []
    lines = [l for p in paths for l in open(p)]
    for line in lines:
        if line.startswith('  ') and 'count=' in line:
            name = line.split()[0]
            d = dict(KV.findall(line))
            d['op'] = name
            pending.append(d)
        elif line.startswith('RESULT '):
            d = dict(KV.findall(line))
            key = (d['engine'], int(d['threads']), d['phase'])
            results[key].append(d)
            for o in pending:
                ops[key + (o['op'],)].append(o)
            pending = []
        elif line.startswith('RSS '):
            d = dict(KV.findall(line))
            rss[(d['engine'], int(d['threads']), d['after'])].append(float(d['peak_rss_mb']))
    return results, ops, rss


def med(xs):
    return statistics.median(xs)


def fmt_ops(x):
    return f'{x / 1000:.1f}K' if x >= 1000 else f'{x:.0f}'


def main():
    results, ops, rss = parse(sys.argv[1:])
    engines = []
    for (e, _, _) in results:
        if e not in engines:
            engines.append(e)
    threads = sorted({t for (_, t, _) in results})
    phases = ['load', 'a', 'b', 'c', 'd', 'e', 'f']
    names = {'load': 'load', 'a': 'A 50/50', 'b': 'B 95/5', 'c': 'C read only', 'd': 'D latest',
             'e': 'E scans', 'f': 'F read-modify-write'}
    for t in threads:
        print(f'\n{t} thread{"s" if t > 1 else ""}: ops/s (p99 of every call, us)\n')
        print('| workload | ' + ' | '.join(engines) + ' | Strata / best other |')
        print('|---|' + '--:|' * (len(engines) + 1))
        for p in phases:
            cells, rates = [], {}
            for e in engines:
                rs = results.get((e, t, p))
                if not rs:
                    cells.append('-')
                    continue
                r = med([float(x['ops_per_sec']) for x in rs])
                p99 = med([int(x['p99']) for x in rs])
                errs = max(int(x['errors']) for x in rs)
                rates[e] = r
                cells.append(f'{fmt_ops(r)} ({p99:.0f})' + (f' [{errs} err]' if errs else ''))
            others = [v for k, v in rates.items() if k != 'strata']
            ratio = f'{rates["strata"] / max(others):.2f}x' if 'strata' in rates and others else '-'
            # With several runs, each run's own ratio too: the spread
            # between them is the noise the medians hide.
            runs = [results.get((e, t, p), []) for e in engines]
            n = min(len(r) for r in runs)
            if ratio != '-' and n > 1:
                per = []
                for i in range(n):
                    ri = {e: float(results[(e, t, p)][i]['ops_per_sec']) for e in engines}
                    per.append(ri['strata'] / max(v for k, v in ri.items() if k != 'strata'))
                ratio += ' (' + ', '.join(f'{x:.2f}' for x in per) + ')'
            print(f'| {names[p]} | ' + ' | '.join(cells) + f' | {ratio} |')
    print('\npeak RSS, MB (after the load / at the end)\n')
    print('| threads | ' + ' | '.join(engines) + ' |')
    print('|---|' + '--:|' * len(engines))
    for t in threads:
        cells = []
        for e in engines:
            a, b = rss.get((e, t, 'load')), rss.get((e, t, 'all'))
            cells.append(f'{med(a):.0f} / {med(b):.0f}' if a and b else '-')
        print(f'| {t} | ' + ' | '.join(cells) + ' |')
    print('\ntails, us: p99 / p99.9 / p99.99 / max\n')
    print('| threads | phase | op | ' + ' | '.join(engines) + ' |')
    print('|---|---|---|' + '--:|' * len(engines))
    for t in threads:
        for p, op in [('load', 'INSERT'), ('a', 'UPDATE'), ('a', 'READ'), ('e', 'SCAN'), ('e', 'INSERT'),
                      ('f', 'READ_MODIFY_WRITE')]:
            cells = []
            for e in engines:
                os_ = ops.get((e, t, p, op))
                if not os_:
                    cells.append('-')
                    continue
                cells.append(' / '.join(f'{med([int(o[k]) for o in os_]):.0f}' for k in ('p99', 'p99.9', 'p99.99', 'max')))
            print(f'| {t} | {p} | {op} | ' + ' | '.join(cells) + ' |')


main()
