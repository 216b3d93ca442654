#!/usr/bin/python3
"""The status page in a real browser: `gpuadmit serve` on 127.0.0.1, headless Chromium.

Usage: status_browser_test.py --gpuadmit PATH --source-dir REPO_ROOT --artifacts DIR

Hermetic: certificates, the DCGM file and Chromium's profile live in a temporary directory,
servers listen on OS-chosen free ports of 127.0.0.1, and every process started is killed on the
way out. The server reads the demo cluster and one DCGM reading for its node gpu-small; the test
sends it two reviews, one of a pod whose name is markup meant to run in the page, then checks:
  1. over TLS and on --metrics-listen: /status (text/html, Content-Security-Policy
     default-src 'self'), /status.css, /status.json, 400 on a bad query, 405 on POST;
  2. /status.json: the nodes, MIG profiles and both decisions the test created;
  3. Chromium (`--headless --dump-dom`) renders the page: the DOM has every node, each MIG
     profile's row, both decisions, the GPU charts of gpu-small; the hostile name is text (no
     element it tried to create exists, and the title it tried to set is unchanged);
  4. the filter: ?node=gpu-small&per_page=1 shows that node alone, page 1 of 1;
  GET /report and /report.json say what `gpuadmit report` says of the same files;
  5. a screenshot of the page is saved in --artifacts (status.png).
Exit 77 (skipped) when no chromium is installed. Prints `ok - NAME` / `not ok - NAME: REASON`,
then `N passed, M failed`; exit 1 on failures.
"""
import argparse, atexit, http.client, json, os, re, shutil, socket, ssl, subprocess, sys
import tempfile, time

from checks import check, summary
from loopback import free_port

HOSTILE = "x-<script>document.title='owned'</script><img src=x onerror=\"document.title='owned'\">"
PROCS = []


def kill_all():
    for p in PROCS:
        if p.poll() is None:
            p.kill()
            p.wait()


def request(conn, method, path, body=None, headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    r = conn.getresponse()
    return r.status, dict(r.getheaders()), r.read().decode("utf-8", "replace")


def review_of(src, name, uid):
    with open(os.path.join(src, "tests/fixtures/gpu/kubectl-pod.json")) as f:
        review = json.load(f)
    review["request"]["uid"] = uid
    review["request"]["name"] = name
    review["request"]["object"]["metadata"]["name"] = name
    return json.dumps(review)


def chromium_binary():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium(binary, tmp, url, *mode):
    """Chromium's answer for `url` in `mode` (--dump-dom or --screenshot=...): its stdout."""
    profile = tempfile.mkdtemp(prefix="chromium-", dir=tmp)
    env = dict(os.environ, HOME=profile)
    p = subprocess.run([binary, "--headless", "--no-sandbox", "--disable-gpu",
                        "--disable-dev-shm-usage", "--no-first-run", "--disable-extensions",
                        "--user-data-dir=" + profile, "--window-size=1280,2400",
                        "--hide-scrollbars"] + list(mode) + [url],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--artifacts", required=True)
    a = ap.parse_args()
    binary = chromium_binary()
    if binary is None:
        print("skipped: no chromium on PATH (Debian's package `chromium`; make test installs it)")
        return 77
    src = os.path.abspath(a.source_dir)
    tmp_dir = tempfile.TemporaryDirectory(prefix="gpuadmit-status-")
    atexit.register(tmp_dir.cleanup)
    atexit.register(kill_all)
    tmp = tmp_dir.name
    subprocess.run([os.path.join(src, "certs/gen-certs.sh"), "--out", tmp], check=True,
                   capture_output=True, timeout=60)
    ctx = ssl.create_default_context(cafile=os.path.join(tmp, "ca.crt"))
    # One DCGM reading, the recorded T4 exporter's, named for the demo cluster's gpu-small.
    with open(os.path.join(src, "tests/fixtures/dcgm/tesla-t4-x2-one-workload-pod-labels.prom")) as f:
        dcgm = f.read().replace('Hostname="nvidia-dcgm-exporter-s228n"', 'Hostname="gpu-small"')
    dcgm_path = os.path.join(tmp, "dcgm.prom")
    with open(dcgm_path, "w") as f:
        f.write(dcgm)

    port, metrics_port = free_port(), free_port()
    err_path = os.path.join(tmp, "serve.err")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            [a.gpuadmit, "serve", "--policy", os.path.join(src, "manifests/examples/policy.yaml"),
             "--cluster", os.path.join(src, "manifests/examples/demo-cluster.json"),
             "--tls-cert", os.path.join(tmp, "tls.crt"), "--tls-key", os.path.join(tmp, "tls.key"),
             "--listen", "127.0.0.1:%d" % port, "--metrics-listen", "127.0.0.1:%d" % metrics_port,
             "--dcgm-file", dcgm_path],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    PROCS.append(proc)
    tls = lambda: http.client.HTTPSConnection("127.0.0.1", port, timeout=15, context=ctx)
    plain = lambda: http.client.HTTPConnection("127.0.0.1", metrics_port, timeout=15)
    ready = False
    for _ in range(200):
        if proc.poll() is not None:
            break
        try:
            if request(tls(), "GET", "/readyz")[0] == 200:
                ready = True
                break
        except OSError:
            pass
        time.sleep(0.05)
    if not check("serve: ready", ready, open(err_path).read()[-500:]):
        return summary()
    # The DCGM file is read once at start; wait for it before rendering.
    for _ in range(200):
        if json.loads(request(plain(), "GET", "/status.json")[2])["gpuMetrics"]["nodes"] > 0:
            break
        time.sleep(0.05)

    for name, uid in (("train-0", "uid-train-0"), (HOSTILE, "uid-hostile")):
        status, _, body = request(tls(), "POST", "/mutate", review_of(src, name, uid),
                                  {"Content-Type": "application/json"})
        check("review of %r answered" % name[:12], status == 200, body[:200])

    # 1. The routes, on both listeners.
    for listener, conn in (("tls", tls), ("metrics", plain)):
        status, headers, page = request(conn(), "GET", "/status")
        check("%s: /status is HTML" % listener,
              status == 200 and headers.get("Content-Type") == "text/html; charset=utf-8",
              "%s %s" % (status, headers))
        check("%s: /status has the CSP header" % listener,
              headers.get("Content-Security-Policy") == "default-src 'self'", str(headers))
        check("%s: no script element in the page" % listener, "<script" not in page)
        status, headers, css = request(conn(), "GET", "/status.css")
        check("%s: /status.css" % listener,
              status == 200 and headers.get("Content-Type", "").startswith("text/css") and
              "body" in css, "%s %s" % (status, headers))
        status, _, body = request(conn(), "GET", "/status?page=0")
        check("%s: a bad query is 400 with the reason" % listener,
              status == 400 and "page must be a number" in body, "%s %s" % (status, body))
        status, headers, _ = request(conn(), "POST", "/status", "{}",
                                     {"Content-Type": "application/json"})
        check("%s: POST /status is 405" % listener,
              status == 405 and headers.get("Allow") == "GET", "%s %s" % (status, headers))

    # 2. The JSON.
    status, _, body = request(plain(), "GET", "/status.json")
    model = json.loads(body)
    names = [n["name"] for n in model["nodes"]["items"]]
    check("json: every node", names == ["gpu-medium", "gpu-sim-control-plane", "gpu-small"],
          str(names))
    resources = {r["resource"]: r for r in model["inventory"]["resources"]}
    check("json: MIG profiles with their counts",
          resources.get("nvidia.com/mig-1g.10gb", {}).get("allocatable") == 32 and
          resources.get("nvidia.com/mig-2g.20gb", {}).get("allocatable") == 12, str(resources))
    objects = [d["object"] for d in model["decisions"]["recent"]]
    check("json: both decisions, newest first",
          objects == ["Pod default/" + HOSTILE, "Pod default/train-0"], str(objects))
    train = model["decisions"]["recent"][1]
    check("json: the decision says what was asked and where it went",
          train["asked"] == "nvidia.com/mig-2g.20gb=1" and train["node"] == "gpu-medium" and
          train["outcome"] == "patched" and train["trail"], str(train))
    small = [n for n in model["nodes"]["items"] if n["name"] == "gpu-small"][0]
    check("json: gpu-small's two T4s from the DCGM reading",
          [d["gpu"] for d in small["devices"]] == [0, 1] and
          all(d["window"] for d in small["devices"]), str(small["devices"])[:300])

    # The report over the same state: what `gpuadmit report` says of the same files, and this
    # replica's MIG counters (no fallback in these two reviews).
    status, headers, body = request(tls(), "GET", "/report.json")
    live = json.loads(body) if status == 200 else {}
    cli = json.loads(subprocess.run(
        [a.gpuadmit, "report", "--cluster",
         os.path.join(src, "manifests/examples/demo-cluster.json"), "--dcgm-file", dcgm_path,
         "-o", "json"], check=True, capture_output=True, timeout=60).stdout)
    check("GET /report.json: consolidation and time-slicing as `gpuadmit report` says",
          {k: live.get(k) for k in ("consolidation", "timeSlicing", "thresholds")} ==
          {k: cli[k] for k in ("consolidation", "timeSlicing", "thresholds")},
          "%s %s" % (status, body[:300]))
    check("GET /report.json: MIG pressure from this replica's counters",
          isinstance(live.get("migPressure"), dict), str(live.get("migPressure")))
    status, headers, text = request(plain(), "GET", "/report")
    check("GET /report: the text report",
          status == 200 and headers.get("Content-Type", "").startswith("text/plain") and
          text.startswith("Consolidation opportunities found:") and
          "Recommendation: Node gpu-small is underutilized" in text, "%s %s" % (status, text[:300]))

    # 3. Chromium renders the page.
    url = "http://127.0.0.1:%d/status" % metrics_port
    rc, dom, err = chromium(binary, tmp, url, "--dump-dom")
    if check("chromium: dumps the DOM", rc == 0 and "</html>" in dom, err[-500:]):
        check("chromium: the title is the page's, not the pod's", 
              "<title>gpuadmit status</title>" in dom, re.findall("<title>.*?</title>", dom))
        for node in ("gpu-medium", "gpu-sim-control-plane", "gpu-small"):
            check("chromium: node %s shown" % node, 'data-node="%s"' % node in dom)
        for resource in ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"):
            check("chromium: %s row" % resource, 'data-resource="%s"' % resource in dom)
        check("chromium: the decision of train-0", "Pod default/train-0" in dom)
        check("chromium: the hostile name is shown as text",
              "x-&lt;script&gt;document.title='owned'&lt;/script&gt;&lt;img src=x" in dom,
              [l for l in dom.split("<tr") if "x-" in l][:1])
        check("chromium: the hostile markup made no element",
              "<script" not in dom and "<img" not in dom and "owned</title>" not in dom)
        check("chromium: gpu-small's GPU charts",
              dom.count('<tr class="device">') == 2 and "Tesla T4" in dom and
              "<svg" in dom and "utilisation: min" in dom)
    rc, dom, err = chromium(binary, tmp, url + "?node=gpu-small&per_page=1", "--dump-dom")
    check("chromium: the filter shows gpu-small alone",
          rc == 0 and dom.count('class="node"') == 1 and 'data-node="gpu-small"' in dom and
          "page 1 of 1" in dom, err[-300:])

    # 5. A screenshot, kept.
    os.makedirs(a.artifacts, exist_ok=True)
    shot = os.path.join(os.path.abspath(a.artifacts), "status.png")
    if os.path.exists(shot):
        os.remove(shot)
    rc, _, err = chromium(binary, tmp, url, "--screenshot=" + shot)
    ok = rc == 0 and os.path.exists(shot)
    if ok:
        with open(shot, "rb") as f:
            ok = f.read(8) == b"\x89PNG\r\n\x1a\n" and os.path.getsize(shot) > 10000
    check("chromium: screenshot saved as %s" % shot, ok, err[-300:])
    return summary()


if __name__ == "__main__":
    sys.exit(main())
