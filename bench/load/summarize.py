#!/usr/bin/env python3
"""Print the result table of a bench/load/run.sh results file (JSON lines).

Closed-loop points (run.sh --conc) print by concurrency with the gpuadmit/nginx ratios of
throughput, p50 and p99; open-loop points (run.sh --rate) by rate with the achieved rate,
p50/p99/p99.9/max and the gpuadmit/nginx ratios of p50, p99 and p99.9, against the issue's
target (p99 and p99.9 within 1.25x of nginx's); with several rounds per rate (run.sh --rounds),
every round's ratio, their median, a verdict on the medians and how many rounds met the target
on their own. Where gpuadmit_load read the servers' CPU time (--server-pid), either table has a
cpu_us column, the server's CPU time per request, and its gpuadmit/nginx ratio; where it read the
host's steal, the open-loop tables have a steal% column (the windows' mean, when pooled): a round
whose tail the hypervisor made shows it there, and with several rounds a "calm rounds" line gives
the ratios of the rounds where both windows had less than CALM_STEAL_PCT of steal. The controls of
run.sh --controls (gpuadmit:no-plan, gpuadmit:no-review) get the same ratios to nginx and the
same verdict, so the table says how much of gpuadmit's tail its decisions cost. With several
rounds, the "pooled" lines run.sh adds (every round's latencies of a server and rate, percentiles
taken once) get a table, their ratios to nginx and the same verdict.

Usage: bench/load/summarize.py RESULTS.jsonl
"""
import json
import statistics
import sys

# The open-loop target: gpuadmit's p99 and p99.9 within 1.25x of nginx's at the same rate.
OPEN_LOOP_TARGET = 1.25

# gpuadmit_load's figure for the server's CPU time per request (with --server-pid).
CPU = "server_cpu_us_per_request"

# gpuadmit_load's share of the machine's CPU time the hypervisor stole during the window.
STEAL = "steal_pct"

# A round is calm when the hypervisor stole less than this share of the CPU time in both servers'
# windows. On the project's VM a window's p99 follows its steal (docs/performance.md): the calm
# rounds are those whose tail is the servers' own.
CALM_STEAL_PCT = 1.0

# run.sh --controls: the same gpuadmit answering a pod with nothing to plan, and a path it
# answers 404 without reading the body as a review (whose 404s are what it measures).
CONTROLS = ("gpuadmit:no-plan", "gpuadmit:no-review")


def meets(p99_ratio, p999_ratio):
    """The target: p99 and p99.9 both within OPEN_LOOP_TARGET of nginx's."""
    return p99_ratio <= OPEN_LOOP_TARGET and p999_ratio <= OPEN_LOOP_TARGET


def target_label(server):
    """How a verdict line names what it judges: gpuadmit's target, or a control against it."""
    return "target" if server == "gpuadmit" else f"{server} against the target"


def result(point):
    """The client's figures: wrk's (WRK_RESULT) or gpuadmit_load's (LOAD_RESULT)."""
    return point.get("wrk") or point["load"]


def ratio_text(key, g, n):
    """KEY g/n, to two decimals (two significant digits below 0.1)."""
    if not n:
        return f"{key} n/a"
    r = g / n
    return f"{key} {r:.2f}" if r >= 0.1 else f"{key} {r:.2g}"


def cpu_cell(w):
    """The cpu_us column: the server's CPU time per request, or n/a where it was not read."""
    v = w.get(CPU)
    return f" {v:>7.1f}" if v is not None else f" {'n/a':>7}"


def steal_cell(ws):
    """The steal% column: the mean of the windows' steal, or n/a where none was read."""
    values = [w[STEAL] for w in ws if STEAL in w]
    return f" {statistics.mean(values):>6.1f}" if values else f" {'n/a':>6}"


def print_open_loop(points):
    """The table and ratios of open-loop points, by rate (and round, with run.sh --rounds).

    With one round per rate, each ratio line gives that round's ratio and the target line its
    verdict. With several, each ratio line gives every round's ratio and their median, and the
    target line judges the medians and counts the rounds that met it on their own."""
    cpu = any(CPU in result(p) for p in points)
    steal = any(STEAL in result(p) for p in points)
    rounds = sorted({p.get("round", 1) for p in points})
    many = len(rounds) > 1
    width = max(9, max(len(p["server"]) for p in points))
    print(f"{'server':<{width}} {'rate':>6} " + (f"{'round':>5} " if many else "")
          + f"{'req/s':>8} {'p50_ms':>8} {'p99_ms':>8} {'p99.9_ms':>9} "
          f"{'max_ms':>8} {'errors':>7} {'queued':>7}" + (f" {'cpu_us':>7}" if cpu else "")
          + (f" {'steal%':>6}" if steal else ""))
    by = {}
    for p in points:
        w = result(p)
        lat = w["latency_us"]
        e = w["errors"]
        k = p.get("round", 1)
        by[(p["server"], p["rate"], k)] = w
        detail = ""
        if e["total"] and p["server"] == "gpuadmit:no-review" and e["total"] == e["non2xx"]:
            detail = "  (the control's 404s)"
        elif e["total"]:
            detail = (f"  (connect {e['connect']} read {e['read']} write {e['write']} "
                      f"timeout {e['timeout']} non2xx {e['non2xx']})")
        print(f"{p['server']:<{width}} {p['rate']:>6} " + (f"{k:>5} " if many else "")
              + f"{w['rps']:>8.0f} {lat['p50'] / 1e3:>8.3f} "
              f"{lat['p99'] / 1e3:>8.3f} {lat['p999'] / 1e3:>9.3f} {lat['max'] / 1e3:>8.3f} "
              f"{e['total']:>7} {w.get('queued', 0):>7}" + (cpu_cell(w) if cpu else "")
              + (steal_cell([w]) if steal else "") + detail)
    for server in ("gpuadmit",) + CONTROLS:
        print_ratios(server, by, points, rounds, many)


def print_ratios(server, by, points, rounds, many):
    """SERVER/nginx ratios of p50, p99, p99.9 and CPU per request by rate, and the verdict."""
    # The rounds of each rate measured on both servers.
    paired = {}
    for r in sorted({p["rate"] for p in points}):
        ks = [k for k in rounds if ("nginx", r, k) in by and (server, r, k) in by]
        if ks:
            paired[r] = ks
    if not paired:
        return

    def ratios(r, get):
        """server/nginx of get(figures) in each round of rate r where nginx's is not 0."""
        out = []
        for k in paired[r]:
            g, n = get(by[(server, r, k)]), get(by[("nginx", r, k)])
            if g is not None and n:
                out.append(g / n)
        return out

    def ratio_cell(r, get):
        rs = ratios(r, get)
        if not rs:
            return f"rate={r} n/a"
        if not many:
            return ratio_text(f"rate={r}", rs[0], 1)
        listed = " ".join(f"{x:.2f}" for x in rs)
        return f"rate={r} {listed} (median {statistics.median(rs):.2f})"

    print()
    for label, key in (("p50", "p50"), ("p99", "p99"), ("p99.9", "p999")):
        print(f"ratio {server}/nginx {label} latency: "
              + "  ".join(ratio_cell(r, lambda w, key=key: w["latency_us"][key]) for r in paired))
    if any(ratios(r, lambda w: w.get(CPU)) for r in paired):
        print(f"ratio {server}/nginx server CPU per request: "
              + "  ".join(ratio_cell(r, lambda w: w.get(CPU)) for r in paired))
    verdicts = []
    for r in paired:
        p99 = ratios(r, lambda w: w["latency_us"]["p99"])
        p999 = ratios(r, lambda w: w["latency_us"]["p999"])
        if len(p99) != len(paired[r]) or len(p999) != len(paired[r]):
            verdicts.append(f"rate={r} NOT met (an nginx percentile of 0)")
            continue
        met = meets(statistics.median(p99), statistics.median(p999))
        verdict = f"rate={r} {'met' if met else 'NOT met'}"
        if many:
            alone = sum(1 for a, b in zip(p99, p999) if meets(a, b))
            verdict += f" (medians of {len(p99)} rounds; {alone} of {len(p99)} met it alone)"
        verdicts.append(verdict)
    print(f"{target_label(server)} p99 and p99.9 <= {OPEN_LOOP_TARGET}x nginx: "
          + "  ".join(verdicts))
    if many and any(STEAL in w for w in by.values()):
        print_calm(server, by, paired)


def print_calm(server, by, paired):
    """The rounds whose two windows (SERVER's and nginx's) the host left calm, and their ratios."""
    cells = []
    for r in paired:
        calm = [k for k in paired[r]
                if all(by[(s, r, k)].get(STEAL, 100) < CALM_STEAL_PCT for s in (server, "nginx"))]
        pairs = [(by[(server, r, k)]["latency_us"], by[("nginx", r, k)]["latency_us"])
                 for k in calm]
        pairs = [(g, n) for g, n in pairs if n["p99"] and n["p999"]]
        if not pairs:
            cells.append(f"rate={r} none of {len(paired[r])}")
            continue
        p99 = [g["p99"] / n["p99"] for g, n in pairs]
        p999 = [g["p999"] / n["p999"] for g, n in pairs]
        alone = sum(1 for a, b in zip(p99, p999) if meets(a, b))
        cells.append(f"rate={r} {len(pairs)} of {len(paired[r])}: p99 "
                     + " ".join(f"{x:.2f}" for x in p99)
                     + f" (median {statistics.median(p99):.2f}), p99.9 "
                     + " ".join(f"{x:.2f}" for x in p999)
                     + f" (median {statistics.median(p999):.2f}); {alone} met the target")
    print(f"calm rounds (steal < {CALM_STEAL_PCT:g}% in both windows), {server}/nginx: "
          + "  ".join(cells))


def print_pooled(pooled, points):
    """The percentiles of every round's latencies pooled, their ratios to nginx, the verdict."""
    windows = {}
    for p in points:
        windows.setdefault((p["server"], p["rate"]), []).append(result(p))
    steal = any(STEAL in result(p) for p in points)
    rounds = max(p["rounds"] for p in pooled)
    width = max(9, max(len(p["server"]) for p in pooled))
    print(f"pooled: the latencies of all {rounds} rounds of each server and rate, "
          "percentiles taken once")
    print(f"{'server':<{width}} {'rate':>6} {'requests':>9} {'p50_ms':>8} {'p99_ms':>8} "
          f"{'p99.9_ms':>9} {'max_ms':>8}" + (f" {'steal%':>6}" if steal else ""))
    by = {}
    for p in pooled:
        lat = p["latency_us"]
        by[(p["server"], p["rate"])] = lat
        print(f"{p['server']:<{width}} {p['rate']:>6} {p['requests']:>9} {lat['p50'] / 1e3:>8.3f} "
              f"{lat['p99'] / 1e3:>8.3f} {lat['p999'] / 1e3:>9.3f} {lat['max'] / 1e3:>8.3f}"
              + (steal_cell(windows.get((p["server"], p["rate"]), [])) if steal else ""))
    rates = sorted({p["rate"] for p in pooled})
    for server in ("gpuadmit",) + CONTROLS:
        paired = [r for r in rates if (server, r) in by and ("nginx", r) in by]
        if not paired:
            continue
        print()
        cells, verdicts = [], []
        for r in paired:
            g, n = by[(server, r)], by[("nginx", r)]
            cells.append(f"rate={r} " + " ".join(ratio_text(label, g[key], n[key]) for label, key in
                                                  (("p50", "p50"), ("p99", "p99"),
                                                   ("p99.9", "p999"))))
            met = n["p99"] and n["p999"] and meets(g["p99"] / n["p99"], g["p999"] / n["p999"])
            verdicts.append(f"rate={r} {'met' if met else 'NOT met'}")
        print(f"pooled ratio {server}/nginx: " + "  ".join(cells))
        print(f"pooled: {target_label(server)} p99 and p99.9 <= {OPEN_LOOP_TARGET}x nginx: "
              + "  ".join(verdicts))


def main() -> int:
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    meta, points, pooled = {}, [], []
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
            elif d.get("kind") == "pooled":
                pooled.append(d)
    if not points:
        print("no measured points", file=sys.stderr)
        return 1

    if meta:
        print(f"machine: {meta.get('nproc')} CPUs, {meta.get('cpu_model')}; "
              f"{meta.get('duration_s')} s per point; client {meta.get('client', 'wrk')}")
    open_points = [p for p in points if p.get("mode") == "open"]
    points = [p for p in points if p.get("mode") != "open"]
    if open_points:
        print_open_loop(open_points)
        if pooled and max(p["rounds"] for p in pooled) > 1:
            print()
            print_pooled(pooled, open_points)
        if points:
            print()
    if not points:
        return 0
    cpu = any(CPU in result(p) for p in points)
    print(f"{'server':<9} {'conc':<5} {'req/s':>9} {'p50_ms':>8} {'p99_ms':>8} "
          f"{'max_ms':>8} {'errors':>7}" + (f" {'cpu_us':>7}" if cpu else ""))
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
              f"{lat['p99'] / 1e3:>8.3f} {lat['max'] / 1e3:>8.3f} {e['total']:>7}"
              + (cpu_cell(w) if cpu else "") + detail)

    concs = sorted({p["conc"] for p in points})
    pairs = [c for c in concs if ("nginx", c) in by and ("gpuadmit", c) in by]
    if pairs:
        def ratio(c, get):
            return ratio_text(f"c={c}", get(result(by[("gpuadmit", c)])),
                              get(result(by[("nginx", c)])))
        print()
        print("ratio gpuadmit/nginx throughput: "
              + "  ".join(ratio(c, lambda w: w["rps"]) for c in pairs))
        print("ratio gpuadmit/nginx p50 latency: "
              + "  ".join(ratio(c, lambda w: w["latency_us"]["p50"]) for c in pairs))
        print("ratio gpuadmit/nginx p99 latency: "
              + "  ".join(ratio(c, lambda w: w["latency_us"]["p99"]) for c in pairs))
        with_cpu = [c for c in pairs
                    if CPU in result(by[("gpuadmit", c)]) and CPU in result(by[("nginx", c)])]
        if with_cpu:
            print("ratio gpuadmit/nginx server CPU per request: "
                  + "  ".join(ratio(c, lambda w: w[CPU]) for c in with_cpu))
    return 0


if __name__ == "__main__":
    sys.exit(main())
