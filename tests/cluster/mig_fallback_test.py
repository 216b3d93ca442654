#!/usr/bin/python3
"""MIG fallback through the real control plane, with `kubectl apply` as a user runs it, on two
H200 nodes (28 x 1g.10gb; 12 x 2g.20gb + 4 x 1g.10gb) and one node of 8 whole GPUs:

  - a Deployment of 20 replicas asking mig-2g.20gb on the empty cluster: the real ReplicaSet
    controller's burst ends with 12 pods on 2g.20gb, 8 moved to 1g.10gb with the fallback
    annotation, every pod bound by the real kube-scheduler and Running, none Pending;
  - a Pod asking 2g.20gb once none is free comes out asking 1g.10gb, annotated;
  - a Job's pod and a CronJob's Job's pod the same, and both Jobs complete;
  - with the policy's annotationPrefix gpu-webhook.k8s.io, the same burst still ends 12 + 8;
  - without client authentication, after a flood of 100 forged reviews from another address,
    the same burst still ends 12 + 8, every pod bound, none queued.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import MIG1, MIG2, PODS, asks, check, log, run  # noqa: E402

FALLBACK = "gpuadmit.io/fallback"
WAIT_S = 90


def pods_of(api, selector):
    return api.get(PODS, labelSelector=selector)["items"]


def scenario(plane, args):
    api = plane.api()
    examples = os.path.join(args.source_dir, "tests/cluster/examples")

    plane.kubectl("apply", "-f", os.path.join(examples, "deployment-20.yaml"))

    def burst_settled():
        pods = pods_of(api, "app=gpu-test")
        running = [p for p in pods if p["status"].get("phase") == "Running"]
        return pods if len(pods) == 20 and len(running) == 20 else None

    try:
        pods = api.wait(burst_settled, WAIT_S, "20 gpu-test pods Running")
    except TimeoutError:
        pods = pods_of(api, "app=gpu-test")
    on2 = [p for p in pods if asks(p) == [MIG2]]
    on1 = [p for p in pods if asks(p) == [MIG1]]
    pending = [p["metadata"]["name"] for p in pods if not p["spec"].get("nodeName")]
    check("deployment: 20 pods created by the ReplicaSet controller", len(pods) == 20,
          "%d pods" % len(pods))
    check("deployment: 12 keep mig-2g.20gb", len(on2) == 12, "%d" % len(on2))
    check("deployment: 8 fall back to mig-1g.10gb", len(on1) == 8, "%d" % len(on1))
    check("deployment: 0 Pending (every pod bound by kube-scheduler)", not pending,
          "unbound: %s" % pending)
    check("deployment: each fallback pod is annotated 2g.20gb->1g.10gb",
          all(p["metadata"].get("annotations", {}).get(FALLBACK) == "2g.20gb->1g.10gb"
              for p in on1), "annotations: %s" % [p["metadata"].get("annotations") for p in on1])
    check("deployment: no pod that kept 2g.20gb carries a fallback annotation",
          not any(FALLBACK in p["metadata"].get("annotations", {}) for p in on2))
    check("deployment: the 2g.20gb pods run on gpu-medium",
          all(p["spec"].get("nodeName") == "gpu-medium" for p in on2),
          str(sorted({p["spec"].get("nodeName") for p in on2})))
    check("deployment: pods were made with generateName by the ReplicaSet",
          all(p["metadata"].get("generateName", "").startswith("gpu-test-") for p in pods))
    columns = ("custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,"
               "FALLBACK:.metadata.annotations.gpuadmit\\.io/fallback,"
               "GPU-REQUEST:.spec.containers[0].resources.requests")
    print(plane.kubectl("get", "pods", "-l", "app=gpu-test", "-o", columns))

    plane.kubectl("apply", "-f", os.path.join(examples, "mig-pod.yaml"))
    pod = api.get(PODS + "/mig-test")
    check("pod: asks mig-1g.10gb when no 2g.20gb is free", asks(pod) == [MIG1], str(asks(pod)))
    check("pod: annotated gpuadmit.io/fallback: 2g.20gb->1g.10gb",
          pod["metadata"].get("annotations", {}).get(FALLBACK) == "2g.20gb->1g.10gb",
          str(pod["metadata"].get("annotations")))
    limits = pod["spec"]["containers"][0]["resources"]
    check("pod: requests equal limits for the extended resource (apiserver validation passed)",
          limits.get("requests", {}).get(MIG1) == limits["limits"].get(MIG1) == "1", str(limits))
    print(plane.kubectl("get", "pod", "mig-test", "-o",
                        "jsonpath={.metadata.annotations}{\"\\n\"}{.spec.containers[0].resources}"))

    plane.kubectl("apply", "-f", os.path.join(examples, "job.yaml"))
    job_done(plane, api, "gpu-job", "job-name=gpu-job", "job")

    plane.kubectl("apply", "-f", os.path.join(examples, "cronjob.yaml"))
    plane.kubectl("create", "job", "gpu-cron-now", "--from=cronjob/gpu-cron")
    job_done(plane, api, "gpu-cron-now", "job-name=gpu-cron-now", "cronjob's job")
    print(plane.kubectl("get", "jobs"))
    custom_prefix(plane, api, examples)
    forged_flood(plane, api, examples)


def clear(plane, api):
    for kind in ("deployment/gpu-test", "pod/mig-test", "job/gpu-job", "job/gpu-cron-now",
                 "cronjob/gpu-cron"):
        plane.kubectl("delete", kind, "--wait=false", "--ignore-not-found")
    api.wait(lambda: not api.get(PODS)["items"], 60, "every pod gone")


def burst_bound(plane, api, examples):
    """The 20-replica Deployment applied: its pods once all 20 are bound, else as they are after
    WAIT_S."""
    plane.kubectl("apply", "-f", os.path.join(examples, "deployment-20.yaml"))

    def settled():
        pods = pods_of(api, "app=gpu-test")
        return pods if len(pods) == 20 and all(p["spec"].get("nodeName") for p in pods) else None

    try:
        return api.wait(settled, WAIT_S, "20 pods bound")
    except TimeoutError:
        return pods_of(api, "app=gpu-test")


def custom_prefix(plane, api, examples):
    """The same burst with annotationPrefix gpu-webhook.k8s.io: the reservations are written and
    read under that prefix, so the burst still ends 12 + 8 (not more fallbacks because each
    pod's devices counted twice, bound and reserved, until the reservations' TTL)."""
    clear(plane, api)
    plane.stop_process("gpuadmit")
    with open(os.path.join(plane.repo, "manifests/examples/policy.yaml")) as f:
        policy = f.read().replace("annotationPrefix: gpuadmit.io", "annotationPrefix: gpu-webhook.k8s.io")
    path = os.path.join(plane.workdir, "prefix-policy.yaml")
    with open(path, "w") as f:
        f.write(policy)
    port = plane.start_gpuadmit(policy=path)[0]
    plane.register_webhook(port)
    pods = burst_bound(plane, api, examples)
    fallbacks = [p for p in pods if p["metadata"].get("annotations", {}).get(
        "gpu-webhook.k8s.io/fallback") == "2g.20gb->1g.10gb"]
    check("annotationPrefix gpu-webhook.k8s.io: the burst ends 12 + 8 (%d fallbacks)"
          % len(fallbacks), len(fallbacks) == 8 and
          sum(1 for p in pods if asks(p) == [MIG2]) == 12)
    check("... its reservations under gpu-webhook.k8s.io/reservation",
          all("gpu-webhook.k8s.io/reservation" in p["metadata"].get("annotations", {})
              for p in pods))


def forged_flood(plane, api, examples):
    """gpuadmit without client authentication, so that anyone reaching its port is served: a
    flood of forged reviews from 127.0.0.2, each asking the 2g.20gb the burst needs, holds
    devices in the forger's own reservation scope only, so the apiserver's burst from
    127.0.0.1 still ends 12 + 8, with no pod waiting or Pending."""
    import base64
    import http.client
    import ssl
    clear(plane, api)
    plane.stop_process("gpuadmit")
    port = plane.start_gpuadmit(client_auth=False)[0]
    plane.register_webhook(port)
    with open(os.path.join(plane.repo, "tests/fixtures/gpu/kubectl-pod.json")) as f:
        review = json.load(f)
    context = ssl.create_default_context(cafile=os.path.join(plane.gpuadmit_certs, "ca.crt"))
    context.check_hostname = False
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context,
                                       source_address=("127.0.0.2", 0))
    held = 0
    for i in range(100):
        review["request"]["uid"] = "f0000000-0000-4000-8000-%012d" % i
        review["request"]["object"]["metadata"]["name"] = "forged-%d" % i
        conn.request("POST", "/mutate", body=json.dumps(review),
                     headers={"Content-Type": "application/json"})
        answer = json.loads(conn.getresponse().read())["response"]
        patch = base64.b64decode(answer.get("patch", "")).decode()
        held += "gpuadmit.io/reservation" in patch and FALLBACK not in patch
    conn.close()
    check("forged flood: 100 reviews from 127.0.0.2 held %d 2g.20gb devices in their own scope"
          % held, held == 12, "%d" % held)
    started = time.monotonic()
    pods = burst_bound(plane, api, examples)
    took = time.monotonic() - started
    on2 = sum(1 for p in pods if asks(p) == [MIG2])
    on1 = sum(1 for p in pods if asks(p) == [MIG1])
    check("forged flood: the apiserver's burst still ends 12 + 8 (%d + %d), every pod bound, "
          "none queued (%.1f s)" % (on2, on1, took),
          on2 == 12 and on1 == 8 and len(pods) == 20 and all(p["spec"].get("nodeName")
                                                               for p in pods) and
          not any("gpuadmit.io/capacity" in str(p["spec"].get("schedulingGates")) for p in pods),
          "%d pods, %d bound" % (len(pods), sum(1 for p in pods if p["spec"].get("nodeName"))))


def job_done(plane, api, name, selector, what):
    path = "/apis/batch/v1/namespaces/default/jobs/" + name

    def succeeded():
        return api.get(path).get("status", {}).get("succeeded") == 1

    try:
        api.wait(succeeded, WAIT_S, "job %s to succeed" % name)
    except TimeoutError as e:
        log(str(e))
    pods = pods_of(api, selector)
    check("%s: one pod, asking mig-1g.10gb with the fallback annotation" % what,
          len(pods) == 1 and asks(pods[0]) == [MIG1] and
          pods[0]["metadata"].get("annotations", {}).get(FALLBACK) == "2g.20gb->1g.10gb",
          str([(asks(p), p["metadata"].get("annotations")) for p in pods]))
    check("%s: completed (KWOK ran its pod to Succeeded)" % what, succeeded(),
          str(api.get(path).get("status")))


if __name__ == "__main__":
    sys.exit(run(scenario, "mig_fallback"))
