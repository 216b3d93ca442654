#!/usr/bin/python3
"""Three `serve --leader-elect` replicas on a real Lease, behind a round-robin balancer (the
Service), called by the real apiserver:

  - the ReplicaSet controller's 20-pod burst asking mig-2g.20gb, spread over the replicas, ends
    12 + 8 with every pod Running: no device counted twice;
  - the leader killed (SIGKILL) after 10 of 30 concurrent pods asking the 12 2g.20gb devices:
    all 30 are created, at most 12 are promised 2g.20gb (the followers decide on their
    share of the free devices until a new leader holds the Lease), and every pod promised a
    device is bound; a pod beyond a follower's share is left unchanged, with a warning;
  - a new leader takes the Lease, and decides alone again.
"""

import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import check, log, run  # noqa: E402
from round_robin_proxy import RoundRobinProxy  # noqa: E402

MIG2 = "nvidia.com/mig-2g.20gb"
MIG1 = "nvidia.com/mig-1g.10gb"
PODS = "/api/v1/namespaces/default/pods"
LEASE = "/apis/coordination.k8s.io/v1/namespaces/gpuadmit/leases/gpuadmit"
REPLICAS = 3


def asks(pod):
    limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
    return sorted(k for k in limits if k.startswith("nvidia.com/"))


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


def holder(api):
    return api.get(LEASE).get("spec", {}).get("holderIdentity") or ""


def scenario(plane, args):
    api = plane.api()
    ports = {}
    for i in range(REPLICAS):
        name = "gpuadmit-%d" % i
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
    proxy.stop()


if __name__ == "__main__":
    def flags(parser):
        parser.add_argument("--share-of", type=int, default=0,
                            help="--leader-elect-replicas for the replicas (default: 3); 1 "
                                 "lets each decide on all the free devices without a leader")
    sys.exit(run(scenario, "replicas", gpuadmit=False, extra_args=flags))
