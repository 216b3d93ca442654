#!/usr/bin/python3
"""End-to-end test of `gpuadmit serve` over HTTPS on 127.0.0.1.

Usage: serve_test.py --gpuadmit PATH --source-dir REPO_ROOT

Hermetic: certificates (certs/gen-certs.sh), clusters and scratch files live in a temporary
directory, servers listen on an OS-chosen free port of 127.0.0.1, and every process started is
killed on the way out. Cases:
  1. fixtures: every complete AdmissionReview in tests/fixtures/admission and tests/fixtures/gpu
     answers 200, passes tests/tools/check_patch.py, and equals `gpuadmit review` byte for byte;
  2. seed 003: MIG fallback 2g.20gb -> 1g.10gb on Pod/Deployment/Job/CronJob, idempotent on its
     own output, counted in gpuadmit_mig_fallbacks_total and gpuadmit_decisions_total by the
     serving process, a Pod preferring its node, only a reservation annotation and that
     preference when 2g is free, a warning when nothing smaller is free either;
  3. bad input (tests/fixtures/bad, statuses from its README), 413, 415, charset, still serving;
  4. keep-alive: 20 reviews on one connection;
  5. SIGTERM drain under 16 busy and 8 idle connections: no partial answers, exit 0 in 10 s;
  6. check-policy and serve start-up errors (exit codes 0/1/2/3, line:col messages), --help on
     every command naming every flag of the README's command line, and --metrics-listen (plain
     HTTP /metrics, /healthz, /readyz; a taken port is exit 3);
  7. policy reload through a ConfigMap-style `..data` symlink swap: a bad version is refused (same
     answers, a warning, a counter), a good one takes effect;
  8. GPU metrics (--dcgm-file) joined to nodes through the exporter pod steer placement in
     `review` and `serve`; `review --explain` prints the "GPU Node Selection" block.
Prints `ok - NAME` / `not ok - NAME: REASON` per check, then `N passed, M failed`; exit 1 on failures.
"""
import argparse, atexit, base64, calendar, copy, glob, http.client, json, os, re, signal, socket, ssl
import subprocess, sys, tempfile, threading, time

import jsonpatch

from checks import check, summary
from loopback import free_port

MIG2, MIG1 = "nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"
FALLBACK = "gpuadmit.io/fallback"
RESERVATION = "gpuadmit.io/reservation"
FALLBACKS_2G_1G = 'gpuadmit_mig_fallbacks_total{from_profile="2g.20gb",to_profile="1g.10gb"}'
FALLBACK_DECISIONS = 'gpuadmit_decisions_total{stage="mig_fallback",outcome="fallback"}'
PROCS = []
A = None  # parsed arguments plus paths, set in main()



def kill_all():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()


class Server:
    """One `gpuadmit serve` on a free 127.0.0.1 port; stderr goes to a file."""

    def __init__(self, cluster, name, policy=None, extra=()):
        self.cluster, self.name, self.policy = cluster, name, policy or A.policy
        for _ in range(2):  # a second try with a new port when the first one was taken (exit 3)
            self.port = free_port()
            self.err_path = os.path.join(A.tmp, "serve-%s-%d.err" % (name, self.port))
            self.err = open(self.err_path, "wb")
            self.proc = subprocess.Popen(
                [A.gpuadmit, "serve", "--policy", self.policy, "--cluster", cluster, "--tls-cert",
                 A.crt, "--tls-key", A.key, "--listen", "127.0.0.1:%d" % self.port] + list(extra),
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
            self.err.close()  # the child has its own copy
            PROCS.append(self.proc)
            self.ready = self.wait_ready()
            if self.ready or self.proc.poll() != 3:
                return

    def conn(self, timeout=15):
        return http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=A.ctx)

    def wait_ready(self):
        for _ in range(200):  # 50 ms steps, 10 s at most
            if self.proc.poll() is not None:
                return False
            conn = self.conn(2)
            try:
                if get(conn, "/readyz")[0] == 200:
                    return True
            except (OSError, http.client.HTTPException):
                pass
            finally:
                conn.close()
            time.sleep(0.05)
        return False

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read()


def post(target, body, ctype="application/json"):
    """POST body to /mutate on a Server (fresh connection) or an open connection."""
    conn = target.conn() if isinstance(target, Server) else target
    if not isinstance(body, bytes):
        body = json.dumps(body).encode()
    conn.request("POST", "/mutate", body=body, headers={"Content-Type": ctype})
    r = conn.getresponse()
    data = r.read()
    if isinstance(target, Server):
        conn.close()
    return r.status, data


def read_fixture(rel):
    with open(os.path.join(A.src, "tests/fixtures", rel), "rb") as f:
        return f.read()


def patch_ops(body):
    resp = json.loads(body)["response"]
    return json.loads(base64.b64decode(resp["patch"])) if resp.get("patch") else None


def check_patch(review_path, body):
    out = os.path.join(A.tmp, "response.json")
    with open(out, "wb") as f:
        f.write(body)
    p = subprocess.run([sys.executable, os.path.join(A.src, "tests/tools/check_patch.py"),
                        review_path, out], capture_output=True, text=True, timeout=30)
    return p.returncode == 0, p.stderr.strip()


def make_cluster(name, extra):
    """Demo cluster plus Running filler pods: extra = [(node, resource, count)]."""
    with open(os.path.join(A.src, "manifests/examples/demo-cluster.json")) as f:
        c = json.load(f)
    for node, res, n in extra:
        for i in range(n):
            c["items"].append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "filler-%s-%s-%d" % (node, res[-7:], i), "namespace": "e2e",
                             "uid": "00000000-e2e0-4000-8000-%012d" % len(c["items"])},
                "spec": {"nodeName": node, "containers": [{
                    "name": "c", "image": "busybox",
                    "resources": {"limits": {res: "1"}, "requests": {res: "1"}}}]},
                "status": {"phase": "Running"}})
    path = os.path.join(A.tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(c, f)
    return path


def host_preference(node, weight=100):
    """The preferred node affinity term placement adds for `node`."""
    return {"weight": weight, "preference": {"matchExpressions": [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}}


def pod_template(obj):
    """(metadata, pod spec) of a Pod or of a workload's pod template."""
    if obj["kind"] == "Pod":
        return obj.get("metadata", {}), obj["spec"]
    t = obj["spec"]["jobTemplate"]["spec"]["template"] if obj["kind"] == "CronJob" \
        else obj["spec"]["template"]
    return t.get("metadata", {}), t["spec"]


# ------------------------------------------------------------------------------------ cases

def case_fixtures(srv):
    files = [f for f in sorted(glob.glob(os.path.join(A.src, "tests/fixtures/admission/*.json")))
             if re.match(r"(v1-|v1beta1-|wrapped-)", os.path.basename(f))]
    files += sorted(glob.glob(os.path.join(A.src, "tests/fixtures/gpu/*.json")))
    check("fixtures: found the reviews", len(files) >= 30, "only %d files" % len(files))
    for path in files:
        rel = os.path.relpath(path, os.path.join(A.src, "tests/fixtures"))
        name, (status, body) = "fixture " + rel, post(srv, read_fixture(rel))
        if not check(name + ": 200", status == 200, "status %d: %r" % (status, body[:200])):
            continue
        ok, err = check_patch(path, body)
        check(name + ": check_patch", ok, err)
        p = subprocess.run([A.gpuadmit, "review", "--policy", A.policy, "--cluster", srv.cluster,
                            path], capture_output=True, timeout=30)
        check(name + ": review CLI prints the same body", p.returncode == 0 and
              p.stdout == body + b"\n", "rc %d, stdout %r, http %r" % (p.returncode, p.stdout[:300],
                                                                        body[:300]))


def case_fallback(exhausted, demo, full):
    # Earlier cases may have fallen back on this server already: the counters must rise by one
    # per object that falls back here, and not at all for the idempotent second reviews.
    pairs_before = metric(exhausted, FALLBACKS_2G_1G) or 0
    decisions_before = metric(exhausted, FALLBACK_DECISIONS)
    fixtures = ("kubectl-pod", "kubectl-deployment", "kubectl-job", "kubectl-cronjob")
    for fx in fixtures:
        name = "seed 003 fallback %s" % fx
        review = json.loads(read_fixture("gpu/%s.json" % fx))
        status, body = post(exhausted, review)
        ops = patch_ops(body) if status == 200 else None
        if not check(name + ": patched", ops, "status %d, body %r" % (status, body[:300])):
            continue
        obj = jsonpatch.apply_patch(review["request"]["object"], ops)
        md, spec = pod_template(obj)
        res = spec["containers"][0].get("resources", {})
        for part in ("limits", "requests"):
            got = res.get(part, {})
            check("%s: %s ask 1g.10gb" % (name, part), got.get(MIG1) == "1" and MIG2 not in got,
                  "got %r" % got)
        ann = (md.get("annotations") or {}).get(FALLBACK)
        check(name + ": annotation", ann == "2g.20gb->1g.10gb", "%s = %r" % (FALLBACK, ann))
        # A Pod is steered to the node with the most free 1g.10gb; templates are never pinned.
        pref = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "preferredDuringSchedulingIgnoredDuringExecution")
        want = [host_preference("gpu-small")] if fx == "kubectl-pod" else None
        check(name + ": node preference", pref == want, "got %r" % pref)
        again = copy.deepcopy(review)
        again["request"]["object"] = obj
        status, body = post(exhausted, again)
        check(name + ": idempotent", status == 200 and patch_ops(body) is None,
              "status %d, second patch %r" % (status, patch_ops(body) if status == 200 else body))
    pairs = metric(exhausted, FALLBACKS_2G_1G)
    check("seed 003: %s rose by %d on the serving process" % (FALLBACKS_2G_1G, len(fixtures)),
          pairs == pairs_before + len(fixtures), "%r -> %r" % (pairs_before, pairs))
    decisions = metric(exhausted, FALLBACK_DECISIONS)
    check("seed 003: %s rose by %d" % (FALLBACK_DECISIONS, len(fixtures)),
          decisions_before is not None and decisions == decisions_before + len(fixtures),
          "%r -> %r" % (decisions_before, decisions))
    pod = read_fixture("gpu/kubectl-pod.json")
    status, body = post(demo, pod)
    ops = patch_ops(body) if status == 200 else None
    # Free: the request stays as it is; the reservation annotation records the device it counts
    # on, and placement (default policy: most-idle, preferred) steers it to that device's node.
    check("seed 003: 2g.20gb free -> request unchanged, device reserved, node preferred",
          status == 200 and ops == [
              {"op": "add", "path": "/metadata/annotations",
               "value": {RESERVATION: json.loads(pod)["request"]["uid"]}},
              {"op": "add", "path": "/spec/affinity", "value": {"nodeAffinity": {
                  "preferredDuringSchedulingIgnoredDuringExecution": [host_preference("gpu-medium")]}}}],
          "status %d, patch %r" % (status, ops))
    status, body = post(full, pod)
    resp = json.loads(body).get("response", {}) if status == 200 else {}
    warns = resp.get("warnings") or []
    check("seed 003: nothing free -> no patch, warning",
          status == 200 and resp.get("allowed") is True and "patch" not in resp
          and any("no smaller MIG profile" in w for w in warns), "status %d, body %r" % (status, body))


def expected_bad_statuses():
    with open(os.path.join(A.src, "tests/fixtures/bad/README.md")) as f:
        rows = re.findall(r"^\| `([^`]+)` \|.*\| (\d{3})\b[^|]*\|$", f.read(), re.M)
    return dict((name, int(code)) for name, code in rows)


def case_bad_input(srv):
    expected = expected_bad_statuses()
    files = sorted(f for f in os.listdir(os.path.join(A.src, "tests/fixtures/bad"))
                   if f != "README.md")
    check("bad corpus: README documents every file", set(files) == set(expected),
          "files %s, documented %s" % (sorted(files), sorted(expected)))
    for f in files:
        path = os.path.join(A.src, "tests/fixtures/bad", f)
        status, body = post(srv, read_fixture("bad/" + f))
        want = expected.get(f)
        name = "bad %s" % f
        if not check(name + ": status %s" % want, status == want,
                     "got %d, body %r" % (status, body[:300])):
            continue
        if status == 400:
            try:
                j = json.loads(body)
                ok = list(j) == ["error"] and isinstance(j["error"], str) and j["error"] \
                    and "\n" not in j["error"]
            except ValueError:
                ok = False
            check(name + ": one-line JSON error", ok, "body %r" % body[:300])
        else:
            resp = json.loads(body).get("response", {})
            check(name + ": allowed with a warning", resp.get("allowed") is True
                  and resp.get("warnings"), "response %r" % resp)
            ok, err = check_patch(path, body)
            check(name + ": check_patch", ok, err)
    pod = read_fixture("gpu/kubectl-pod.json")
    big = b'{"apiVersion":"admission.k8s.io/v1","pad":"' + b"x" * (8 << 20) + b'"}'
    try:
        status = post(srv, big)[0]
    except OSError as e:
        status = "%s: %s" % (type(e).__name__, e)
    check("8 MiB body: 413", status == 413, "got %s" % status)
    status, body = post(srv, pod, "text/plain")
    check("text/plain: 415", status == 415, "got %d %r" % (status, body[:200]))
    status, body = post(srv, pod, "application/json; charset=utf-8")
    check("application/json; charset=utf-8: 200", status == 200, "got %d %r" % (status, body[:200]))
    status, body = post(srv, pod)
    check("after bad input: still serving", status == 200 and srv.proc.poll() is None,
          "status %d, exit %r" % (status, srv.proc.poll()))


def case_keep_alive(srv):
    pod, conn, statuses, why = read_fixture("gpu/kubectl-pod.json"), srv.conn(), [], ""
    try:
        conn.connect()
        sock = conn.sock
        while len(statuses) < 20 and not why:
            statuses.append(post(conn, pod)[0])
            why = "" if conn.sock is sock else "new connection after request %d" % len(statuses)
    except (OSError, http.client.HTTPException) as e:
        why = "%s: %s" % (type(e).__name__, e)
    finally:
        conn.close()
    check("keep-alive: 20 reviews on one connection", not why and statuses == [200] * 20,
          why or "statuses %r" % statuses)


# Issue 5: SIGTERM with 64 connections busy.
DRAIN_BUSY = 64


def case_drain(cluster):
    srv = Server(cluster, "drain")
    if not check("drain: server ready", srv.ready, srv.stderr()[-500:]):
        return
    pod, idle = read_fixture("gpu/kubectl-pod.json"), [srv.conn() for _ in range(8)]
    for c in idle:
        c.connect()
    probe = srv.conn(5)
    check("drain: /readyz 200 before the signal", get(probe, "/readyz")[0] == 200, "")
    barrier, stop = threading.Barrier(DRAIN_BUSY + 1, timeout=30), threading.Event()
    answered, unsent, unanswered, bad = [0] * DRAIN_BUSY, [0] * DRAIN_BUSY, [0] * DRAIN_BUSY, []

    def worker(i):
        conn, first = srv.conn(), True
        try:
            while not stop.is_set():
                try:
                    conn.request("POST", "/mutate", body=pod,
                                 headers={"Content-Type": "application/json"})
                except OSError:
                    unsent[i] += 1  # refused or closed before the request was written
                    return
                try:
                    r = conn.getresponse()
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    unanswered[i] += 1  # closed with no answer byte: the request was not taken
                    return
                data = r.read()  # IncompleteRead here is a partial answer
                if r.status != 200 or json.loads(data)["response"]["allowed"] is not True:
                    bad.append("worker %d: status %d body %r" % (i, r.status, data[:200]))
                    return
                answered[i] += 1
                if first:
                    first = False
                    barrier.wait()
        except Exception as e:  # partial or garbled answer, timeout, broken barrier
            bad.append("worker %d: %s: %s" % (i, type(e).__name__, e))
        finally:
            conn.close()

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(DRAIN_BUSY)]
    for t in threads:
        t.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        check("drain: %d busy connections served" % DRAIN_BUSY, False,
              "not all workers got an answer: %s" % bad)
        stop.set()
        return
    t0 = time.monotonic()
    srv.proc.send_signal(signal.SIGTERM)
    ready = 200  # the signal is handled asynchronously: give readiness 1 s to go false
    while ready == 200 and time.monotonic() - t0 < 1.0:
        try:
            ready = get(probe, "/readyz")[0]
        except (OSError, http.client.HTTPException):
            ready = None  # unreachable is fine too
    check("drain: /readyz not 200 after SIGTERM", ready != 200,
          "still 200 %.2f s after the signal" % (time.monotonic() - t0))
    t_ready = time.monotonic() - t0
    try:
        rc = srv.proc.wait(timeout=12)
    except subprocess.TimeoutExpired:
        rc = None
    took = time.monotonic() - t0
    stop.set()
    for t in threads:
        t.join(20)
    for c in idle + [probe]:
        c.close()
    check("drain: exit 0 within 10 s", rc == 0 and took <= 10.0, "rc %r after %.2f s" % (rc, took))
    # serve returns from main, so every destructor runs: in the sanitizer build LeakSanitizer
    # then checks the whole process at exit (and would exit 23).
    check("drain: stopped cleanly, nothing leaked", "msg=stopped" in srv.stderr() and
          "LeakSanitizer" not in srv.stderr(), srv.stderr()[-600:])
    check("drain: no partial or wrong answers", not bad and not any(t.is_alive() for t in threads),
          "; ".join(bad) or "a worker hung")
    check("drain: every request the server took was answered", sum(unanswered) == 0,
          "%d connections closed with no answer byte after a request was sent" % sum(unanswered))
    check("drain: stderr says stopped", "stopped" in srv.stderr(), srv.stderr()[-500:])
    print("# drain: %d answers; then %d refused/closed before sending, %d closed with no answer "
          "byte; readyz %r after %.3f s; exit after %.2f s"
          % (sum(answered), sum(unsent), sum(unanswered), ready, t_ready, took))


def case_cli():
    g = A.gpuadmit
    p = subprocess.run([g, "check-policy", A.policy], capture_output=True, text=True, timeout=30)
    check("check-policy example: exit 0", p.returncode == 0, "rc %d %s" % (p.returncode, p.stderr))
    large = os.path.join(A.src, "manifests/examples/policy-large-cluster.yaml")
    p = subprocess.run([g, "check-policy", large], capture_output=True, text=True, timeout=30)
    check("check-policy large-cluster example: exit 0", p.returncode == 0,
          "rc %d %s" % (p.returncode, p.stderr))
    bad = os.path.join(A.tmp, "bad-policy.yaml")
    with open(bad, "w") as f:
        f.write("# a policy with a typo\nannotationPrefix: gpuadmit.io\nbogusKey: true\n")
    p = subprocess.run([g, "check-policy", bad], capture_output=True, text=True, timeout=30)
    check("check-policy unknown key: exit 1, FILE:3:1", p.returncode == 1 and
          "%s:3:1: unknown key" % bad in p.stderr, "rc %d %r" % (p.returncode, p.stderr))
    other = os.path.join(A.tmp, "other.key")
    subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-out", other], check=True, capture_output=True)
    base = [g, "serve", "--cluster", os.path.join(A.src, "manifests/examples/demo-cluster.json"),
            "--tls-cert", A.crt, "--listen", "127.0.0.1:%d" % free_port()]
    p = subprocess.run(base + ["--policy", A.policy, "--tls-key", other],
                       capture_output=True, text=True, timeout=30)
    msgs = [l for l in p.stderr.splitlines() if " level=" not in l]  # log lines aside
    check("serve with a mismatched key: exit 3, one line", p.returncode == 3 and len(msgs) == 1
          and other in msgs[0], "rc %d %r" % (p.returncode, p.stderr))
    p = subprocess.run(base + ["--tls-key", A.key], capture_output=True, text=True, timeout=30)
    check("serve without --policy: exit 2", p.returncode == 2, "rc %d %r" % (p.returncode, p.stderr))
    p = subprocess.run(base + ["--policy", A.policy, "--tls-key", A.key, "--workers", "0"],
                       capture_output=True, text=True, timeout=30)
    check("serve --workers 0: exit 2, says the range", p.returncode == 2 and
          "--workers must be between 1 and 256" in p.stderr, "rc %d %r" % (p.returncode, p.stderr))
    p = subprocess.run(base + ["--policy", A.policy, "--tls-key", A.key, "--metrics-listen",
                               "9090"], capture_output=True, text=True, timeout=30)
    check("serve --metrics-listen without a port: exit 2", p.returncode == 2 and
          "--metrics-listen must be HOST:PORT" in p.stderr, "rc %d %r" % (p.returncode, p.stderr))
    taken = base[-1]  # the --listen address: the metrics listener cannot have it too
    p = subprocess.run(base + ["--policy", A.policy, "--tls-key", A.key, "--metrics-listen", taken],
                       capture_output=True, text=True, timeout=30)
    check("serve --metrics-listen on the --listen port: exit 3, names it", p.returncode == 3 and
          "cannot bind metrics listener %s" % taken in p.stderr,
          "rc %d %r" % (p.returncode, p.stderr))
    case_help()


def case_help():
    """--help on every command prints that command's own usage, and together they name every
    flag of the README's command-line block."""
    g = A.gpuadmit
    usage = ""
    for command in ([], ["serve"], ["review"], ["check-policy"], ["inventory"], ["simulate"],
                    ["report"], ["version"]):
        p = subprocess.run([g] + command + ["--help"], capture_output=True, text=True, timeout=30)
        name = " ".join(["gpuadmit"] + command + ["--help"])
        own = not command or p.stdout.startswith("gpuadmit %s: " % command[0])
        if check(name + ": exit 0, its own usage on stdout", p.returncode == 0 and own and
                 "Usage:" in p.stdout and not p.stderr,
                 "rc %d %r %r" % (p.returncode, p.stderr, p.stdout[:80])):
            usage += p.stdout
    p = subprocess.run([g, "version", "extra"], capture_output=True, text=True, timeout=30)
    check("gpuadmit version extra: exit 2, says it takes no arguments",
          p.returncode == 2 and "takes no arguments" in p.stderr, p.stderr)
    with open(os.path.join(A.src, "README.md")) as f:
        readme = f.read()
    block = re.search(r"## Command line\n\n```\n(.*?)```", readme, re.S)
    flags = sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-o)\b", block.group(1)))) if block else []
    missing = [flag for flag in flags if usage is None or flag not in usage]
    check("usage names the README's %d flags" % len(flags), len(flags) > 10 and not missing,
          "missing %s" % missing)


def case_metrics_listen(demo):
    """--metrics-listen: plain HTTP /metrics, /healthz, /readyz beside the TLS listener."""
    port = free_port()
    srv = Server(demo, "metrics-listen", extra=("--metrics-listen", "127.0.0.1:%d" % port))
    if not check("serve --metrics-listen: ready", srv.ready, srv.stderr()[-500:]):
        return

    def plain(method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        try:
            conn.request(method, path, body=body)
            r = conn.getresponse()
            return r.status, r.read().decode(), r.getheader("Allow")
        finally:
            conn.close()

    def reviews(text):
        m = re.search(r'^gpuadmit_admission_reviews_total\{outcome="patch"\} (\d+)$', text, re.M)
        return int(m.group(1)) if m else None

    status, text, _ = plain("GET", "/metrics")
    before = reviews(text)
    check_inventory_gauges(text, per_node=False)
    check("metrics port: GET /metrics 200 with the review counters", status == 200 and
          before is not None, "%d %r" % (status, text[:300]))
    answer = post(srv, read_fixture("gpu/kubectl-pod.json"))
    status, text, _ = plain("GET", "/metrics")
    check("metrics port: a review over TLS counts there", answer[0] == 200 and
          reviews(text) == (before or 0) + 1, "answer %d, %r -> %r" % (answer[0], before,
                                                                      reviews(text)))
    check("metrics port: /healthz and /readyz 200",
          plain("GET", "/healthz")[0] == 200 and plain("GET", "/readyz")[0] == 200)
    status, _, allow = plain("POST", "/metrics", body="x")
    check("metrics port: POST /metrics 405 Allow: GET", status == 405 and allow == "GET",
          "%d %r" % (status, allow))
    check("metrics port: /mutate is not served there", plain("POST", "/mutate", "{}")[0] == 404)
    # Issue 15: what the binary is, and when its certificate ends, for the dashboard and alerts.
    _, text, _ = plain("GET", "/metrics")
    version = subprocess.run([A.gpuadmit, "version"], capture_output=True, text=True, timeout=30)
    facts = dict(line.split(": ", 1) for line in version.stdout.splitlines()[1:])
    m = re.search(r'^gpuadmit_build_info\{version="([^"]*)",revision="([^"]*)",'
                  r'build_date="([^"]*)",openssl="([^"]*)".*\} 1$', text, re.M)
    check("metrics port: gpuadmit_build_info says what `gpuadmit version` says",
          m is not None and version.stdout.startswith("gpuadmit %s\n" % m.group(1)) and
          (m.group(2), m.group(3), m.group(4)) == (facts.get("revision"), facts.get("built"),
                                                   facts.get("openssl")),
          "metric %r, version %r" % (m and m.group(0), version.stdout))
    # A build that names jemalloc allocates with it: the running server has it mapped (its
    # served request costs 7.8% more instructions on glibc's malloc, docs/performance.md).
    if facts.get("jemalloc"):
        with open("/proc/%d/maps" % srv.proc.pid) as f:
            check("serve: a build with jemalloc runs on it", "libjemalloc" in f.read())
    end = subprocess.run(["openssl", "x509", "-noout", "-enddate", "-dateopt", "iso_8601",
                          "-in", A.crt], capture_output=True, text=True, timeout=30).stdout
    want = calendar.timegm(time.strptime(end.strip().split("=", 1)[1], "%Y-%m-%d %H:%M:%SZ"))
    m = re.search(r"^gpuadmit_certificate_expiry_timestamp_seconds (\d+)$", text, re.M)
    check("metrics port: gpuadmit_certificate_expiry_timestamp_seconds is the cert's notAfter",
          m is not None and int(m.group(1)) == want, "metric %r, openssl %r" % (m and m.group(0),
                                                                                end))
    srv.proc.send_signal(signal.SIGTERM)
    try:
        rc = srv.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        rc = None
    check("serve --metrics-listen: SIGTERM exits 0 within 10 s", rc == 0, "rc %r" % rc)


def gauges_of(text):
    """{(name, frozenset of label pairs): value} of the inventory gauges in a /metrics text."""
    out = {}
    for m in re.finditer(r'^(gpuadmit_(?:cluster_resource_[a-z]+|mig_stranded_slices))'
                         r'\{([^}]*)\} (\S+)$', text, re.M):
        labels = frozenset(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        out[(m.group(1), labels)] = float(m.group(3))
    return out


def check_inventory_gauges(text, per_node):
    """Issue 17's inventory gauges for the demo cluster: gpu-small has 28 1g.10gb (6 used),
    gpu-medium 4 1g.10gb (1 used) and 12 2g.20gb (5 used: the Succeeded finetune holds none);
    qwen-eval waits for a 2g.20gb, marked Unschedulable, so it is counted on no node, and the free
    1g.10gb, which it cannot use, are stranded."""
    got = gauges_of(text)
    where = " (--metrics-per-node)" if per_node else ""
    want = {}
    for resource, values in (("nvidia.com/gpu", (0, 0, 0, 0, 0)),
                             ("nvidia.com/mig-1g.10gb", (32, 7, 0, 0, 25)),
                             ("nvidia.com/mig-2g.20gb", (12, 5, 0, 0, 7))):
        for state, v in zip(("allocatable", "used", "queued", "reserved", "free"), values):
            want[("gpuadmit_cluster_resource_" + state,
                  frozenset({("resource", resource)}))] = v
    want[("gpuadmit_mig_stranded_slices", frozenset({("profile", "1g.10gb")}))] = 25
    want[("gpuadmit_mig_stranded_slices", frozenset({("profile", "2g.20gb")}))] = 0
    if per_node:
        for node, resource, state, v in (
                ("gpu-medium", "nvidia.com/mig-2g.20gb", "allocatable", 12),
                ("gpu-medium", "nvidia.com/mig-2g.20gb", "used", 5),
                ("gpu-medium", "nvidia.com/mig-2g.20gb", "free", 7),
                ("gpu-medium", "nvidia.com/mig-1g.10gb", "free", 3),
                ("gpu-small", "nvidia.com/mig-1g.10gb", "used", 6),
                ("gpu-small", "nvidia.com/mig-1g.10gb", "free", 22)):
            want[("gpuadmit_cluster_resource_" + state,
                  frozenset({("node", node), ("resource", resource)}))] = v
        want[("gpuadmit_mig_stranded_slices",
              frozenset({("node", "gpu-small"), ("profile", "1g.10gb")}))] = 22
        want[("gpuadmit_mig_stranded_slices",
              frozenset({("node", "gpu-medium"), ("profile", "1g.10gb")}))] = 3
    wrong = {"%s%s" % (k[0], dict(k[1])): (got.get(k), v) for k, v in want.items()
             if got.get(k) != v}
    check("/metrics%s: the demo cluster's inventory gauges" % where, not wrong,
          "(got, want): %r" % wrong)
    has_node = any(("node" in dict(k[1])) for k in got)
    check("/metrics%s: per-node series %s" % (where, "present" if per_node else "absent"),
          has_node == per_node)
    m = re.search(r"^gpuadmit_inventory_last_update_timestamp_seconds (\d+)$", text, re.M)
    check("/metrics%s: gpuadmit_inventory_last_update_timestamp_seconds is recent" % where,
          m is not None and abs(int(m.group(1)) - time.time()) < 120, m and m.group(0))


def case_metrics_per_node(demo):
    """serve --metrics-per-node: the inventory gauges also per node, with a node label."""
    srv = Server(demo, "metrics-per-node", extra=("--metrics-per-node",))
    if not check("serve --metrics-per-node: ready", srv.ready, srv.stderr()[-500:]):
        return
    conn = srv.conn(5)
    try:
        status, body = get(conn, "/metrics")
    finally:
        conn.close()
    check("serve --metrics-per-node: GET /metrics 200", status == 200, status)
    check_inventory_gauges(body.decode(), per_node=True)
    srv.proc.kill()


class ConfigMapMount:
    """A directory as the kubelet mounts a ConfigMap: policy.yaml -> ..data/policy.yaml and
    ..data -> ..<version>, swapped with one rename per update."""

    def __init__(self, text):
        self.dir, self.versions = os.path.join(A.tmp, "policy-mount"), 0
        os.mkdir(self.dir)
        self.publish(text)
        os.symlink("..data/policy.yaml", os.path.join(self.dir, "policy.yaml"))
        self.path = os.path.join(self.dir, "policy.yaml")

    def publish(self, text):
        self.versions += 1
        version = "..2026_01_01_00_00_%02d.000000001" % self.versions
        os.mkdir(os.path.join(self.dir, version))
        with open(os.path.join(self.dir, version, "policy.yaml"), "w") as f:
            f.write(text)
        tmp = os.path.join(self.dir, "..data_tmp")
        os.symlink(version, tmp)
        os.rename(tmp, os.path.join(self.dir, "..data"))


def metric(srv, name):
    conn = srv.conn(5)
    try:
        status, body = get(conn, "/metrics")
    finally:
        conn.close()
    m = re.search(r"^%s (\d+)$" % re.escape(name), body.decode(), re.M) if status == 200 else None
    return int(m.group(1)) if m else None


def wait_metric(srv, name, want):
    """Polls /metrics until `name` reads `want`; 10 s at most (serve polls the file each second)."""
    deadline, got = time.monotonic() + 10, None
    while time.monotonic() < deadline:
        got = metric(srv, name)
        if got == want:
            return True, got
        time.sleep(0.1)
    return False, got


def wait_stderr(srv, text):
    """Polls the server's stderr until it holds `text`; 5 s at most. Info lines are held up to
    100 ms before they are written together, so one may come after the answer that follows it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if text in srv.stderr():
            return True
        time.sleep(0.05)
    return text in srv.stderr()


def case_policy_reload(demo):
    with open(A.policy) as f:
        shipped = f.read()
    mount = ConfigMapMount(shipped)
    srv = Server(demo, "reload", mount.path)
    if not check("policy reload: server ready", srv.ready, srv.stderr()[-500:]):
        return
    pod = read_fixture("gpu/kubectl-pod.json")  # namespace "default", one mig-2g.20gb
    status, before = post(srv, pod)
    check("policy reload: the pod is patched before", status == 200 and patch_ops(before),
          "status %d, body %r" % (status, before[:300]))

    mount.publish(shipped.replace("\nfailureMode: open\n", "\nfailureMode: sometimes\n", 1))
    ok, got = wait_metric(srv, "gpuadmit_policy_reload_failures_total", 1)
    check("policy reload: a bad version is counted", ok, "metric %r" % got)
    status, after = post(srv, pod)
    check("policy reload: a bad version changes no answer",
          status == 200 and patch_ops(after) == patch_ops(before),
          "status %d, body %r" % (status, after[:300]))
    warned = [l for l in srv.stderr().splitlines() if "level=warn" in l and "policy reload" in l]
    check("policy reload: a warning names the file and the line:col",
          len(warned) == 1 and ("error=\"%s:" % mount.path) in warned[0]
          and "failureMode must be one of open, closed, not" in warned[0], "%r" % warned)
    check("policy reload: nothing counted as applied", metric(srv, "gpuadmit_policy_reloads_total")
          == 0, "%r" % metric(srv, "gpuadmit_policy_reloads_total"))

    mount.publish(shipped.replace("  - kube-system\n", "  - kube-system\n  - default\n", 1))
    ok, got = wait_metric(srv, "gpuadmit_policy_reloads_total", 1)
    check("policy reload: a good version is counted", ok, "metric %r" % got)
    status, body = post(srv, pod)
    resp = json.loads(body).get("response", {}) if status == 200 else {}
    check("policy reload: the newly exempt namespace passes untouched",
          status == 200 and resp.get("allowed") is True and "patch" not in resp,
          "status %d, body %r" % (status, body[:300]))
    check("policy reload: info line", wait_stderr(srv, "msg=\"policy reloaded\""),
          srv.stderr()[-500:])


def case_inventory():
    """`inventory` joins dcgm-exporter metrics to nodes through the exporter pod's nodeName."""
    with open(os.path.join(A.src, "manifests/examples/demo-cluster.json")) as f:
        c = json.load(f)
    c["items"].append({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "nvidia-dcgm-exporter-s228n", "namespace": "gpu-operator"},
                       "spec": {"nodeName": "gpu-small",
                                "containers": [{"name": "exporter", "image": "dcgm-exporter"}]},
                       "status": {"phase": "Running"}})
    cluster = os.path.join(A.tmp, "with-exporter.json")
    with open(cluster, "w") as f:
        json.dump(c, f)
    dcgm = os.path.join(A.src, "tests/fixtures/dcgm/tesla-t4-x2-one-workload-pod-labels.prom")
    p = subprocess.run([A.gpuadmit, "inventory", "--cluster", cluster, "--dcgm-file", dcgm,
                        "-o", "json"], capture_output=True, text=True, timeout=30)
    rows = {r["node"]: r for r in json.loads(p.stdout)} if p.returncode == 0 else {}
    small = rows.get("gpu-small", {})
    # The fixture's two T4s: 0% busy, 128 + 5 MiB used of 29,919 MiB.
    check("inventory: metrics joined via the exporter pod",
          small.get("gpuUtilizationPercent") == 0 and small.get("gpuMemory") == "133/29919Mi"
          and small.get("resources", {}).get(MIG1, {}).get("free") == 22
          and "gpuUtilizationPercent" not in rows.get("gpu-medium", {"gpuUtilizationPercent": 1}),
          "rc %d, gpu-small %r, stderr %r" % (p.returncode, small, p.stderr[-300:]))


def case_dra():
    """A cluster file of DRA objects: `inventory` counts the devices and says they are DRA's;
    `review --explain` writes a claim template's MIG request as firstAvailable, with its trail."""
    cluster = os.path.join(A.src, "tests/fixtures/dra/seed-cluster.json")
    p = subprocess.run([A.gpuadmit, "inventory", "--cluster", cluster, "-o", "json"],
                       capture_output=True, text=True, timeout=30)
    rows = {r["node"]: r for r in json.loads(p.stdout)} if p.returncode == 0 else {}
    medium = rows.get("h200-medium", {}).get("resources", {}).get(MIG2, {})
    check("dra inventory: h200-medium's 2g.20gb from DRA, one held by a claim",
          medium == {"allocatable": 12, "used": 1, "queued": 0, "free": 11, "source": "dra"},
          "rc %d, %r, stderr %r" % (p.returncode, medium, p.stderr[-300:]))
    spec = {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "mig.nvidia.com", "count": 1, "selectors": [{"cel": {
            "expression": "device.attributes['gpu.nvidia.com'].profile == '2g.20gb'"}}]}}]}}
    review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "dra-1", "namespace": "ml", "operation": "CREATE",
        "kind": {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaimTemplate"},
        "resource": {"group": "resource.k8s.io", "version": "v1",
                     "resource": "resourceclaimtemplates"},
        "object": {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
                   "metadata": {"name": "mig", "namespace": "ml"}, "spec": {"spec": spec}}}}
    p = subprocess.run([A.gpuadmit, "review", "--policy",
                        os.path.join(A.src, "manifests/examples/policy.yaml"), "--cluster",
                        cluster, "--explain", "-"], input=json.dumps(review),
                       capture_output=True, text=True, timeout=30)
    patch = []
    if p.returncode == 0:
        response = json.loads(p.stdout)["response"]
        patch = json.loads(base64.b64decode(response.get("patch", "W10=")))
    added = [op for op in patch if op["path"].endswith("/firstAvailable")]
    check("dra review: the template's request becomes firstAvailable 2g-20gb, 1g-10gb",
          len(added) == 1 and [s["name"] for s in added[0]["value"]] == ["2g-20gb", "1g-10gb"],
          "rc %d, patch %r" % (p.returncode, patch))
    check("dra review: --explain says the chain and the list written",
          "chain 1g.10gb" in p.stderr and "firstAvailable 2g.20gb,1g.10gb" in p.stderr,
          p.stderr[-400:])


def t4_cluster(name, exporter_node):
    """Two copies of the recorded T4 node (gpu-t4-a, gpu-t4-b) and the recorded dcgm-exporter's
    pod (the metrics' host label is its name) on `exporter_node`."""
    import yaml
    with open(os.path.join(A.src, "tests/fixtures/nodes/tesla-t4-x2-gpu-2-kubectl-edit.yaml")) as f:
        t4 = yaml.safe_load(f)
    items = []
    for node_name in ("gpu-t4-a", "gpu-t4-b"):
        node = copy.deepcopy(t4)
        node["metadata"]["name"] = node_name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = node_name
        items.append(node)
    items.append({"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "nvidia-dcgm-exporter-s228n", "namespace": "gpu-operator"},
                  "spec": {"nodeName": exporter_node,
                           "containers": [{"name": "exporter", "image": "dcgm-exporter"}]},
                  "status": {"phase": "Running"}})
    path = os.path.join(A.tmp, name + ".json")
    with open(path, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    return path


def preferred_hosts(body):
    """The hostnames a review answer's patch prefers."""
    ops = patch_ops(body) or []
    return [t["preference"]["matchExpressions"][0]["values"][0] for o in ops
            if o["path"] == "/spec/affinity"
            for t in o["value"]["nodeAffinity"].get(
                "preferredDuringSchedulingIgnoredDuringExecution", [])
            if t["preference"]["matchExpressions"][0]["key"] == "kubernetes.io/hostname"]


def case_metrics():
    """Placement reads dcgm-exporter metrics, joined to nodes through the exporter pod: in
    `review --explain --dcgm-file` (the node selection block) and in `serve --dcgm-file`."""
    dcgm = os.path.join(A.src, "tests/fixtures/dcgm/tesla-t4-x2-one-workload-pod-labels.prom")
    review = os.path.join(A.src, "tests/fixtures/gpu/kubectl-pod-whole-gpu.json")
    cluster = t4_cluster("t4", "gpu-t4-b")
    p = subprocess.run([A.gpuadmit, "review", "--policy", A.policy, "--cluster", cluster,
                        "--dcgm-file", dcgm, "--explain", review],
                       capture_output=True, text=True, timeout=30)
    lines = p.stderr.splitlines()
    # Both nodes have 2 idle T4s (the recorded ones: 0 % busy, 128 and 5 MiB of ~15 GiB used); at
    # equal idle counts and utilisation the name decides.
    check("review --explain --dcgm-file: the node selection block with metrics",
          p.returncode == 0 and "=== GPU Node Selection ===" in lines
          and "  gpu-t4-a: 2/2 free, idle 2, no metrics" in lines
          and "  gpu-t4-b: 2/2 free, idle 2, avg util 0.0%, avg mem 0.4% (ranked lower)" in lines
          and "Selected node 'gpu-t4-a': 2/2 free, idle 2, no metrics" in lines,
          "rc %d, stderr %r" % (p.returncode, p.stderr[-800:]))
    check("review --explain: stdout is still the answer",
          p.returncode == 0 and preferred_hosts(p.stdout.encode()) == ["gpu-t4-a"],
          "stdout %r" % p.stdout[:300])
    # The recorded exporter's GPUs made busy (95 %), and its pod on gpu-t4-a: gpu-t4-b now has
    # the idle GPUs, which only the metrics, joined through the pod, can tell.
    with open(dcgm) as f:
        busy_text = re.sub(r"^(DCGM_FI_DEV_GPU_UTIL\{.*\}) 0$", r"\1 95", f.read(), flags=re.M)
    busy = os.path.join(A.tmp, "t4-busy.prom")
    with open(busy, "w") as f:
        f.write(busy_text)
    busy_cluster = t4_cluster("t4-busy", "gpu-t4-a")
    p = subprocess.run([A.gpuadmit, "review", "--policy", A.policy, "--cluster", busy_cluster,
                        "--dcgm-file", busy, review], capture_output=True, timeout=30)
    check("review --dcgm-file: busy GPUs steer the pod elsewhere",
          p.returncode == 0 and preferred_hosts(p.stdout) == ["gpu-t4-b"],
          "rc %d, stdout %r" % (p.returncode, p.stdout[:300]))
    srv = Server(busy_cluster, "metrics", extra=["--dcgm-file", busy])
    if not check("serve --dcgm-file: ready", srv.ready, srv.stderr()[-500:]):
        return
    hosts = []
    for _ in range(40):  # the first poll runs right after start: 50 ms steps, 2 s at most
        status, body = post(srv, read_fixture("gpu/kubectl-pod-whole-gpu.json"))
        hosts = preferred_hosts(body) if status == 200 else []
        if hosts == ["gpu-t4-b"]:
            break
        time.sleep(0.05)
    check("serve --dcgm-file: placement reads the metrics", hosts == ["gpu-t4-b"],
          "preferred %r, stderr %r" % (hosts, srv.stderr()[-500:]))
    srv.proc.kill()


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    A = ap.parse_args()
    A.gpuadmit, A.src = os.path.abspath(A.gpuadmit), os.path.abspath(A.source_dir)
    tmp = tempfile.TemporaryDirectory(prefix="gpuadmit-e2e-")
    atexit.register(tmp.cleanup)
    atexit.register(kill_all)  # runs first: processes die before their files go
    A.tmp = tmp.name
    # The shipped policy with the most-idle strategy: case 1 compares serve, whose ledger keeps
    # the reservations of every review before, with a fresh `review` process, which only agree
    # where those reservations move no choice (most-idle keeps picking the freest node; the
    # shipped first-fit fills the first node); case 8 is about GPU metrics, which only most-idle
    # and score read.
    with open(os.path.join(A.src, "manifests/examples/policy.yaml")) as f:
        shipped = f.read()
    if "\n  strategy: first-fit\n" not in shipped:
        sys.exit("serve_test.py: the shipped policy no longer says strategy: first-fit")
    A.policy = os.path.join(A.tmp, "policy.yaml")
    with open(A.policy, "w") as f:
        f.write(shipped.replace("\n  strategy: first-fit\n", "\n  strategy: most-idle\n"))
    subprocess.run([os.path.join(A.src, "certs/gen-certs.sh"), "--out", A.tmp], check=True,
                   capture_output=True, timeout=60)
    A.crt, A.key = os.path.join(A.tmp, "tls.crt"), os.path.join(A.tmp, "tls.key")
    A.ctx = ssl.create_default_context(cafile=os.path.join(A.tmp, "ca.crt"))
    demo = os.path.join(A.src, "manifests/examples/demo-cluster.json")
    exhausted = make_cluster("exhausted", [("gpu-medium", MIG2, 7)])
    full = make_cluster("full", [("gpu-medium", MIG2, 7), ("gpu-small", MIG1, 22),
                                 ("gpu-medium", MIG1, 3)])
    try:
        servers = [Server(c, n) for c, n in ((exhausted, "exhausted"), (demo, "demo"),
                                              (full, "full"))]
        if all(check("serve %s: ready" % s.name, s.ready, s.stderr()[-500:])
               for s in servers):
            case_fixtures(servers[0])
            case_fallback(*servers)
            case_bad_input(servers[0])
            case_keep_alive(servers[0])
        case_drain(exhausted)
        case_policy_reload(demo)
        case_cli()
        case_metrics_listen(demo)
        case_metrics_per_node(demo)
        case_inventory()
        case_dra()
        case_metrics()
    finally:
        kill_all()
    return summary()


if __name__ == "__main__":
    sys.exit(main())
