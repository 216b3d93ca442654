#!/usr/bin/env python3
"""Smoke test of the gpuadmit image: started as manifests/base/deployment.yaml starts it.

    tests/image/smoke_test.py --archive build/gpuadmit-0.1.0.oci.tar --source-dir .

In its own container storage (a temporary folder; image/containers.sh with CONTAINERS_ROOT), it
loads the archive and runs `serve` with a read-only root, every capability dropped,
no-new-privileges, uid 65532 with the supplementary group 65532 (the pod's fsGroup), a tmpfs
/tmp, the policy mounted read-only as the ConfigMap is, and the TLS pair read-only with the
Secret's 0440 mode, owned root:65532. Then, on 127.0.0.1 (host network):
  /healthz and /readyz over TLS verified against the dev CA;
  POST /mutate answers byte for byte what `gpuadmit review` prints in the same image;
  the container's files hold no shell, and /usr/bin holds gpuadmit alone;
  SIGTERM: exit 0 within 10 s.
Where podman cannot run a container at all (the OCI runtime, cgroups or namespaces refuse), it
says why and exits 77 (skipped); every other failure exits 1.
"""

import argparse
import http.client
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from checks import check, summary  # noqa: E402

SKIP = 77
# What podman or runc print when they cannot start any container here, as opposed to a
# container that started and failed.
RUNTIME_TROUBLE = ("OCI runtime", "runc", "crun", "cgroup", "namespace", "unshare",
                   "newuidmap", "operation not permitted", "permission denied")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Podman:
    def __init__(self, source_dir, root):
        self.wrapper = os.path.join(source_dir, "image", "containers.sh")
        self.env = dict(os.environ, CONTAINERS_ROOT=root)

    def run(self, *args, timeout=120, stdin=None):
        return subprocess.run([self.wrapper, "podman", *args], env=self.env, input=stdin,
                              capture_output=True, timeout=timeout)


def https(port, ctx, method, path, body=None):
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
    try:
        conn.request(method, path, body=body,
                     headers={"Content-Type": "application/json"} if body else {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--archive", required=True, help="build/gpuadmit-VERSION.oci.tar")
    ap.add_argument("--source-dir", required=True)
    A = ap.parse_args()
    src = os.path.abspath(A.source_dir)
    if shutil.which("podman") is None:
        print("skip: podman is not installed")
        return SKIP
    tmp = tempfile.mkdtemp(prefix="gpuadmit-image-")
    podman = Podman(src, os.path.join(tmp, "containers"))
    name = "gpuadmit-smoke-%d" % os.getpid()
    try:
        p = podman.run("load", "-q", "-i", os.path.abspath(A.archive))
        if not check("podman load", p.returncode == 0, p.stderr.decode()[-500:]):
            return summary()
        image = p.stdout.decode().strip().rsplit(": ", 1)[-1]  # "Loaded image: localhost/..."

        # Can podman run a container at all here? The image's own `version` is the probe.
        p = podman.run("run", "--rm", image, "version")
        if p.returncode != 0:
            err = p.stderr.decode()
            if any(t.lower() in err.lower() for t in RUNTIME_TROUBLE) and \
                    b"gpuadmit" not in p.stdout:
                print("skip: podman cannot run containers here: %s" % err.strip()[-500:])
                return SKIP
        check("image: `gpuadmit version` runs", p.returncode == 0 and
              p.stdout.startswith(b"gpuadmit "), (p.stdout + p.stderr).decode()[-500:])

        # The mounts, as the kubelet makes them.
        conf, tls = os.path.join(tmp, "conf"), os.path.join(tmp, "tls")
        os.makedirs(os.path.join(conf, "tls"))
        shutil.copy(os.path.join(src, "manifests/examples/policy.yaml"), conf)
        shutil.copy(os.path.join(src, "manifests/examples/demo-cluster.json"), conf)
        review_in = os.path.join(conf, "review.json")
        shutil.copy(os.path.join(src, "tests/fixtures/gpu/kubectl-pod.json"), review_in)
        for f in os.listdir(conf):
            if f != "tls":
                os.chmod(os.path.join(conf, f), 0o644)
        subprocess.run([os.path.join(src, "certs/gen-certs.sh"), "--out", tls], check=True,
                       capture_output=True, timeout=60)
        for f in ("tls.crt", "tls.key"):
            os.chown(os.path.join(tls, f), 0, 65532)  # the Secret's files under fsGroup 65532
            os.chmod(os.path.join(tls, f), 0o440)
        ctx = ssl.create_default_context(cafile=os.path.join(tls, "ca.crt"))

        port, metrics_port = free_port(), free_port()
        pod_like = ["--read-only", "--cap-drop=ALL", "--security-opt=no-new-privileges",
                    "--user=65532:65532", "--group-add=65532", "--tmpfs=/tmp",
                    "--network=host", "-v", conf + ":/etc/gpuadmit:ro",
                    "-v", tls + ":/etc/gpuadmit/tls:ro"]
        flags = ["--policy", "/etc/gpuadmit/policy.yaml",
                 "--cluster", "/etc/gpuadmit/demo-cluster.json"]
        p = podman.run("run", "-d", "--name", name, *pod_like, image, "serve", *flags,
                       "--tls-cert", "/etc/gpuadmit/tls/tls.crt",
                       "--tls-key", "/etc/gpuadmit/tls/tls.key",
                       "--listen", "127.0.0.1:%d" % port,
                       "--metrics-listen", "127.0.0.1:%d" % metrics_port)
        if not check("serve: started as the Deployment starts it", p.returncode == 0,
                     p.stderr.decode()[-500:]):
            return summary()

        ready, why = False, ""
        for _ in range(200):  # 50 ms steps, 10 s at most
            try:
                ready = https(port, ctx, "GET", "/readyz")[0] == 200
            except (OSError, http.client.HTTPException) as e:
                why = "%s: %s" % (type(e).__name__, e)
            if ready:
                break
            state = podman.run("inspect", "-f", "{{.State.Running}}", name).stdout.strip()
            if state != b"true":
                why = "the container stopped: " + podman.run("logs", name).stderr.decode()[-500:]
                break
            time.sleep(0.05)
        check("serve: /readyz 200 over verified TLS", ready, why)
        if not ready:
            return summary()
        check("serve: /healthz 200 over verified TLS",
              https(port, ctx, "GET", "/healthz") == (200, b"ok\n"))

        with open(review_in, "rb") as f:
            body = f.read()
        status, answer = https(port, ctx, "POST", "/mutate", body)
        p = podman.run("run", "--rm", *pod_like, image, "review", *flags,
                       "/etc/gpuadmit/review.json")
        check("POST /mutate answers byte for byte what `gpuadmit review` prints (and a newline)",
              status == 200 and p.returncode == 0 and answer + b"\n" == p.stdout and
              b'"patch"' in answer,
              "serve %d %r\nreview rc %d %r %r" % (status, answer[:300], p.returncode,
                                                   p.stdout[:300], p.stderr[-300:]))

        user = podman.run("inspect", "-f", "{{.Config.User}}", image).stdout.decode().strip()
        check("image: user 65532", user == "65532:65532", "User %r" % user)
        p = podman.run("exec", name, "/bin/sh", "-c", "true")
        check("no shell: exec /bin/sh fails", p.returncode != 0, "rc %d" % p.returncode)
        export = os.path.join(tmp, "fs.tar")
        p = podman.run("export", "-o", export, name)
        names = []
        if p.returncode == 0:
            with tarfile.open(export) as t:
                names = [m.name.lstrip("./") for m in t.getmembers()]
        shells = [n for n in names if os.path.basename(n) in
                  ("sh", "bash", "dash", "busybox", "ash", "zsh")]
        binaries = sorted(n for n in names if n.startswith(("usr/bin/", "bin/", "usr/sbin/",
                                                            "sbin/")))
        check("no shell: the container's files hold none, /usr/bin holds gpuadmit alone",
              names and not shells and binaries == ["usr/bin/gpuadmit"],
              "export rc %d, shells %r, binaries %r" % (p.returncode, shells, binaries))

        t0 = time.monotonic()
        podman.run("kill", "--signal", "TERM", name)
        p = podman.run("wait", name, timeout=30)
        took = time.monotonic() - t0
        code = p.stdout.decode().strip()
        logs = podman.run("logs", name).stderr.decode()
        check("SIGTERM: exit 0 within 10 s", code == "0" and took <= 10.0,
              "exit %r after %.1f s; %s" % (code, took, logs[-300:]))
        check("SIGTERM: the log says stopped", 'msg=stopped' in logs, logs[-300:])
        return summary()
    finally:
        podman.run("rm", "-f", "-t", "0", name)
        podman.run("rmi", "-a", "-f")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
