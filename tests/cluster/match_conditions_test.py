#!/usr/bin/python3
"""The webhook's CEL matchConditions on the real apiserver: only what gpuadmit may change is sent.

  - a CPU-only Pod, Deployment and CronJob are admitted without a call to gpuadmit;
  - a GPU Pod, a GPU Deployment, a CPU-only pod carrying a gpuadmit.io/ annotation, and one with
    the gpu-autoscaler.io/ label alias are sent;
  - the figure: reviews gpuadmit received for 1,000 pods of a mixed workload (one in five asking
    a GPU), with the conditions and, for comparison, without them.
"""

import copy
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import check, log, run  # noqa: E402
from kube import create_in_parallel  # noqa: E402

HOOK = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gpuadmit"


def reviews(plane):
    metrics = plane.gpuadmit_ports["gpuadmit"][1]
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics, timeout=5) as r:
        total = 0.0
        for line in r.read().decode().splitlines():
            if line.startswith("gpuadmit_admission_reviews_total"):
                total += float(line.rsplit(" ", 1)[1])
        return total


def pod(name, gpu=False, annotations=None, labels=None):
    limits = {"nvidia.com/gpu": "1"} if gpu else {"cpu": "100m"}
    meta = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "main", "image": "img",
                                     "resources": {"limits": limits}}]}}


def workload(kind, name, gpu):
    template = {"metadata": {"labels": {"app": name}},
                "spec": copy.deepcopy(pod(name, gpu)["spec"])}
    if kind == "Deployment":
        return "/apis/apps/v1/namespaces/default/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": name}},
                     "template": template}}
    template["spec"]["restartPolicy"] = "Never"
    return "/apis/batch/v1/namespaces/default/cronjobs", {
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": "0 0 1 1 *", "suspend": True,
                 "jobTemplate": {"spec": {"template": template}}}}


def sent(plane, create):
    before = reviews(plane)
    create()
    return reviews(plane) - before


def mixed(api, prefix, count=1000):
    """`count` pods, one in five asking a GPU, created over 8 connections."""
    create_in_parallel(api, range(count), lambda i: (
        "/api/v1/namespaces/default/pods", pod("%s-%04d" % (prefix, i), gpu=i % 5 == 0)), 8)


def scenario(plane, args):
    api = plane.api()
    pods = "/api/v1/namespaces/default/pods"
    def deployment(name, gpu):
        """Creates it and waits for the ReplicaSet its controller makes (reviewed too)."""
        api.create(*workload("Deployment", name, gpu))
        api.wait(lambda: api.get("/apis/apps/v1/namespaces/default/replicasets",
                                 labelSelector="app=" + name)["items"], 30,
                 "the ReplicaSet of " + name)

    cases = [
        ("a CPU-only Pod", lambda: api.create(pods, pod("cpu-only")), 0),
        ("a CPU-only Deployment (and its ReplicaSet)", lambda: deployment("cpu-deploy", False), 0),
        ("a CPU-only CronJob", lambda: api.create(*workload("CronJob", "cpu-cron", False)), 0),
        ("a GPU Pod", lambda: api.create(pods, pod("gpu", gpu=True)), 1),
        ("a GPU Deployment and its ReplicaSet", lambda: deployment("gpu-deploy", True), 2),
        ("a GPU CronJob", lambda: api.create(*workload("CronJob", "gpu-cron", True)), 1),
        ("a CPU-only pod annotated gpuadmit.io/sharing", lambda: api.create(
            pods, pod("annotated", annotations={"gpuadmit.io/sharing": "disabled"})), 1),
        ("a CPU-only pod labelled gpu-autoscaler.io/workload-type", lambda: api.create(
            pods, pod("labelled", labels={"gpu-autoscaler.io/workload-type": "inference"})), 1),
    ]
    for what, create, want in cases:
        got = sent(plane, create)
        check("%s is %s gpuadmit" % (what, "sent to" if want else "admitted without calling"),
              got == want, "%d reviews" % got)

    with_conditions = sent(plane, lambda: mixed(api, "with"))
    config = plane.webhook_configuration(
        "https://127.0.0.1:%d/mutate" % plane.gpuadmit_ports["gpuadmit"][0],
        match_conditions=False)
    api.apply(HOOK, config)
    api.wait(lambda: sent(plane, lambda: api.create(pods, pod("probe-cpu"), dry_run=True)) == 1,
             30, "the webhook without its conditions to be in force")
    without = sent(plane, lambda: mixed(api, "without"))
    log("reviews per 1,000 pods (one in five asking a GPU): %d with matchConditions, %d without"
        % (with_conditions, without))
    check("with matchConditions gpuadmit reviews only the 200 GPU pods of 1,000 (%d)"
          % with_conditions, with_conditions == 200)
    check("without them it reviews all 1,000 (%d)" % without, without == 1000)


if __name__ == "__main__":
    sys.exit(run(scenario, "match_conditions"))
