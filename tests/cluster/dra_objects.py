"""DRA objects as NVIDIA's DRA driver publishes them (resource.k8s.io/v1), for the fixtures and
for the cluster test that plays the driver: Nodes without GPU allocatable, ResourceSlices of whole
GPUs and MIG devices (cut statically, or every placement drawing on shared counters), the driver's
DeviceClasses, and claims.

Device names follow the driver: gpu-<minor> for a GPU, gpu-<minor>-mig-<profile>-<id>-<start>
for a MIG device (the profile without its dot: 2g20gb).
"""

DRIVER = "gpu.nvidia.com"
PRODUCT = "NVIDIA H200"

# The seed's two H200 nodes: per GPU, (profile, count) cut statically.
SEED_NODES = {
    "h200-small": [("1g.10gb", 7)],
    "h200-medium": [("2g.20gb", 3), ("1g.10gb", 1)],
}
# MIG profile ids and slice widths (memory slices of 8) of the 80 GB geometry the seed's H200 uses.
PROFILES = {"1g.10gb": (19, 1), "2g.20gb": (14, 2), "3g.40gb": (9, 4), "4g.40gb": (5, 4),
            "7g.80gb": (0, 8)}
# Where each profile may start on the GPU's 8 memory slices.
STARTS = {"1g.10gb": range(7), "2g.20gb": (0, 2, 4), "3g.40gb": (0, 4), "4g.40gb": (0,),
          "7g.80gb": (0,)}


def node(name):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "type": "kwok"}},
            "spec": {},
            "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                       "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def device_class_gpu():
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression":
                "device.driver == 'gpu.nvidia.com' && "
                "device.attributes['gpu.nvidia.com'].type == 'gpu'"}}]}}


def device_class_mig():
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "mig.nvidia.com"},
            "spec": {"selectors": [{"cel": {"expression":
                "device.driver == 'gpu.nvidia.com' && "
                "device.attributes['gpu.nvidia.com'].type == 'mig'"}}]}}


def _uuid(node_name, minor, suffix=""):
    n = sum(map(ord, node_name)) % 10000
    return f"GPU-{n:04d}{minor:04d}-0000-4000-8000-{suffix or '0'}".ljust(40, "0")[:40]


def _gpu(node_name, minor):
    return {"name": f"gpu-{minor}",
            "attributes": {"type": {"string": "gpu"}, "uuid": {"string": _uuid(node_name, minor)},
                           "productName": {"string": PRODUCT}, "index": {"int": minor},
                           "minor": {"int": minor},
                           "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{minor // 2:02x}"}},
            "capacity": {"memory": {"value": "80Gi"}}}


def _mig(node_name, minor, profile, start):
    pid, width = PROFILES[profile]
    return {"name": f"gpu-{minor}-mig-{profile.replace('.', '')}-{pid}-{start}",
            "attributes": {"type": {"string": "mig"}, "profile": {"string": profile},
                           "productName": {"string": PRODUCT},
                           "uuid": {"string": _uuid(node_name, minor, f"{pid}{start}")},
                           "parentUUID": {"string": _uuid(node_name, minor)},
                           "parentIndex": {"int": minor}, "parentMinor": {"int": minor},
                           "resource.kubernetes.io/pcieRoot": {"string": f"pci0000:{minor // 2:02x}"}},
            "capacity": {"memory": {"value": f"{10 * width}Gi"}}}


def static_mig_slice(node_name, layout, gpus=4):
    devices = []
    for minor in range(gpus):
        start = 0
        for profile, count in layout:
            width = PROFILES[profile][1]
            for _ in range(count):
                devices.append(_mig(node_name, minor, profile, start))
                start += width
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-gpu.nvidia.com"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}}


def whole_gpu_slice(node_name, gpus=4):
    """A node's whole GPUs, two under each PCIe root (gpu-0 and gpu-1 under pci0000:00, ...)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node_name}-gpu.nvidia.com"},
            "spec": {"driver": DRIVER, "nodeName": node_name,
                     "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
                     "devices": [_gpu(node_name, minor) for minor in range(gpus)]}}


def partitionable_slices(node_name, gpus=1):
    """Dynamic MIG: one slice of counter sets (a GPU's 8 memory slices each), then one slice of
    devices per GPU (the API allows at most 64 devices that consume counters in a slice)."""
    counters = []
    by_gpu = []
    for minor in range(gpus):
        devices = []
        by_gpu.append(devices)
        cset = f"gpu-{minor}-counter-set"
        counters.append({"name": cset,
                         "counters": {f"memory-slice-{i}": {"value": "1"} for i in range(8)}})
        whole = _gpu(node_name, minor)
        whole["consumesCounters"] = [{"counterSet": cset, "counters": {
            f"memory-slice-{i}": {"value": "1"} for i in range(8)}}]
        devices.append(whole)
        for profile, starts in STARTS.items():
            width = PROFILES[profile][1]
            for start in starts:
                d = _mig(node_name, minor, profile, start)
                del d["attributes"]["uuid"]  # a MIG device not cut yet has none
                d["consumesCounters"] = [{"counterSet": cset, "counters": {
                    f"memory-slice-{i}": {"value": "1"} for i in range(start, start + width)}}]
                devices.append(d)
    pool = {"name": node_name, "generation": 1, "resourceSliceCount": 1 + gpus}
    slices = [{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
               "metadata": {"name": f"{node_name}-gpu.nvidia.com-counters"},
               "spec": {"driver": DRIVER, "nodeName": node_name, "pool": pool,
                        "sharedCounters": counters}}]
    for minor, devices in enumerate(by_gpu):
        slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                       "metadata": {"name": f"{node_name}-gpu.nvidia.com-gpu-{minor}"},
                       "spec": {"driver": DRIVER, "nodeName": node_name, "pool": pool,
                                "devices": devices}})
    return slices


def mig_claim_spec(profile, request="gpu", count=1):
    return {"devices": {"requests": [{"name": request, "exactly": {
        "deviceClassName": "mig.nvidia.com", "count": count,
        "selectors": [{"cel": {"expression":
            f"device.attributes['gpu.nvidia.com'].profile == '{profile}'"}}]}}]}}


def allocated_claim(namespace, name, node_name, device, profile="2g.20gb"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": namespace},
            "spec": mig_claim_spec(profile),
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": DRIVER, "pool": node_name, "device": device}]}}}}
