#!/usr/bin/python3
"""Serving-certificate rotation under load, end to end, over HTTPS on 127.0.0.1.

Usage: cert_rotation_test.py --gpuadmit PATH --source-dir REPO_ROOT

The certificate and key are mounted the way a Kubernetes Secret volume mounts them: tls.crt and
tls.key are symlinks through `..data`, which points at a timestamped directory, and an update
swaps `..data` atomically. While clients keep reviewing (each on a fresh TLS connection, plus one
kept-alive connection), the pair is rotated; then a bad pair (a key that does not match) is
swapped in. Checks: zero failed requests across the rotation, new handshakes present the new
certificate, the kept-alive connection keeps working, the bad pair is refused with the current
one still presented, and the reload metrics count both. Bounded polls, no fixed sleeps.
"""
import argparse, http.client, json, os, socket, ssl, subprocess, sys, tempfile, threading, time

from checks import check, summary
from loopback import free_port




def make_pair(src, out):
    subprocess.run([os.path.join(src, "certs/gen-certs.sh"), "--out", out], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


def mount(secret, version, crt, key):
    """Points secret/..data at a new ..<version> holding crt and key, as the kubelet does."""
    target = os.path.join(secret, ".." + version)
    os.makedirs(target)
    for src, name in ((crt, "tls.crt"), (key, "tls.key")):
        with open(src, "rb") as f, open(os.path.join(target, name), "wb") as g:
            g.write(f.read())
    tmp = os.path.join(secret, "..data_tmp")
    os.symlink(".." + version, tmp)
    os.rename(tmp, os.path.join(secret, "..data"))
    for name in ("tls.crt", "tls.key"):
        link = os.path.join(secret, name)
        if not os.path.islink(link):
            os.symlink(os.path.join("..data", name), link)


def presented(port):
    """The DER certificate a fresh handshake is shown."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with ctx.wrap_socket(raw) as tls:
            return tls.getpeercert(binary_form=True)


def der(pem_path):
    with open(pem_path) as f:
        pem = f.read()
    first = pem[:pem.index("-----END CERTIFICATE-----") + len("-----END CERTIFICATE-----")]
    return ssl.PEM_cert_to_DER_cert(first)


def metric(port, ctx, name):
    c = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
    try:
        c.request("GET", "/metrics")
        for line in c.getresponse().read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    finally:
        c.close()
    return 0.0


def poll(what, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if what():
            return True
        time.sleep(0.05)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    src = args.source_dir
    tmp = tempfile.mkdtemp(prefix="gpuadmit-certrot-")
    first = make_pair(src, os.path.join(tmp, "first"))
    second = make_pair(src, os.path.join(tmp, "second"))
    secret = os.path.join(tmp, "secret")
    os.makedirs(secret)
    mount(secret, "2026_11_21_first", first + "/tls.crt", first + "/tls.key")

    port = free_port()
    err = open(os.path.join(tmp, "serve.err"), "wb")
    proc = subprocess.Popen(
        [args.gpuadmit, "serve", "--policy", os.path.join(src, "manifests/examples/policy.yaml"),
         "--cluster", os.path.join(src, "manifests/examples/demo-cluster.json"),
         "--tls-cert", os.path.join(secret, "tls.crt"), "--tls-key",
         os.path.join(secret, "tls.key"), "--listen", "127.0.0.1:%d" % port],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    body = open(os.path.join(src, "tests/fixtures/gpu/kubectl-pod.json"), "rb").read()
    try:
        def ready():
            try:
                c = http.client.HTTPSConnection("127.0.0.1", port, timeout=2, context=ctx)
                c.request("GET", "/readyz")
                return c.getresponse().status == 200
            except (OSError, http.client.HTTPException):
                return False
        if not check("serve starts on the mounted pair", poll(ready), "not ready"):
            return
        check("handshakes present the first certificate",
              presented(port) == der(first + "/tls.crt"))

        stop = threading.Event()
        counts = {"ok": 0, "failed": 0, "errors": []}
        lock = threading.Lock()

        def review(conn):
            conn.request("POST", "/mutate", body, {"Content-Type": "application/json"})
            r = conn.getresponse()
            data = r.read()
            return r.status == 200 and json.loads(data)["response"]["allowed"]

        def fresh_connections():
            while not stop.is_set():
                c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
                try:
                    ok = review(c)
                    err_text = "" if ok else "not allowed"
                except Exception as e:  # any failure counts: that is what is measured
                    ok, err_text = False, repr(e)
                finally:
                    c.close()
                with lock:
                    counts["ok" if ok else "failed"] += 1
                    if err_text and len(counts["errors"]) < 5:
                        counts["errors"].append(err_text)

        kept = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
        kept_results = []

        def kept_alive():
            while not stop.is_set():
                try:
                    kept_results.append(review(kept))
                except Exception as e:
                    kept_results.append(False)
                    counts["errors"].append("kept-alive: " + repr(e))

        threads = [threading.Thread(target=fresh_connections) for _ in range(4)]
        threads.append(threading.Thread(target=kept_alive))
        for t in threads:
            t.start()
        poll(lambda: counts["ok"] >= 200)  # load running before the rotation
        mount(secret, "2026_11_21_second", second + "/tls.crt", second + "/tls.key")
        rotated = poll(lambda: presented(port) == der(second + "/tls.crt"))
        before = counts["ok"]
        poll(lambda: counts["ok"] >= before + 200)  # and after it
        stop.set()
        for t in threads:
            t.join()
        kept.close()
        check("new handshakes present the rotated certificate", rotated)
        check("zero failed requests across the rotation (%d answered)" % counts["ok"],
              counts["failed"] == 0 and counts["ok"] >= 400,
              "%d failed, %d ok: %s" % (counts["failed"], counts["ok"], counts["errors"]))
        check("the kept-alive connection kept working across it (%d reviews)" % len(kept_results),
              len(kept_results) > 0 and all(kept_results), counts["errors"])
        check("gpuadmit_certificate_reloads_total counts the rotation",
              metric(port, ctx, "gpuadmit_certificate_reloads_total") >= 1)

        # A bad pair: the first certificate with the second key.
        mount(secret, "2026_11_21_bad", first + "/tls.crt", second + "/tls.key")
        refused = poll(lambda: metric(port, ctx, "gpuadmit_certificate_reload_failures_total") >= 1)
        check("a pair whose key does not match is refused and counted", refused)
        check("the current certificate stays presented after the refusal",
              presented(port) == der(second + "/tls.crt"))
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=ctx)
        check("reviews still answered after the refusal", review(c))
        c.close()
        log = open(os.path.join(tmp, "serve.err"), "rb").read().decode("utf-8", "replace")
        check("a log line says why the pair was refused",
              "serving certificate reload refused" in log and "does not match" in log, log[-500:])
    finally:
        proc.kill()
        proc.wait()
        err.close()
    status = summary()
    if status == 0:
        subprocess.run(["rm", "-rf", tmp])
    sys.exit(status)


if __name__ == "__main__":
    main()
