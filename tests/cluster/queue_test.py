#!/usr/bin/python3
"""The capacity queue on the real scheduler's scheduling gates (policy queue.enabled):

  - with gpu-whole's 8 GPUs taken, a pod asking 2 GPUs is admitted gated
    (`spec.schedulingGates: gpuadmit.io/capacity`), and kube-scheduler reports it SchedulingGated;
  - when two of the 8 pods are deleted, gpuadmit lifts the gate with a node affinity to
    gpu-whole (a patch the real apiserver accepts: narrowing a gated pod's affinity), and the
    scheduler binds it there; it runs;
  - the whole way, gpuadmit acts as its service account, with the manifests' RBAC.
"""

import os
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import check, log, run  # noqa: E402

PODS = "/api/v1/namespaces/default/pods"
GATE = "gpuadmit.io/capacity"


def gpu_pod(name, gpus):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "main", "image": "cuda",
                                     "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}}


def queue_policy(source_dir, directory):
    with open(os.path.join(source_dir, "manifests/examples/policy.yaml")) as f:
        policy = yaml.safe_load(f)
    policy["queue"]["enabled"] = True
    path = os.path.join(directory, "policy.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(policy, f)
    return path


def gates(pod):
    return [g["name"] for g in pod["spec"].get("schedulingGates", [])]


def scheduled_condition(pod):
    for c in pod.get("status", {}).get("conditions", []):
        if c["type"] == "PodScheduled":
            return c.get("reason", c["status"])
    return None


def scenario(plane, args):
    directory = tempfile.mkdtemp(prefix="gpuadmit-queue-")
    plane.start_gpuadmit(policy=queue_policy(args.source_dir, directory))
    plane.register_webhook()
    api = plane.api()
    for i in range(8):
        api.create(PODS, gpu_pod("fill-%d" % i, 1))
    api.wait(lambda: sum(1 for p in api.get(PODS)["items"]
                         if p["status"].get("phase") == "Running") == 8, 60, "8 pods Running")

    waiter = api.create(PODS, gpu_pod("waiter", 2))
    check("a pod that fits nowhere is admitted gated", gates(waiter) == [GATE], str(gates(waiter)))
    check("... with gpuadmit.io/queue saying what it waits for",
          waiter["metadata"].get("annotations", {}).get("gpuadmit.io/queue", "")
          .startswith("waiting"), str(waiter["metadata"].get("annotations")))
    try:
        api.wait(lambda: scheduled_condition(api.get(PODS + "/waiter")) == "SchedulingGated", 30,
                 "kube-scheduler to report the pod SchedulingGated")
        gated = True
    except TimeoutError:
        gated = False
    check("kube-scheduler reports it SchedulingGated", gated,
          str(api.get(PODS + "/waiter").get("status")))

    freed = time.monotonic()
    api.delete(PODS + "/fill-0")
    api.delete(PODS + "/fill-1")
    try:
        pod = api.wait(lambda: (lambda p: p if not gates(p) else None)(api.get(PODS + "/waiter")),
                       30, "gpuadmit to lift the gate")
        lifted = time.monotonic() - freed
    except TimeoutError:
        pod, lifted = api.get(PODS + "/waiter"), None
    check("gpuadmit lifts the gate once two GPUs free (%s s after the deletes)"
          % ("%.1f" % lifted if lifted is not None else "never"), lifted is not None)
    annotation = pod["metadata"].get("annotations", {}).get("gpuadmit.io/queue", "")
    check("... annotated lifted: capacity on gpu-whole", "lifted: capacity on gpu-whole" in
          annotation, annotation)
    terms = (pod["spec"].get("affinity", {}).get("nodeAffinity", {})
             .get("requiredDuringSchedulingIgnoredDuringExecution", {})
             .get("nodeSelectorTerms", []))
    check("... pinned to gpu-whole by a required node affinity the apiserver accepted",
          any("gpu-whole" in str(t) for t in terms), str(terms))
    try:
        pod = api.wait(lambda: (lambda p: p if p["status"].get("phase") == "Running" else None)(
            api.get(PODS + "/waiter")), 30, "the lifted pod Running")
    except TimeoutError:
        pod = api.get(PODS + "/waiter")
    check("kube-scheduler binds it to gpu-whole and it runs",
          pod["spec"].get("nodeName") == "gpu-whole" and pod["status"].get("phase") == "Running",
          "%s %s" % (pod["spec"].get("nodeName"), pod["status"].get("phase")))
    log("queue annotation: %s" % annotation)


if __name__ == "__main__":
    sys.exit(run(scenario, "queue", gpuadmit=False))
