#!/usr/bin/python3
"""Three `serve --leader-elect` replicas on a real Lease, behind a round-robin balancer (the
Service), called by the real apiserver:

  - the ReplicaSet controller's 20-pod burst asking mig-2g.20gb, spread over the replicas, ends
    12 + 8 with every pod Running: no device counted twice;
  - the leader killed (SIGKILL) after 10 of 30 concurrent pods asking the 12 2g.20gb devices:
    all 30 are created, at most 12 are promised 2g.20gb (the followers decide on their
    share of the free devices until a new leader holds the Lease), and every pod promised a
    device is bound; a pod beyond a follower's share is left unchanged, with a warning;
  - a new leader takes the Lease;
  - a rolling restart of the replicas during a 200-pod burst: 0 pods rejected, all bound.
"""

import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import MIG1, MIG2, PODS, asks, check, log, run  # noqa: E402
from round_robin_proxy import RoundRobinProxy  # noqa: E402

LEASE = "/apis/coordination.k8s.io/v1/namespaces/gpuadmit/leases/gpuadmit"
REPLICAS = 3


def mig_pod(name, labels):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": labels},
            "spec": {"containers": [{"name": "cuda", "image": "cuda",
                                     "resources": {"limits": {MIG2: "1"}}}]}}


def admitted(pod):
    """gpuadmit decided it: a reservation or a fallback annotation, or its placement."""
    annotations = pod["metadata"].get("annotations", {})
    return any(k.startswith("gpuadmit.io/") for k in annotations) or "affinity" in pod["spec"]


def reserved(pod):
    return "gpuadmit.io/reservation" in pod["metadata"].get("annotations", {})


def metric(plane, name, series):
    """`series` on replica `name`'s /metrics (0 when absent)."""
    import re
    import urllib.request
    url = "http://127.0.0.1:%d/metrics" % plane.gpuadmit_ports[name][1]
    with urllib.request.urlopen(url, timeout=5) as r:
        text = r.read().decode()
    m = re.search(r"^%s (\S+)$" % re.escape(series), text, re.M)
    return float(m.group(1)) if m else 0.0


def holder(api):
    return api.get(LEASE).get("spec", {}).get("holderIdentity") or ""


def scenario(plane, args):
    api = plane.api()
    ports = {}
    for i in range(REPLICAS):
        name = "gpuadmit-%d" % i
        # The apiserver's client certificate required; a follower forwarding to the leader
        # presents its own serving certificate, which makes it a peer.
        ports[name] = plane.start_gpuadmit(name, replicas=args.share_of or REPLICAS)[0]
    leader = api.wait(lambda: holder(api), 30, "a replica to hold the Lease")
    log("leader: %s" % leader)
    proxy = RoundRobinProxy(ports.values()).start()
    plane.register_webhook(port=proxy.port)

    plane.kubectl("apply", "-f", os.path.join(args.source_dir,
                                              "tests/cluster/examples/deployment-20.yaml"))

    def settled():
        pods = api.get(PODS, labelSelector="app=gpu-test")["items"]
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return pods if len(pods) == 20 and len(running) == 20 else None

    try:
        pods = api.wait(settled, 90, "20 pods Running")
    except TimeoutError:
        pods = api.get(PODS, labelSelector="app=gpu-test")["items"]
    on2 = sum(1 for p in pods if asks(p) == [MIG2])
    on1 = sum(1 for p in pods if asks(p) == [MIG1])
    check("burst over %d replicas: 12 keep 2g.20gb, 8 fall back, all Running" % REPLICAS,
          (on2, on1, len(pods)) == (12, 8, 20) and settled() is not None,
          "2g %d, 1g %d, pods %d" % (on2, on1, len(pods)))
    spread = sum(1 for n in proxy.connections.values() if n)
    check("burst: the apiserver's connections reached more than one replica",
          spread > 1, str(proxy.connections))
    forwarded = {n: metric(plane, n, 'gpuadmit_forwarded_reviews_total{outcome="answered"}')
                 for n in ports}
    failed = {n: metric(plane, n, 'gpuadmit_forward_failures_total{reason="leader_failed"}')
              for n in ports}
    check("burst: the followers' forwards, with their certificate, were answered by the leader "
          "(none failed)", sum(forwarded.values()) > 0 and not any(failed.values()),
          "forwarded %r, failed %r" % (forwarded, failed))

    # The leader killed after deciding 10 of 30 pods asking the 12 2g.20gb devices: 2 are left
    # for the 20 that the followers decide.
    plane.kubectl("delete", "deployment", "gpu-test")
    api.wait(lambda: not api.get(PODS)["items"], 60, "the burst's pods to be gone")
    gate = threading.Semaphore(10)
    done = []
    lock = threading.Lock()
    errors = []

    def create(i):
        gate.acquire()
        client = api.clone()
        try:
            client.create(PODS, mig_pod("burst-%02d" % i, {"app": "burst"}))
        except Exception as e:  # counted: a refused pod fails the check below
            errors.append(str(e))
        with lock:
            done.append(i)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(30)]
    for t in threads:
        t.start()
    api.wait(lambda: len(done) >= 10, 30, "10 of 30 pods answered")
    leader = holder(api)
    plane.processes[leader].popen.send_signal(signal.SIGKILL)
    killed_at = time.monotonic()
    plane.processes[leader].popen.wait(timeout=10)
    log("killed the leader %s after %d answers" % (leader, len(done)))
    for _ in range(20):
        gate.release()
    for t in threads:
        t.join(timeout=60)
    new_leader = api.wait(lambda: holder(api) not in ("", leader) and holder(api), 40,
                          "a new leader")
    check("a new leader holds the Lease %.1f s after the kill (lease duration 15 s): %s"
          % (time.monotonic() - killed_at, new_leader), bool(new_leader))
    burst = api.get(PODS, labelSelector="app=burst")["items"]
    promised2 = [p["metadata"]["name"] for p in burst if asks(p) == [MIG2] and reserved(p)]
    promised1 = [p for p in burst if asks(p) == [MIG1] and reserved(p)]
    unchanged = [p["metadata"]["name"] for p in burst if not admitted(p)]
    log("after the kill: %d promised 2g.20gb, %d fell back to 1g.10gb, %d left unchanged "
        "(no share left for them)" % (len(promised2), len(promised1), len(unchanged)))
    check("leader killed: all 30 pods created", len(burst) == 30 and not errors,
          "%d created; %s" % (len(burst), errors[:3]))
    check("leader killed: no device promised twice: %d pods promised the 12 2g.20gb"
          % len(promised2), len(promised2) <= 12, str(promised2))
    # A follower's share bounds what it promises while pods it admitted are not yet in its
    # inventory; in a burst this tight a few pods find their follower's share used up.
    check("leader killed: at most a third of the burst left unchanged by the followers' "
          "shares (%d)" % len(unchanged), len(unchanged) <= 10, str(unchanged))

    def promised_bound():
        pods = api.get(PODS, labelSelector="app=burst")["items"]
        return all(p["spec"].get("nodeName") for p in pods if reserved(p))

    try:
        bound = api.wait(promised_bound, 60, "every pod gpuadmit promised a device bound")
    except TimeoutError:
        bound = False
    check("leader killed: every pod promised a device is bound by kube-scheduler", bound)
    rolling_restart(plane, api, proxy, ports)
    proxy.stop()


def rolling_restart(plane, api, proxy, ports):
    """A 200-replica Deployment asking one whole GPU each, on 25 more nodes of 8 GPUs, while
    each replica in turn is stopped (SIGTERM) and started again on a new port."""
    plane.kubectl("delete", "pods", "-l", "app=burst", "--wait=false")
    with open(os.path.join(plane.repo, "tests/cluster/nodes.json")) as f:
        template = json.load(f)["items"][2]  # gpu-whole: 8 whole GPUs
    extra = []
    for i in range(25):
        node = json.loads(json.dumps(template))
        node["metadata"]["name"] = node["metadata"]["labels"]["kubernetes.io/hostname"] = \
            "whole-%02d" % i
        extra.append(node)
    nodes_file = os.path.join(plane.workdir, "whole-nodes.json")
    with open(nodes_file, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": extra}, f)
    plane.add_nodes(nodes_file)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "roll", "namespace": "default"},
                  "spec": {"replicas": 200, "selector": {"matchLabels": {"app": "roll"}},
                           "template": {"metadata": {"labels": {"app": "roll"}}, "spec": {
                               "containers": [{"name": "main", "image": "cuda", "resources": {
                                   "limits": {"nvidia.com/gpu": "1"}}}]}}}}
    api.create("/apis/apps/v1/namespaces/default/deployments", deployment)
    restarted = 0
    for name in sorted(ports):
        if name not in plane.processes:
            continue  # the leader killed above
        code = plane.stop_process(name)
        port = plane.start_gpuadmit(name, replicas=REPLICAS)[0]
        ports[name] = port
        proxy.set_backends([ports[n] for n in sorted(ports) if n in plane.processes])
        restarted += 1
        log("restarted %s (it exited with %s) on port %d" % (name, code, port))

    def settled():
        pods = api.get(PODS, labelSelector="app=roll")["items"]
        return pods if len(pods) == 200 and all(p["spec"].get("nodeName") for p in pods) else None

    try:
        pods = api.wait(settled, 120, "200 pods bound")
    except TimeoutError:
        pods = api.get(PODS, labelSelector="app=roll")["items"]
    unchanged = [p["metadata"]["name"] for p in pods if not reserved(p)]
    check("rolling restart of %d replicas during a 200-pod burst: 200 created, all bound"
          % restarted, len(pods) == 200 and all(p["spec"].get("nodeName") for p in pods),
          "%d pods, %d bound" % (len(pods), sum(1 for p in pods if p["spec"].get("nodeName"))))
    # While no replica leads (the leader's restart), each decides on its share of every node's
    # free GPUs; a node with fewer free than replicas offers no share, and the pods that find
    # none are left to the scheduler unchanged: placed as without gpuadmit, never twice.
    log("rolling restart: %d of 200 pods decided by gpuadmit, %d left to the scheduler "
        "unchanged (no share left on the nodes with room)" % (200 - len(unchanged),
                                                             len(unchanged)))
    check("rolling restart: 0 pods rejected, and every GPU promised at most once",
          len(pods) == 200 and sum(1 for p in pods if reserved(p)) <= 208)


if __name__ == "__main__":
    def flags(parser):
        parser.add_argument("--share-of", type=int, default=0,
                            help="--leader-elect-replicas for the replicas (default: 3); 1 "
                                 "lets each decide on all the free devices without a leader")
    sys.exit(run(scenario, "replicas", gpuadmit=False, extra_args=flags))
