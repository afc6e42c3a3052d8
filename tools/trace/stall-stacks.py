#!/usr/bin/env python3
"""stall-stacks.py -- where a loop's slow callbacks spent their time: joins the callbacks
tools/trace/stalls.bt printed (start and end in CLOCK_MONOTONIC ns) with the stacks of
`perf record -k CLOCK_MONOTONIC --call-graph dwarf` taken on the loop's thread, and
prints, per callback function and message type, the functions on the stacks of the
samples that fell inside those callbacks (inclusive, as a share of the samples).

    sudo tools/trace/stalls.bt build/controller/coord-controller $PID > stalls.txt &
    sudo perf record -k CLOCK_MONOTONIC -F 999 --call-graph dwarf,32768 -t $PID \\
        -o perf.data -- sleep 20
    perf script -i perf.data -F tid,time,ip,sym > perf.txt
    tools/trace/stall-stacks.py perf.txt stalls.txt [TOP]

The loop thread of each daemon is its main thread (tid = pid).  docs/operations.md,
"What holds a loop".
"""
import bisect
import collections
import re
import sys

LINE = re.compile(r"pid (\d+): callback (\S+) ran (\d+) us: on-CPU (-?\d+) us.*largest type (\d+) .*"
                  r"start (\d+) end (\d+)")


def samples(path):
    """{tid: [(seconds, [frame, ...] leaf first), ...]} of `perf script -F tid,time,ip,sym`."""
    out, cur = collections.defaultdict(list), None
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            m = re.match(r"\s*(\d+)\s+([\d.]+):", line)
            if m:
                cur = (float(m.group(2)), [])
                out[int(m.group(1))].append(cur)
            elif cur:
                parts = line.split(None, 1)
                if len(parts) == 2:
                    cur[1].append(parts[1].strip().split(" (")[0])
    for v in out.values():
        v.sort()
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: stall-stacks.py PERF_SCRIPT_OUTPUT STALLS_BT_OUTPUT [TOP]")
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    smp = samples(sys.argv[1])
    times = {tid: [t for t, _ in v] for tid, v in smp.items()}
    frames = collections.defaultdict(collections.Counter)
    n_samples, oncpu, count = collections.Counter(), collections.Counter(), collections.Counter()
    with open(sys.argv[2]) as f:
        for line in f:
            m = LINE.search(line)
            if not m:
                continue
            tid = int(m.group(1))      # the loop's thread is the main one
            key = "%s %s type %s" % (tid, m.group(2), m.group(5))
            start, end = int(m.group(6)) / 1e9, int(m.group(7)) / 1e9
            count[key] += 1
            oncpu[key] += int(m.group(4))
            for t, stack in smp[tid][bisect.bisect_left(times.get(tid, []), start):]:
                if t > end:
                    break
                n_samples[key] += 1
                for fn in set(stack):
                    frames[key][fn] += 1
    for key, _ in oncpu.most_common():
        print("== %s: %d callbacks, %.1f ms on-CPU, %d samples" %
              (key, count[key], oncpu[key] / 1e3, n_samples[key]))
        for fn, n in frames[key].most_common(top):
            print("  %5.1f%%  %s" % (100.0 * n / max(n_samples[key], 1), fn[:100]))


if __name__ == "__main__":
    main()
