#!/usr/bin/python3
"""End-to-end test of `gpuadmit serve` over HTTPS on 127.0.0.1.

Usage: serve_test.py --gpuadmit PATH --source-dir REPO_ROOT

Hermetic: certificates (certs/gen-certs.sh), clusters and scratch files live in a temporary
directory, servers listen on an OS-chosen free port of 127.0.0.1, and every process started is
killed on the way out. Cases:
  1. fixtures: every complete AdmissionReview in tests/fixtures/admission and tests/fixtures/gpu
     answers 200, passes tests/tools/check_patch.py, and equals `gpuadmit review` byte for byte;
  2. seed 003: MIG fallback 2g.20gb -> 1g.10gb on Pod/Deployment/Job/CronJob, idempotent on its
     own output, only a reservation annotation when 2g is free, a warning when nothing smaller is free either;
  3. bad input (tests/fixtures/bad, statuses from its README), 413, 415, charset, still serving;
  4. keep-alive: 20 reviews on one connection;
  5. SIGTERM drain under 16 busy and 8 idle connections: no partial answers, exit 0 in 10 s;
  6. check-policy and serve start-up errors (exit codes 0/1/2/3, line:col messages).
Prints `ok - NAME` / `not ok - NAME: REASON` per check, then `N passed, M failed`; exit 1 on failures.
"""
import argparse, atexit, base64, copy, glob, http.client, json, os, re, signal, socket, ssl
import subprocess, sys, tempfile, threading, time

import jsonpatch

MIG2, MIG1 = "nvidia.com/mig-2g.20gb", "nvidia.com/mig-1g.10gb"
FALLBACK = "gpuadmit.io/fallback"
RESERVATION = "gpuadmit.io/reservation"
RESULTS = {"passed": 0, "failed": 0}
PROCS = []
A = None  # parsed arguments plus paths, set in main()


def check(name, ok, reason=""):
    if ok:
        RESULTS["passed"] += 1
        print("ok - %s" % name)
    else:
        RESULTS["failed"] += 1
        print("not ok - %s: %s" % (name, reason))
    sys.stdout.flush()
    return ok


def kill_all():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """One `gpuadmit serve` on a free 127.0.0.1 port; stderr goes to a file."""

    def __init__(self, cluster, name):
        self.cluster, self.name = cluster, name
        for _ in range(2):  # a second try with a new port when the first one was taken (exit 3)
            self.port = free_port()
            self.err_path = os.path.join(A.tmp, "serve-%s-%d.err" % (name, self.port))
            self.err = open(self.err_path, "wb")
            self.proc = subprocess.Popen(
                [A.gpuadmit, "serve", "--policy", A.policy, "--cluster", cluster, "--tls-cert",
                 A.crt, "--tls-key", A.key, "--listen", "127.0.0.1:%d" % self.port],
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
    for fx in ("kubectl-pod", "kubectl-deployment", "kubectl-job", "kubectl-cronjob"):
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
        again = copy.deepcopy(review)
        again["request"]["object"] = obj
        status, body = post(exhausted, again)
        check(name + ": idempotent", status == 200 and patch_ops(body) is None,
              "status %d, second patch %r" % (status, patch_ops(body) if status == 200 else body))
    pod = read_fixture("gpu/kubectl-pod.json")
    status, body = post(demo, pod)
    ops = patch_ops(body) if status == 200 else None
    # Free: the request stays as it is; the only change is the reservation annotation.
    check("seed 003: 2g.20gb free -> request unchanged, device reserved",
          status == 200 and ops == [{"op": "add", "path": "/metadata/annotations",
                                     "value": {RESERVATION: json.loads(pod)["request"]["uid"]}}],
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


def case_drain(cluster):
    srv = Server(cluster, "drain")
    if not check("drain: server ready", srv.ready, srv.stderr()[-500:]):
        return
    pod, idle = read_fixture("gpu/kubectl-pod.json"), [srv.conn() for _ in range(8)]
    for c in idle:
        c.connect()
    probe = srv.conn(5)
    check("drain: /readyz 200 before the signal", get(probe, "/readyz")[0] == 200, "")
    barrier, stop = threading.Barrier(17, timeout=15), threading.Event()
    answered, unsent, unanswered, bad = [0] * 16, [0] * 16, [0] * 16, []

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

    threads = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(16)]
    for t in threads:
        t.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        check("drain: 16 busy connections served", False, "not all workers got an answer: %s"
              % bad)
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
    check("drain: no partial or wrong answers", not bad and not any(t.is_alive() for t in threads),
          "; ".join(bad) or "a worker hung")
    check("drain: stderr says stopped", "stopped" in srv.stderr(), srv.stderr()[-500:])
    print("# drain: %d answers; then %d refused/closed before sending, %d closed with no answer "
          "byte; readyz %r after %.3f s; exit after %.2f s"
          % (sum(answered), sum(unsent), sum(unanswered), ready, t_ready, took))


def case_cli():
    g = A.gpuadmit
    p = subprocess.run([g, "check-policy", A.policy], capture_output=True, text=True, timeout=30)
    check("check-policy example: exit 0", p.returncode == 0, "rc %d %s" % (p.returncode, p.stderr))
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


def main():
    global A
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    A = ap.parse_args()
    A.gpuadmit, A.src = os.path.abspath(A.gpuadmit), os.path.abspath(A.source_dir)
    A.policy = os.path.join(A.src, "manifests/examples/policy.yaml")
    tmp = tempfile.TemporaryDirectory(prefix="gpuadmit-e2e-")
    atexit.register(tmp.cleanup)
    atexit.register(kill_all)  # runs first: processes die before their files go
    A.tmp = tmp.name
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
        case_cli()
        case_inventory()
    finally:
        kill_all()
    print("%d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
    return 1 if RESULTS["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
