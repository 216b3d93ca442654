#!/usr/bin/python3
"""Extended resources backed by DRA, on the real control plane: the test plays NVIDIA's DRA
driver for the two H200 nodes of the seed cluster (h200-small 4 x 7 1g.10gb, h200-medium
4 x (3 2g.20gb + 1 1g.10gb)), with no device plugin: the Nodes list no GPU allocatable. One
DeviceClass per MIG profile names the device plugin's resource in `extendedResourceName`, so a
pod asking `nvidia.com/mig-2g.20gb` in its limits, written as for the device plugin, is given a
device by kube-scheduler's DRA allocator (a claim it makes for the pod).

  - the cluster as written, without gpuadmit: the 20-replica Deployment of the seed ends 12
    Running and 8 Pending;
  - with gpuadmit: the same Deployment ends 12 on 2g.20gb and 8 moved to 1g.10gb, annotated,
    every pod Running, and every pod's claim holds a device of the profile its request names;
  - `gpuadmit inventory` then counts each device once: 12 of 12 mig-2g.20gb used on
    h200-medium, 8 mig-1g.10gb used in all (the pod's request and the claim made for it are
    one device, not two); `gpuadmit report` analyses the 2 nodes' 8 GPUs, 32/7 allocated.
"""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dra_test  # noqa: E402
from harness import MIG1, MIG2, PODS, asks, check, log, run  # noqa: E402

RESOURCE = "/apis/resource.k8s.io/v1"
CLAIMS = RESOURCE + "/namespaces/default/resourceclaims"
WAIT_S = 120


def profile_class(profile):
    """A DeviceClass of one MIG profile, asked through the device plugin's resource name."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "mig-%s.nvidia.com" % profile},
            "spec": {"extendedResourceName": "nvidia.com/mig-" + profile,
                     "selectors": [{"cel": {"expression":
                         "device.driver == 'gpu.nvidia.com' && "
                         "device.attributes['gpu.nvidia.com'].type == 'mig' && "
                         "device.attributes['gpu.nvidia.com'].profile == '%s'" % profile}}]}}


def claimed_profiles(api):
    """The MIG profile of the device each allocated claim holds, by claim name ("2g.20gb")."""
    out = {}
    for claim in api.get(CLAIMS)["items"]:
        results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        for r in results:
            cut = r["device"].split("-mig-")[-1].split("-")[0]  # "2g20gb"
            g = cut.index("g") + 1
            out[claim["metadata"]["name"]] = cut[:g] + "." + cut[g:]  # "2g.20gb"
    return out


def settle(plane, api, name, running, pending):
    """Applies the seed's Deployment as `name`; waits for `running` pods Running and `pending`
    reported Unschedulable; returns the pods."""
    with open(os.path.join(plane.repo, "tests/cluster/examples/deployment-20.yaml")) as f:
        manifest = f.read().replace("gpu-test", name)
    plane.kubectl("apply", "-f", "-", input=manifest)

    def unschedulable(p):
        return any(c.get("reason") == "Unschedulable" for c in p["status"].get("conditions", []))

    def settled():
        pods = api.get(PODS, labelSelector="app=" + name)["items"]
        up = sum(p["status"].get("phase") == "Running" for p in pods)
        stuck = sum(unschedulable(p) for p in pods)
        return pods if len(pods) == 20 and up == running and stuck == pending else None

    try:
        return api.wait(settled, WAIT_S, "the %s burst settled" % name)
    except TimeoutError:
        return api.get(PODS, labelSelector="app=" + name)["items"]


def as_written(plane, api):
    pods = settle(plane, api, "as-written", 12, 8)
    bound = sum(bool(p["spec"].get("nodeName")) for p in pods)
    check("as written: 12 pods bound, 8 Pending", bound == 12 and len(pods) == 20,
          "%d of %d bound" % (bound, len(pods)))
    plane.kubectl("delete", "deployment/as-written", "--wait=false")
    api.wait(lambda: not api.get(PODS)["items"] and not claimed_profiles(api), WAIT_S,
             "the as-written pods and their claims gone")
    return bound


def with_gpuadmit(plane, api):
    pods = settle(plane, api, "gpu-test", 20, 0)
    on = {MIG2: 0, MIG1: 0}
    for p in pods:
        for resource in asks(p):
            on[resource] = on.get(resource, 0) + 1
    fallbacks = sum(p["metadata"].get("annotations", {}).get("gpuadmit.io/fallback")
                    == "2g.20gb->1g.10gb" for p in pods)
    running = sum(p["status"].get("phase") == "Running" for p in pods)
    log("gpuadmit: %s, %d annotated, %d Running" % (on, fallbacks, running))
    check("gpuadmit: 12 pods keep mig-2g.20gb", on[MIG2] == 12, str(on))
    check("gpuadmit: 8 pods moved to mig-1g.10gb, annotated 2g.20gb->1g.10gb",
          on[MIG1] == 8 and fallbacks == 8, "%s, %d annotated" % (on, fallbacks))
    check("gpuadmit: every pod Running", running == 20, "%d Running" % running)

    held = claimed_profiles(api)
    mismatched = []
    for p in pods:
        status = p["status"].get("extendedResourceClaimStatus") or {}
        want = asks(p)[0].split("mig-")[-1] if asks(p) else "?"
        got = held.get(status.get("resourceClaimName", ""), "none")
        if got != want:
            mismatched.append("%s asks %s, its claim holds %s" % (p["metadata"]["name"], want, got))
    check("gpuadmit: each pod's claim, made by kube-scheduler, holds a device of the profile "
          "its request names", not mismatched and len(held) == 20,
          "; ".join(mismatched[:3]) or "%d claims allocated" % len(held))
    print(plane.kubectl("get", "pods", "-l", "app=gpu-test", "-o",
                        "custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,"
                        "FALLBACK:.metadata.annotations.gpuadmit\\.io/fallback,"
                        "CLAIM:.status.extendedResourceClaimStatus.resourceClaimName"))
    return on


def counted_once(plane):
    done = subprocess.run([plane.gpuadmit_binary, "inventory", "--kubeconfig",
                           plane.gpuadmit_kubeconfig, "-o", "json"],
                          capture_output=True, text=True, timeout=90)
    check("inventory: gpuadmit inventory exits 0", done.returncode == 0, done.stderr[-500:])
    rows = {r["node"]: r["resources"] for r in json.loads(done.stdout or "[]")}
    two = rows.get("h200-medium", {}).get(MIG2, {})
    one_used = sum(r.get(MIG1, {}).get("used", 0) for r in rows.values())
    one_all = sum(r.get(MIG1, {}).get("allocatable", 0) for r in rows.values())
    log("inventory: h200-medium %s; mig-1g.10gb used %d of %d" % (two, one_used, one_all))
    check("inventory: 12 of 12 mig-2g.20gb used on h200-medium, from DRA",
          two.get("allocatable") == 12 and two.get("used") == 12 and two.get("source") == "dra",
          str(two))
    check("inventory: 8 of 32 mig-1g.10gb used", one_used == 8 and one_all == 32,
          "%d of %d" % (one_used, one_all))
    done = subprocess.run([plane.gpuadmit_binary, "report", "--kubeconfig",
                           plane.gpuadmit_kubeconfig, "-o", "json"],
                          capture_output=True, text=True, timeout=90)
    check("report: gpuadmit report against the apiserver exits 0", done.returncode == 0,
          done.stderr[-500:])
    c = json.loads(done.stdout or "{}").get("consolidation", {})
    log("report: %s" % {k: c.get(k) for k in ("gpuNodes", "capacityGpus", "allocatedGpus",
                                               "podsPacked")})
    # 12 x 2/7 + 8 x 1/7 of a GPU, each device once, on the 8 H200s only DRA publishes.
    check("report: 2 GPU nodes of 8 GPUs, 32/7 allocated to 20 pods",
          c.get("gpuNodes") == 2 and c.get("capacityGpus") == 8
          and abs(c.get("allocatedGpus", 0) - 32 / 7) < 0.01 and c.get("podsPacked") == 20,
          str(c)[:300])


def scenario(plane, args):
    api = plane.api()
    workdir = os.path.join(plane.workdir, "dra-extended")
    os.makedirs(workdir, exist_ok=True)
    dra_test.publish_driver(plane, api, workdir)
    for profile in ("2g.20gb", "1g.10gb"):
        api.create(RESOURCE + "/deviceclasses", profile_class(profile))
    log("published the ResourceSlices and per-profile DeviceClasses")
    bound = as_written(plane, api)  # before gpuadmit is registered
    # The probe of register_webhook asks a whole GPU, which these nodes do not offer: wait for
    # gpuadmit's review of it, not for a placement.
    plane.register_webhook(placed=False)
    on = with_gpuadmit(plane, api)
    counted_once(plane)
    print("| run | pods on 2g.20gb | pods on 1g.10gb | pods Pending |")
    print("|---|---|---|---|")
    print("| as written (no webhook) | %d | 0 | %d |" % (bound, 20 - bound))
    print("| gpuadmit | %d | %d | %d |" % (on[MIG2], on[MIG1], 20 - on[MIG2] - on[MIG1]))


if __name__ == "__main__":
    sys.exit(run(scenario, "dra_extended", nodes=False, register=False))
