#!/usr/bin/python3
"""Tests of the monitoring component (manifests/overlays/monitoring) against promtool and a live
gpuadmit.

Usage: monitoring_test.py --gpuadmit PATH --source-dir REPO_ROOT [--promtool /usr/bin/promtool]

Checks:
  1. the component is a kustomize Component whose files exist;
  2. `promtool check rules` on the PrometheusRule's groups, and `promtool test rules` with
     tests/manifests/monitoring_alerts_test.yaml, which has, for every alert, a case where it
     fires and one where it stays quiet;
  3. the latency alert's threshold is 0.8 x the webhook's timeoutSeconds (manifests/base);
  4. the Grafana dashboard is valid JSON with one data source variable and unique panel ids;
  5. a live `gpuadmit serve --metrics-listen` (certs/gen-certs.sh, the example policy and demo
     cluster, free ports on 127.0.0.1): `promtool check metrics` finds no problem in /metrics;
     every gpuadmit_* metric the alerts and the dashboard query is exported, with the label values
     they select (outcome, the build labels); docs/monitoring.md names exactly the metrics
     exported; the latency histogram reaches the alert's threshold
     (histogram_quantile never answers above the largest finite bucket); the certificate expiry
     gauge is the serving certificate's notAfter in unix seconds.
Hermetic: temporary directory, loopback, ports the kernel hands out, every process killed on the
way out. Prints `ok - NAME` / `not ok - NAME: REASON`, then `N passed, M failed`; exit 1 on a
failure, 77 when promtool is missing (reported skipped by ctest).
"""
import argparse, atexit, calendar, http.client, json, os, re, shutil, socket, subprocess, sys
import tempfile, time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from checks import check, summary  # noqa: E402

COMPONENT = "manifests/overlays/monitoring"
RULES = COMPONENT + "/prometheusrule.yaml"
DASHBOARD = COMPONENT + "/dashboards/gpuadmit.json"
ALERT_TESTS = "tests/manifests/monitoring_alerts_test.yaml"
WEBHOOK = "manifests/base/mutatingwebhookconfiguration.yaml"
DOC = "docs/monitoring.md"
LATENCY_ALERT = "GpuadmitReviewLatencyNearTimeout"
# A metric name as the queries write it; label names and values never start with "gpuadmit_".
METRIC_RE = re.compile(r"\bgpuadmit_[a-z_]+")
A = None  # parsed arguments plus paths, set in main()
PROCS = []


def kill_all():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()


def src(rel):
    return os.path.join(A.src, rel)


def load_yaml(rel):
    with open(src(rel)) as f:
        return yaml.safe_load(f)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


# --- the component and its rules -----------------------------------------------------------------
def case_component():
    k = load_yaml(COMPONENT + "/kustomization.yaml")
    check("component: kind Component, apiVersion kustomize.config.k8s.io/v1alpha1",
          k.get("kind") == "Component" and
          k.get("apiVersion") == "kustomize.config.k8s.io/v1alpha1",
          "%s %s" % (k.get("apiVersion"), k.get("kind")))
    files = list(k.get("resources") or [])
    for gen in k.get("configMapGenerator") or []:
        files += [f.split("=", 1)[-1] for f in gen.get("files") or []]
    missing = [f for f in files if not os.path.isfile(src(os.path.join(COMPONENT, f)))]
    check("component: every resource and generator file exists", files and not missing,
          "missing %s" % missing)


def alerts_of(rules_spec):
    return {r["alert"]: r for g in rules_spec.get("groups") or [] for r in g.get("rules") or []
            if "alert" in r}


def case_rules(rules_spec):
    rules_path = os.path.join(A.tmp, "gpuadmit-rules.yaml")
    with open(rules_path, "w") as f:
        yaml.safe_dump(rules_spec, f, sort_keys=False)
    p = run([A.promtool, "check", "rules", rules_path])
    check("promtool check rules: the PrometheusRule's groups", p.returncode == 0,
          (p.stdout + p.stderr).strip())

    # The unit tests name their rule file gpuadmit-rules.yaml, relative to themselves.
    tests_path = os.path.join(A.tmp, os.path.basename(ALERT_TESTS))
    shutil.copy(src(ALERT_TESTS), tests_path)
    p = run([A.promtool, "test", "rules", tests_path])
    check("promtool test rules: %s" % ALERT_TESTS, p.returncode == 0,
          (p.stdout + p.stderr).strip()[-3000:])

    alerts = alerts_of(rules_spec)
    fires, quiet = set(), set()
    for t in load_yaml(ALERT_TESTS).get("tests") or []:
        for a in t.get("alert_rule_test") or []:
            (fires if a.get("exp_alerts") else quiet).add(a.get("alertname"))
    check("the PrometheusRule has the alerts the issue asks for",
          {LATENCY_ALERT, "GpuadmitFailOpenReviews", "GpuadmitInventoryStale",
           "GpuadmitCertificateExpiringSoon", "GpuadmitDown"} <= set(alerts), sorted(alerts))
    for name in sorted(alerts):
        check("alert %s has a unit test where it fires and one where it does not" % name,
              name in fires and name in quiet,
              "fires: %s, quiet: %s" % (name in fires, name in quiet))
    unknown = (fires | quiet) - set(alerts)
    check("the unit tests name only alerts the rules define", not unknown, sorted(unknown))
    check("GpuadmitDown is absent(up{job=\"gpuadmit\"})",
          "GpuadmitDown" in alerts and
          re.sub(r"\s", "", alerts["GpuadmitDown"]["expr"]) == 'absent(up{job="gpuadmit"})',
          alerts.get("GpuadmitDown", {}).get("expr"))
    check("GpuadmitCertificateExpiringSoon: expiry - time() < 21 days",
          "GpuadmitCertificateExpiringSoon" in alerts and re.sub(
              r"\s", "", alerts["GpuadmitCertificateExpiringSoon"]["expr"]) ==
          "gpuadmit_certificate_expiry_timestamp_seconds-time()<21*86400",
          alerts.get("GpuadmitCertificateExpiringSoon", {}).get("expr"))


def latency_threshold(rules_spec):
    """The latency alert's threshold in seconds, and whether it is 0.8 x timeoutSeconds."""
    expr = alerts_of(rules_spec).get(LATENCY_ALERT, {}).get("expr", "")
    m = re.search(r">\s*0\.8\s*\*\s*(\d+)\s*$", expr.strip())
    timeouts = {h.get("timeoutSeconds") for h in load_yaml(WEBHOOK).get("webhooks") or []}
    ok = bool(m) and timeouts == {int(m.group(1))}
    check("%s fires at 0.8 x the webhook's timeoutSeconds %s" % (LATENCY_ALERT, sorted(timeouts)),
          ok and "histogram_quantile(0.99" in expr.replace(" ", "") and
          "gpuadmit_review_duration_seconds_bucket[5m]" in expr, expr)
    return 0.8 * int(m.group(1)) if m else None


# --- the dashboard -------------------------------------------------------------------------------
def dashboard_queries():
    """Every PromQL expression of the dashboard: panel targets and query variables."""
    try:
        with open(src(DASHBOARD)) as f:
            dash = json.load(f)
    except ValueError as e:
        check("dashboard: valid JSON", False, str(e))
        return []
    check("dashboard: valid JSON", True)
    panels = dash.get("panels") or []
    ids = [p.get("id") for p in panels]
    check("dashboard: panels have unique ids", len(ids) == len(set(ids)) and None not in ids, ids)
    check("dashboard: a fixed uid", bool(dash.get("uid")), dash.get("uid"))
    variables = {v.get("name"): v for v in (dash.get("templating") or {}).get("list") or []}
    check("dashboard: a Prometheus data source variable",
          variables.get("datasource", {}).get("type") == "datasource" and
          variables["datasource"].get("query") == "prometheus", list(variables))
    exprs, bad = [], []
    for p in panels:
        for t in p.get("targets") or []:
            ds = (t.get("datasource") or p.get("datasource") or {}).get("uid")
            if not t.get("expr") or ds != "${datasource}":
                bad.append(p.get("title"))
            exprs.append(t.get("expr") or "")
    check("dashboard: every target has an expr on ${datasource}", exprs and not bad, bad)
    for v in variables.values():
        q = v.get("query")
        if v.get("type") == "query":
            exprs.append(q.get("query", "") if isinstance(q, dict) else q or "")
    titles = " ".join(p.get("title", "") for p in panels).lower()
    for want in ("outcome", "latency", "fail-open", "reload", "inventory", "certificate",
                 "build"):
        check("dashboard: a panel about %s" % want, want in titles, titles)
    return exprs


# --- the live server -----------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.getheader("Content-Type", ""), r.read().decode("utf-8", "replace")
    finally:
        conn.close()


def start_server():
    """`gpuadmit serve` with --metrics-listen; returns the metrics port, or None."""
    subprocess.run([src("certs/gen-certs.sh"), "--out", A.tmp], check=True,
                   capture_output=True, timeout=60)
    err_path = os.path.join(A.tmp, "serve.err")
    for _ in range(2):  # a second try with new ports when one was taken meanwhile (exit 3)
        port, metrics_port = free_port(), free_port()
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                [A.gpuadmit, "serve", "--policy", src("manifests/examples/policy.yaml"),
                 "--cluster", src("manifests/examples/demo-cluster.json"),
                 "--tls-cert", A.crt, "--tls-key", os.path.join(A.tmp, "tls.key"),
                 "--listen", "127.0.0.1:%d" % port,
                 "--metrics-listen", "127.0.0.1:%d" % metrics_port],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        PROCS.append(proc)
        for _ in range(200):  # 50 ms steps, 10 s at most
            if proc.poll() is not None:
                break
            try:
                if http_get(metrics_port, "/readyz")[0] == 200:
                    return metrics_port
            except OSError:
                pass
            time.sleep(0.05)
        if proc.poll() != 3:
            break
    with open(err_path, errors="replace") as f:
        check("serve: ready on --metrics-listen", False, f.read()[-800:])
    return None


def parse_exposition(text):
    """{sample name: [labels dict]} and {family: type} from Prometheus text format."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)$", line)
            if not m:
                continue
            labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"',
                                     m.group(3) or ""))
            labels["__value__"] = m.group(4)
            samples.setdefault(m.group(1), []).append(labels)
    return samples, types


def selected_label_values(exprs, label):
    """Values that `label="v"` or `label=~"a|b"` matchers in exprs select (regexes of plain
    alternatives only)."""
    out = set()
    for e in exprs:
        for op, v in re.findall(r'\b%s\s*(=~|=)\s*"([^"]*)"' % label, e):
            out.update(v.split("|") if op == "=~" else [v])
    return out


def case_live(rule_exprs, dash_exprs, threshold):
    port = start_server()
    if port is None:
        return
    check("serve: ready on --metrics-listen", True)
    status, ctype, text = http_get(port, "/metrics")
    check("GET /metrics on --metrics-listen: 200 text/plain; version=0.0.4",
          status == 200 and ctype == "text/plain; version=0.0.4", "%d %s" % (status, ctype))
    p = run([A.promtool, "check", "metrics"], input=text)
    problems = (p.stdout + p.stderr).strip()
    check("promtool check metrics: no problems in /metrics", p.returncode == 0 and not problems,
          "exit %d: %s" % (p.returncode, problems))

    samples, types = parse_exposition(text)
    for where, exprs in (("alerts", rule_exprs), ("dashboard", dash_exprs)):
        names = sorted({n for e in exprs for n in METRIC_RE.findall(e)})
        check("the %s query gpuadmit metrics" % where, bool(names))
        for name in names:
            # A family with labels made at run time (the MIG fallback pairs) has its HELP and
            # TYPE lines from the start and samples once one happens: declared is exported.
            check("/metrics exports %s (%s)" % (name, where), name in samples or name in types,
                  "not in /metrics; it exports %s" % sorted(types))

    with open(src(DOC)) as f:
        documented = set(METRIC_RE.findall(f.read()))
    families = {n for n in types if n.startswith("gpuadmit_")}
    check("%s names only metrics /metrics exports" % DOC, documented <= families | set(samples),
          "not exported: %s" % sorted(documented - families - set(samples)))
    check("%s describes every metric /metrics exports" % DOC, families <= documented,
          "undocumented: %s" % sorted(families - documented))

    outcomes = {s.get("outcome") for s in samples.get("gpuadmit_admission_reviews_total", [])}
    wanted = selected_label_values(rule_exprs + dash_exprs, "outcome")
    check("every outcome the alerts and dashboard select is one /metrics exports %s" %
          sorted(wanted), wanted and wanted <= outcomes, "exported: %s" % sorted(outcomes))
    info = samples.get("gpuadmit_build_info", [])
    check("gpuadmit_build_info: one series, value 1, labels version, revision, build_date",
          len(info) == 1 and info[0]["__value__"] == "1" and
          all(info[0].get(k) for k in ("version", "revision", "build_date")),
          info or "not in /metrics")

    finite = sorted(float(s["le"]) for s in samples.get("gpuadmit_review_duration_seconds_bucket",
                                                         []) if s.get("le") not in (None, "+Inf"))
    check("the latency histogram has a bucket at or above the alert's threshold (%s s)" %
          threshold, threshold is not None and finite and finite[-1] >= threshold,
          "largest finite bucket le=%s: histogram_quantile never answers more, so %s can never "
          "fire; Metrics::kBuckets needs e.g. 2.5 and 5" %
          (finite[-1] if finite else None, LATENCY_ALERT))

    p = run(["openssl", "x509", "-in", A.crt, "-noout", "-enddate"])
    m = re.match(r"notAfter=(.*)", p.stdout.strip())
    not_after = calendar.timegm(time.strptime(m.group(1), "%b %d %H:%M:%S %Y GMT")) if m else None
    expiry = samples.get("gpuadmit_certificate_expiry_timestamp_seconds", [])
    got = [float(s["__value__"]) for s in expiry]
    check("gpuadmit_certificate_expiry_timestamp_seconds is tls.crt's notAfter (%s)" % not_after,
          not_after is not None and got == [not_after], got or "not in /metrics")


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--promtool", default="/usr/bin/promtool")
    A = ap.parse_args()
    if not os.access(A.promtool, os.X_OK):
        print("SKIP: %s not found (Debian package prometheus)" % A.promtool)
        return 77
    A.gpuadmit, A.src = os.path.abspath(A.gpuadmit), os.path.abspath(A.source_dir)
    tmp = tempfile.TemporaryDirectory(prefix="gpuadmit-monitoring-")
    atexit.register(tmp.cleanup)
    atexit.register(kill_all)  # runs first: processes die before their files go
    A.tmp = tmp.name
    A.crt = os.path.join(A.tmp, "tls.crt")

    case_component()
    rules_spec = load_yaml(RULES)["spec"]
    case_rules(rules_spec)
    threshold = latency_threshold(rules_spec)
    rule_exprs = [r.get("expr", "") for g in rules_spec.get("groups") or []
                  for r in g.get("rules") or []]
    dash_exprs = dashboard_queries()
    try:
        case_live(rule_exprs, dash_exprs, threshold)
    finally:
        kill_all()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
