#!/usr/bin/python3
"""Re-capture the raw `kubectl ... --dry-run=client -o json` outputs that
make_gpu_reviews.py turns into GPU AdmissionReviews.

Writes tests/fixtures/gpu/kubectl-raw/{pod,deployment,job,cronjob}.json and
kubectl-version.txt.

`kubectl create deployment|job|cronjob --dry-run=client` need no cluster, but
`kubectl run --dry-run=client` still does API discovery (GET /api, /apis).
So this script starts a tiny local discovery-only HTTP server (stdlib only,
127.0.0.1, no network needed) and points a throw-away KUBECONFIG at it; nothing
is ever created, the server answers only discovery GETs.

Usage: /usr/bin/python3 tests/tools/capture_kubectl_raw.py [--kubectl PATH]
"""
import argparse
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(REPO, "tests", "fixtures", "gpu", "kubectl-raw")
IMAGE = "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"

COMMANDS = {
    "pod.json": ["run", "gpu-pod", "--image=" + IMAGE],
    "deployment.json": ["create", "deployment", "gpu-deploy", "--image=" + IMAGE, "--replicas=3"],
    "job.json": ["create", "job", "gpu-job", "--image=" + IMAGE],
    "cronjob.json": ["create", "cronjob", "gpu-cron", "--image=" + IMAGE, "--schedule=*/5 * * * *"],
}

DISCOVERY = {
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:0"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
        {"name": "batch", "versions": [{"groupVersion": "batch/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "batch/v1", "version": "v1"}}]},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["po"]}]},
    "/apis/apps/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
        {"name": "deployments", "singularName": "deployment", "namespaced": True, "kind": "Deployment",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["deploy"]}]},
    "/apis/batch/v1": {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "batch/v1", "resources": [
        {"name": "jobs", "singularName": "job", "namespaced": True, "kind": "Job",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
        {"name": "cronjobs", "singularName": "cronjob", "namespaced": True, "kind": "CronJob",
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"], "shortNames": ["cj"]}]},
}


class Discovery(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        path = self.path.split("?", 1)[0]
        body = DISCOVERY.get(path)
        if body is None:
            self.send_response(404)
            self.send_header("Content-Type", "application/json")
            data = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":404}'
        else:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            data = json.dumps(body).encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):  # kubectl --dry-run=client must never send anything
        self.send_response(405)
        self.end_headers()
        sys.stderr.write("capture_kubectl_raw: unexpected POST %s\n" % self.path)

    def log_message(self, *a):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kubectl", default="kubectl")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    port = srv.server_address[1]
    os.makedirs(args.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        kc = os.path.join(tmp, "kubeconfig")
        with open(kc, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters:
- name: dummy
  cluster: {{server: "http://127.0.0.1:{port}"}}
users:
- name: dummy
  user: {{}}
contexts:
- name: dummy
  context: {{cluster: dummy, user: dummy, namespace: default}}
current-context: dummy
""")
        env = dict(os.environ, KUBECONFIG=kc, HOME=tmp)
        for name, argv in COMMANDS.items():
            cmd = [args.kubectl] + argv + ["--dry-run=client", "-o", "json"]
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if p.returncode != 0:
                sys.stderr.write("capture_kubectl_raw: %s failed: %s\n" % (" ".join(cmd), p.stderr.strip()))
                return 1
            json.loads(p.stdout)  # must be JSON
            with open(os.path.join(args.out, name), "w") as f:
                f.write(p.stdout)
            print("wrote", os.path.join(args.out, name), "<-", " ".join(cmd[1:]))
        v = subprocess.run([args.kubectl, "version", "--client"], env=env, capture_output=True, text=True)
        with open(os.path.join(args.out, "kubectl-version.txt"), "w") as f:
            f.write(v.stdout)
            for name, argv in COMMANDS.items():
                f.write("%s: kubectl %s --dry-run=client -o json\n" % (name, " ".join(
                    a if " " not in a else "'" + a + "'" for a in argv)))
    srv.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
