#!/usr/bin/env python3
"""The capacity queue, live (issue 18): `gpuadmit serve` against the fake API server process
(gpuadmit_fake_api) with a policy whose queue is on.

    tests/e2e/queue_test.py --gpuadmit build/gpuadmit \
        --fake-api build/tests/fakes/gpuadmit_fake_api --source-dir .

The cluster: gpu-a (8 GPUs, empty) and gpu-b (8 GPUs, full), and three pods gated with
gpuadmit.io/capacity in namespace ml, created seconds ago: big (8 GPUs), then small (2), and huge
(16, more than any node has).
  old cluster: against a 1.29 API server, serve refuses the policy and exits 3, saying why;
  lifts: big is released onto gpu-a (gate gone, pinned by node name, annotated), huge at once
    as unplaceable; small waits (gpu-a's room went to big) and gpuadmit_queue_pods says 1;
  admission: a new 8-GPU pod is admitted with the gate and the waiting annotation, no node
    affinity and no reservation;
  reload: the queue turned off, small is released (reason disabled);
  replicas: two `serve --leader-elect` on another fake API with one gated pod that fits: it is
    lifted once, by the leader, and the follower lifts nothing;
  RBAC: the base ClusterRole grants exactly what the lifter uses (checked by
    manifests.kustomize; not here).
The waits poll /metrics and the fake API with deadlines.
"""

import argparse
import base64
import datetime
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from checks import check, summary
from loopback import free_port, wait_for

GATE = "gpuadmit.io/capacity"
TOKEN = "queue-e2e"
PROCS = []


def ago(seconds):
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "512Gi",
                                       "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(name, gpus, created, node_name=None):
    spec = {"containers": [{"name": "c", "image": "busybox",
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}
    if node_name:
        spec["nodeName"] = node_name
    else:
        spec["schedulingGates"] = [{"name": GATE}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ml", "uid": "uid-" + name,
                         "resourceVersion": "50", "creationTimestamp": created},
            "spec": spec,
            "status": {"phase": "Running" if node_name else "Pending"}}


class Api:
    """The fake API server process, and GET on its pods."""

    def __init__(self, fake_api, cluster_path, tmp, version=None):
        self.kubeconfig = os.path.join(tmp, "kubeconfig-%s" % (version or "default"))
        args = [fake_api, "--cluster", cluster_path, "--token", TOKEN,
                "--kubeconfig", self.kubeconfig]
        if version:
            args += ["--version", version]
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        PROCS.append(self.proc)
        line = self.proc.stdout.readline().decode()
        self.ready = line.startswith("ready ")
        self.url = line.split()[1] if self.ready else ""
        text = open(self.kubeconfig).read() if self.ready else ""
        m = re.search(r"certificate-authority: (\S+)", text)
        self.ctx = ssl.create_default_context(cafile=m.group(1)) if m else None

    def pod(self, name):
        host, port = self.url[len("https://"):].split(":")
        c = http.client.HTTPSConnection(host, int(port), timeout=5, context=self.ctx)
        try:
            c.request("GET", "/api/v1/namespaces/ml/pods/" + name,
                      headers={"Authorization": "Bearer " + TOKEN})
            r = c.getresponse()
            return json.loads(r.read()) if r.status == 200 else None
        finally:
            c.close()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def gated(p):
    return any(g.get("name") == GATE for g in (p or {}).get("spec", {}).get("schedulingGates") or [])


def pinned(p):
    terms = (((p or {}).get("spec", {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution", {}).get("nodeSelectorTerms") or []
    return [f for t in terms for f in t.get("matchFields", [])]


def note(p):
    return ((p or {}).get("metadata", {}).get("annotations") or {}).get("gpuadmit.io/queue", "")


class Serve:
    def __init__(self, a, tmp, kubeconfig, policy, crt, key, ctx, elect_id=None):
        self.port, self.ctx = free_port(), ctx
        self.err_path = os.path.join(tmp, "serve-%d.err" % self.port)
        args = [a.gpuadmit, "serve", "--kubeconfig", kubeconfig, "--policy", policy,
                "--tls-cert", crt, "--tls-key", key, "--listen", "127.0.0.1:%d" % self.port]
        if elect_id:
            args += ["--leader-elect", "--leader-election-namespace", "gpuadmit", "--id", elect_id,
                     "--advertise", "127.0.0.1:%d" % self.port,
                     "--leader-elect-lease-duration", "3", "--leader-elect-renew-deadline", "2",
                     "--leader-elect-retry-period", "0.5"]
        with open(self.err_path, "wb") as err:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=err)
        PROCS.append(self.proc)

    def request(self, method, path, body=None):
        c = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=5, context=self.ctx)
        try:
            c.request(method, path, body=body, headers={"Content-Type": "application/json"})
            r = c.getresponse()
            return r.status, r.read().decode()
        finally:
            c.close()

    def ready(self):
        def up():
            try:
                return self.request("GET", "/readyz")[0] == 200
            except (OSError, http.client.HTTPException):
                return False
        return wait_for(lambda: up() or self.proc.poll() is not None, 20) and self.proc.poll() is None

    def metric(self, name):
        try:
            text = self.request("GET", "/metrics")[1]
        except (OSError, http.client.HTTPException):
            return None
        m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
        return float(m.group(1)) if m else None

    def stderr(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")


def review(name, gpus):
    obj = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "ml", "uid": "uid-" + name},
           "spec": {"containers": [{"name": "c", "image": "busybox",
                                    "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}
    return json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "review-" + name, "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "name": name, "namespace": "ml", "operation": "CREATE",
                    "userInfo": {"username": "e2e"}, "object": obj, "dryRun": False}}).encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuadmit", required=True)
    ap.add_argument("--fake-api", required=True)
    ap.add_argument("--source-dir", required=True)
    a = ap.parse_args()
    a.gpuadmit, src = os.path.abspath(a.gpuadmit), os.path.abspath(a.source_dir)
    tmp_dir = tempfile.TemporaryDirectory(prefix="gpuadmit-queue-")
    tmp = tmp_dir.name
    subprocess.run([os.path.join(src, "certs/gen-certs.sh"), "--out", tmp], check=True,
                   capture_output=True, timeout=60)
    crt, key = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
    ctx = ssl.create_default_context(cafile=os.path.join(tmp, "ca.crt"))
    example = open(os.path.join(src, "manifests/examples/policy.yaml")).read()
    queue_off = "queue:\n  enabled: false\n  timeout: 5m\n"
    if not check("the example policy has the queue section this test edits", queue_off in example):
        return summary()
    policy = os.path.join(tmp, "policy.yaml")
    with open(policy, "w") as f:
        f.write(example.replace(queue_off, "queue:\n  enabled: true\n  timeout: 1h\n"))
    policy_on = os.path.join(tmp, "policy-on.yaml")  # stays on: the replicas case
    with open(policy_on, "w") as f:
        f.write(example.replace(queue_off, "queue:\n  enabled: true\n  timeout: 1h\n"))
    cluster = {"apiVersion": "v1", "kind": "List", "items": [
        node("gpu-a"), node("gpu-b"), pod("full-b", 8, ago(60), "gpu-b"),
        pod("big", 8, ago(5)), pod("small", 2, ago(4)), pod("huge", 16, ago(3))]}
    cluster_path = os.path.join(tmp, "cluster.json")
    with open(cluster_path, "w") as f:
        json.dump(cluster, f)
    replicas_cluster = {"apiVersion": "v1", "kind": "List",
                        "items": [node("gpu-a"), pod("solo", 4, ago(2))]}
    replicas_path = os.path.join(tmp, "replicas-cluster.json")
    with open(replicas_path, "w") as f:
        json.dump(replicas_cluster, f)
    try:
        run(a, tmp, cluster_path, policy, crt, key, ctx)
        run_replicas(a, tmp, replicas_path, policy_on, crt, key, ctx)
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
    return summary()


def run(a, tmp, cluster_path, policy, crt, key, ctx):
    # An API server older than 1.30: the policy is refused, serve exits 3 and says why.
    old = Api(a.fake_api, cluster_path, tmp, version="1.29")
    if not check("fake API 1.29: ready", old.ready):
        return
    s = Serve(a, tmp, old.kubeconfig, policy, crt, key, ctx)
    try:
        code = s.proc.wait(20)
    except subprocess.TimeoutExpired:
        code = None
    err = s.stderr()
    check("1.29: serve exits 3", code == 3, "exit %s; %s" % (code, err[-400:]))
    check("1.29: it says the queue needs 1.30 and names the server's version",
          "queue.enabled needs Kubernetes 1.30 or newer" in err and "v1.29.0" in err, err[-400:])
    old.stop()

    api = Api(a.fake_api, cluster_path, tmp)
    if not check("fake API 1.31: ready", api.ready):
        return
    s = Serve(a, tmp, api.kubeconfig, policy, crt, key, ctx)
    if not check("serve with the queue on: ready", s.ready(), s.stderr()[-600:]):
        return

    lifted = wait_for(lambda: s.metric('gpuadmit_queue_lifts_total{reason="capacity"}') == 1 and
                      s.metric('gpuadmit_queue_lifts_total{reason="unplaceable"}') == 1, 20)
    check("lifts: one for capacity, one unplaceable", lifted, s.stderr()[-800:])
    big, small, huge = api.pod("big"), api.pod("small"), api.pod("huge")
    check("big: gate lifted", big is not None and not gated(big), json.dumps(big)[:400])
    check("big: pinned to gpu-a by node name",
          pinned(big) == [{"key": "metadata.name", "operator": "In", "values": ["gpu-a"]}],
          json.dumps(pinned(big)))
    check("big: annotated", note(big).startswith("lifted: capacity on gpu-a after "), note(big))
    check("huge: released as unplaceable, not pinned",
          huge is not None and not gated(huge) and not pinned(huge) and
          note(huge) == "lifted: no node it may use can ever hold it", json.dumps(huge)[:400])
    check("small: still gated (gpu-a's room went to big, gpu-b is full)", gated(small),
          json.dumps(small)[:400])
    check("gpuadmit_queue_pods 1", wait_for(lambda: s.metric("gpuadmit_queue_pods") == 1, 10),
          str(s.metric("gpuadmit_queue_pods")))
    # Info lines are written out within 100 ms.
    check("the log names each lift", wait_for(
        lambda: re.search(r'queue: gate lifted.*pod=ml/big reason=capacity node=gpu-a',
                          s.stderr()) and
        re.search(r'queue: gate lifted.*pod=ml/huge reason=unplaceable', s.stderr()), 5),
        s.stderr()[-800:])

    # The status page counts what the server's snapshot shows gated; big and huge leave it when
    # the watch brings their patched pods back, which may come after the lifter's own count.
    seen = {}

    def small_waits_alone():
        status, body = s.request("GET", "/status.json")
        queue = json.loads(body).get("queue", {}) if status == 200 else {"status": status}
        seen["queue"] = queue
        return (queue.get("enabled") is True and queue.get("waiting") == 1 and
                [p["pod"] for p in queue.get("pods", [])] == ["ml/small"])

    check("/status.json: the queue on, small waiting", wait_for(small_waits_alone, 10),
          json.dumps(seen.get("queue"))[:400])

    # Admission: while small waits, a new 8-GPU pod is gated too (and fits nowhere anyway).
    status, body = s.request("POST", "/mutate", review("new", 8))
    response = json.loads(body).get("response", {}) if status == 200 else {}
    ops = json.loads(base64.b64decode(response["patch"])) if response.get("patch") else []
    check("admission: 200 with a patch", status == 200 and ops, "%d %s" % (status, body[:300]))
    gate_ops = [o for o in ops if o["path"].startswith("/spec/schedulingGates")]
    check("admission: the capacity gate added",
          gate_ops == [{"op": "add", "path": "/spec/schedulingGates", "value": [{"name": GATE}]}],
          json.dumps(ops))
    waiting = [o for o in ops if o["path"] in ("/metadata/annotations/gpuadmit.io~1queue",
                                                "/metadata/annotations")]
    check("admission: the waiting annotation",
          any("waiting" in json.dumps(o.get("value")) for o in waiting), json.dumps(ops))
    check("admission: no node affinity and no reservation",
          not any("affinity" in o["path"] or "reservation" in json.dumps(o) for o in ops),
          json.dumps(ops))

    # The queue turned off: small is released at once, reason disabled.
    with open(policy) as f:
        text = f.read()
    with open(policy + ".new", "w") as f:
        f.write(text.replace("queue:\n  enabled: true\n", "queue:\n  enabled: false\n"))
    os.replace(policy + ".new", policy)
    released = wait_for(lambda: s.metric('gpuadmit_queue_lifts_total{reason="disabled"}') == 1, 20)
    small = api.pod("small")
    check("reload: the queue off releases small", released and small is not None and
          not gated(small) and not pinned(small), json.dumps(small)[:400])
    s.proc.send_signal(signal.SIGTERM)
    try:
        code = s.proc.wait(15)
    except subprocess.TimeoutExpired:
        code = None
    check("SIGTERM: exits 0", code == 0, "exit %s" % code)


def run_replicas(a, tmp, cluster_path, policy, crt, key, ctx):
    """Two replicas with --leader-elect: only the leader lifts, and the pod is lifted once."""
    api = Api(a.fake_api, cluster_path, tmp, version="1.30")
    if not check("replicas: fake API 1.30 ready", api.ready):
        return
    replicas = [Serve(a, tmp, api.kubeconfig, policy, crt, key, ctx, elect_id="r%d" % i)
                for i in range(2)]
    if not check("replicas: both ready", all(r.ready() for r in replicas),
                 "\n".join(r.stderr()[-300:] for r in replicas)):
        return

    def lifts(r):
        return r.metric('gpuadmit_queue_lifts_total{reason="capacity"}') or 0

    check("replicas: solo is lifted", wait_for(lambda: sum(lifts(r) for r in replicas) >= 1, 20),
          "\n".join(r.stderr()[-400:] for r in replicas))
    solo = api.pod("solo")
    check("replicas: solo released and pinned to gpu-a", solo is not None and not gated(solo) and
          pinned(solo) == [{"key": "metadata.name", "operator": "In", "values": ["gpu-a"]}],
          json.dumps(solo)[:400])
    leaders = [r for r in replicas if r.metric("gpuadmit_leader") == 1]
    check("replicas: one leader", len(leaders) == 1, str([r.metric("gpuadmit_leader")
                                                          for r in replicas]))
    check("replicas: the leader lifted it, once; the follower lifted nothing",
          [lifts(r) for r in replicas] == [1 if r in leaders else 0 for r in replicas],
          str([lifts(r) for r in replicas]))


if __name__ == "__main__":
    sys.exit(main())
