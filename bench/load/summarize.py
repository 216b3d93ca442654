#!/usr/bin/env python3
"""Print the result table of a bench/load/run.sh results file (JSON lines).

Usage: bench/load/summarize.py RESULTS.jsonl
"""
import json
import sys


def result(point):
    """The client's figures: wrk's (WRK_RESULT) or gpuadmit_load's (LOAD_RESULT)."""
    return point.get("wrk") or point["load"]


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    meta, points = {}, []
    with open(sys.argv[1]) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            d = json.loads(line)
            if d.get("kind") == "meta":
                meta = d
            elif d.get("kind") == "point":
                points.append(d)
    if not points:
        print("no measured points", file=sys.stderr)
        return 1

    if meta:
        print(f"machine: {meta.get('nproc')} CPUs, {meta.get('cpu_model')}; "
              f"{meta.get('duration_s')} s per point; client {meta.get('client', 'wrk')}")
    print(f"{'server':<9} {'conc':<5} {'req/s':>9} {'p50_ms':>8} {'p99_ms':>8} "
          f"{'max_ms':>8} {'errors':>7}")
    by = {}
    for p in points:
        w = result(p)
        lat = w["latency_us"]
        e = w["errors"]
        by[(p["server"], p["conc"])] = p
        detail = ""
        if e["total"]:
            detail = (f"  (connect {e['connect']} read {e['read']} write {e['write']} "
                      f"timeout {e['timeout']} non2xx {e['non2xx']})")
        print(f"{p['server']:<9} {p['conc']:<5} {w['rps']:>9.0f} {lat['p50'] / 1e3:>8.3f} "
              f"{lat['p99'] / 1e3:>8.3f} {lat['max'] / 1e3:>8.3f} {e['total']:>7}{detail}")

    concs = sorted({p["conc"] for p in points})
    pairs = [c for c in concs if ("nginx", c) in by and ("gpuadmit", c) in by]
    if pairs:
        def ratio(c, get):
            g, n = get(result(by[("gpuadmit", c)])), get(result(by[("nginx", c)]))
            if not n:
                return f"c={c} n/a"
            r = g / n
            return f"c={c} {r:.2f}" if r >= 0.1 else f"c={c} {r:.2g}"
        print()
        print("ratio gpuadmit/nginx throughput: "
              + "  ".join(ratio(c, lambda w: w["rps"]) for c in pairs))
        print("ratio gpuadmit/nginx p50 latency: "
              + "  ".join(ratio(c, lambda w: w["latency_us"]["p50"]) for c in pairs))
        print("ratio gpuadmit/nginx p99 latency: "
              + "  ".join(ratio(c, lambda w: w["latency_us"]["p99"]) for c in pairs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
