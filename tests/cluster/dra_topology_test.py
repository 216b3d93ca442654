#!/usr/bin/python3
"""Multi-GPU claims under one PCIe root, on the real control plane: the test plays NVIDIA's DRA
driver for one KWOK node of 4 whole GPUs, two under each PCIe root complex (gpu-0 and gpu-1 under
pci0000:00, gpu-2 and gpu-3 under pci0000:01), and kube-scheduler's allocator picks the devices.

With gpu-0 held by a first claim:
  - without gpuadmit, a claim asking 2 GPUs is given gpu-1 and gpu-2, the allocator's first fit,
    across the two roots;
  - with gpuadmit and `dra.alignPcieRoot: true`, the same claim is stored with a
    `matchAttribute: resource.kubernetes.io/pcieRoot` constraint and given gpu-2 and gpu-3, under
    one root.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dra_objects  # noqa: E402
import dra_test  # noqa: E402
from harness import check, log, run  # noqa: E402

RESOURCE = "/apis/resource.k8s.io/v1"
CLAIMS = RESOURCE + "/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"
NODE = "dgx-dra"
WAIT_S = 60


def gpu_claim(name, count):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {
                "deviceClassName": "gpu.nvidia.com", "count": count}}]}}}


def pod_of(claim):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": claim, "namespace": "default"},
            "spec": {"resourceClaims": [{"name": "gpus", "resourceClaimName": claim}],
                     "containers": [{"name": "cuda", "image": "nvidia/cuda:12.4.1-base",
                                     "resources": {"claims": [{"name": "gpus"}]}}]}}


def allocated(api, name, count):
    """Claims `name` and its pod made; the devices the allocator gave it, once it has."""
    api.create(CLAIMS, gpu_claim(name, count))
    api.create(PODS, pod_of(name))

    def devices():
        claim = api.get(CLAIMS + "/" + name)
        results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results")
        return sorted(r["device"] for r in results) if results else None

    return api.wait(devices, WAIT_S, "claim %s allocated" % name), api.get(CLAIMS + "/" + name)


def roots(devices):
    """The PCIe roots of whole GPUs named gpu-<minor> (two under each, as published)."""
    return sorted({"pci0000:%02x" % (int(d.split("-")[1]) // 2) for d in devices})


def scenario(plane, args):
    api = plane.api()
    api.create(RESOURCE + "/deviceclasses", dra_objects.device_class_gpu())
    nodes = os.path.join(plane.workdir, "dra-topology-nodes.json")
    with open(nodes, "w") as f:
        json.dump({"kind": "List", "items": [dra_objects.node(NODE)]}, f)
    plane.add_nodes(nodes)
    api.create(RESOURCE + "/resourceslices", dra_objects.whole_gpu_slice(NODE, 4))
    log("published 4 whole GPUs of %s, two under each PCIe root" % NODE)

    first, _ = allocated(api, "first", 1)
    check("a first claim holds gpu-0", first == ["gpu-0"], str(first))

    written, _ = allocated(api, "as-written", 2)
    check("without gpuadmit: 2 GPUs across two PCIe roots (the allocator's first fit)",
          written == ["gpu-1", "gpu-2"] and len(roots(written)) == 2, str(written))
    api.delete(PODS + "/as-written")
    api.delete(CLAIMS + "/as-written")
    api.wait(lambda: not api.exists(CLAIMS + "/as-written"), WAIT_S, "claim as-written gone")

    workdir = os.path.join(plane.workdir, "dra-topology")
    os.makedirs(workdir, exist_ok=True)
    policy = dra_test.policy_file(plane, workdir, "align",
                                  lambda p: p["dra"].update({"alignPcieRoot": True}))
    plane.start_gpuadmit(policy=policy)
    plane.register_webhook()
    aligned, stored = allocated(api, "aligned", 2)
    constraints = stored["spec"]["devices"].get("constraints", [])
    check("with gpuadmit: the claim is stored with a pcieRoot matchAttribute constraint",
          constraints == [{"requests": ["gpus"],
                           "matchAttribute": "resource.kubernetes.io/pcieRoot"}],
          json.dumps(constraints))
    check("with gpuadmit: 2 GPUs under one PCIe root",
          aligned == ["gpu-2", "gpu-3"] and len(roots(aligned)) == 1, str(aligned))
    print("| claim for 2 GPUs, gpu-0 held | devices | PCIe roots |")
    print("|---|---|---|")
    print("| as written | %s | %s |" % (", ".join(written), ", ".join(roots(written))))
    print("| gpuadmit, alignPcieRoot | %s | %s |" % (", ".join(aligned), ", ".join(roots(aligned))))


if __name__ == "__main__":
    sys.exit(run(scenario, "dra_topology", nodes=False, gpuadmit=False))
