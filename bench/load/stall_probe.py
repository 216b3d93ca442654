#!/usr/bin/env python3
"""How long this machine keeps a runnable thread waiting, per vCPU: the floor under any
server's p99.9 here.

One probe process pinned to each vCPU sleeps 200 us at a time for --duration seconds and
records every wake-up later than --gap-ms. Meanwhile the CPU time of the kernel's DAMON
threads (kdamond, which a host may set to page memory out) is sampled every 0.5 ms, so each
gap can be matched with a kdamond run on the same vCPU. Run it with nothing else busy: it
measures the machine, not a server.

  bench/load/stall_probe.py [--duration 10] [--gap-ms 0.8]
"""

import argparse
import glob
import multiprocessing
import os
import time


def probe(cpu, duration, gap_s, out):
    os.sched_setaffinity(0, {cpu})
    gaps = []
    start = last = time.monotonic()
    while last - start < duration:
        time.sleep(0.0002)
        now = time.monotonic()
        if now - last > gap_s:
            gaps.append((last, now - last))
        last = now
    out.put((cpu, gaps))


def kdamond_pids():
    pids = []
    for comm in glob.glob("/proc/[0-9]*/comm"):
        try:
            with open(comm) as f:
                if f.read().startswith("kdamond"):
                    pids.append(comm.split("/")[2])
        except OSError:
            pass
    return pids


def sample_kdamond(pids, duration):
    """(time, ms of CPU since the last sample, vCPU) for every sample in which one ran."""

    def read(pid):
        with open(f"/proc/{pid}/schedstat") as f:
            runtime = int(f.read().split()[0])
        with open(f"/proc/{pid}/stat") as f:
            cpu = int(f.read().rsplit(")", 1)[1].split()[36])
        return runtime, cpu

    runs = []
    last = {pid: read(pid)[0] for pid in pids}
    start = time.monotonic()
    while time.monotonic() - start < duration:
        time.sleep(0.0005)
        for pid in pids:
            runtime, cpu = read(pid)
            if runtime != last[pid]:
                runs.append((time.monotonic(), (runtime - last[pid]) / 1e6, cpu))
                last[pid] = runtime
    return runs


def damon_schemes():
    lines = []
    for scheme in sorted(glob.glob("/sys/kernel/mm/damon/admin/kdamonds/*/contexts/*/schemes/*")):
        try:
            action = open(f"{scheme}/action").read().strip()
            quota_ms = open(f"{scheme}/quotas/ms").read().strip()
            quota_bytes = open(f"{scheme}/quotas/bytes").read().strip()
            reset_ms = open(f"{scheme}/quotas/reset_interval_ms").read().strip()
        except OSError:
            continue
        lines.append(f"{action}, up to {quota_ms} ms of CPU and {quota_bytes} bytes "
                     f"every {reset_ms} ms")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=10, help="seconds (default 10)")
    parser.add_argument("--gap-ms", type=float, default=0.8,
                        help="report wake-ups later than this (default 0.8 ms)")
    args = parser.parse_args()

    cpus = sorted(os.sched_getaffinity(0))
    queue = multiprocessing.Queue()
    probes = [multiprocessing.Process(target=probe,
                                      args=(cpu, args.duration, args.gap_ms / 1000, queue))
              for cpu in cpus]
    for p in probes:
        p.start()
    pids = kdamond_pids()
    runs = sample_kdamond(pids, args.duration + 0.2) if pids else []
    results = dict(queue.get() for _ in probes)
    for p in probes:
        p.join()

    print(f"{args.duration:g} s, {len(cpus)} vCPUs, wake-ups later than {args.gap_ms:g} ms")
    for line in damon_schemes():
        print(f"DAMON scheme: {line}")
    if pids:
        ms = sum(r[1] for r in runs)
        print(f"kdamond: {ms:.1f} ms of CPU in {args.duration:g} s")
    for cpu in cpus:
        gaps = results[cpu]
        with_kdamond = [g for g in gaps
                        if any(r[2] == cpu and g[0] - 0.002 <= r[0] <= g[0] + g[1] + 0.003
                               for r in runs)]
        sizes = [g[1] * 1000 for g in gaps]
        buckets = [sum(1 for s in sizes if lo < s <= hi)
                   for lo, hi in ((0, 1.5), (1.5, 3), (3, float("inf")))]
        print(f"vCPU {cpu}: {len(gaps)} late wake-ups ({len(gaps) / args.duration:.1f}/s): "
              f"{buckets[0]} up to 1.5 ms, {buckets[1]} 1.5-3 ms, {buckets[2]} over 3 ms; "
              f"longest {max(sizes, default=0):.1f} ms; {len(with_kdamond)} while kdamond ran "
              f"on this vCPU")


if __name__ == "__main__":
    main()
