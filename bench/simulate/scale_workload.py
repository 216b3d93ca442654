#!/usr/bin/python3
"""A synthetic cluster and arrival stream for `gpuadmit simulate` at scale.

Writes CLUSTER.json (a v1 List of Nodes) and WORKLOAD.jsonl (one Pod per line, with "at" and
"duration") for bench/simulate/run.sh: by default 5,000 nodes and 100,000 arrivals, the size the
issue "Decisions measured, not asserted" sets for simulate's speed.

Nodes, in equal thirds by name order: whole-GPU nodes (8 x A100 80GB), MIG nodes (8 x H100 80GB
as 8 x 3g.40gb + 8 x 2g.20gb + 8 x 1g.10gb, one of each per GPU) and time-sliced
nodes (4 x T4, 4 replicas each). Pods arrive as a Poisson stream (5 a second) and stay for an
exponentially distributed time (mean one hour), so the cluster runs near full with a queue:
whole-GPU asks of 1, 2, 4 or 8 GPUs, MIG asks of 1g, 2g or 3g, and a share of inference pods
asking one whole GPU that the sharing flow may convert. Seeded: the same files every run.

--mig-only: the stream the MIG oracle applies to. Every node is an H100 node of 8 GPUs in one
of three mig-parted layouts (MIG_LAYOUTS: all-1g.10gb, 56 instances; 3g + 2g + 1g per GPU, 24;
all-3g.40gb, 16), every pod asks one instance of 1g.10gb, 2g.20gb or
3g.40gb, and none leaves: arrivals go on until the ask is --demand times the instances' GPU
equivalents, so the end of the stream finds the cluster full.
"""
import argparse
import json
import random


def node(name, allocatable, labels):
    labels = dict(labels, **{"kubernetes.io/hostname": name})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"allocatable": allocatable, "capacity": allocatable,
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def cluster(count):
    items = []
    base = {"cpu": "128", "memory": "1Ti", "pods": "110"}
    for i in range(count):
        name = "node-%05d" % i
        kind = i * 3 // count
        if kind == 0:
            items.append(node(name, dict(base, **{"nvidia.com/gpu": "8"}),
                              {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB",
                               "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81920"}))
        elif kind == 1:
            items.append(node(name, dict(base, **{"nvidia.com/mig-3g.40gb": "8",
                                                  "nvidia.com/mig-2g.20gb": "8",
                                                  "nvidia.com/mig-1g.10gb": "8"}),
                              {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                               "nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "mixed",
                               "nvidia.com/mig.capable": "true"}))
        else:
            items.append(node(name, dict(base, **{"nvidia.com/gpu.shared": "16"}),
                              {"nvidia.com/gpu.product": "Tesla-T4", "nvidia.com/gpu.count": "4",
                               "nvidia.com/gpu.replicas": "4",
                               "nvidia.com/gpu.sharing-strategy": "time-slicing"}))
    return {"apiVersion": "v1", "kind": "List", "items": items}


# Per node of 8 H100 GPUs, as mig-parted would lay them out: (profile, instances per node).
MIG_LAYOUTS = [
    [("1g.10gb", 56)],                                   # all-1g.10gb: 7 per GPU
    [("3g.40gb", 8), ("2g.20gb", 8), ("1g.10gb", 8)],    # per GPU 3g + 2g + 1g (+1 slice idle)
    [("3g.40gb", 16)],                                   # all-3g.40gb: 2 per GPU
]
MIG_SLICES = {"1g.10gb": 1, "2g.20gb": 2, "3g.40gb": 3}


def mig_cluster(count):
    items = []
    base = {"cpu": "128", "memory": "1Ti", "pods": "110"}
    for i in range(count):
        layout = MIG_LAYOUTS[i % len(MIG_LAYOUTS)]
        alloc = dict(base, **{"nvidia.com/mig-%s" % p: str(n) for p, n in layout})
        items.append(node("mig-%05d" % i, alloc,
                          {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
                           "nvidia.com/gpu.count": "8", "nvidia.com/gpu.memory": "81559",
                           "nvidia.com/mig.strategy": "mixed", "nvidia.com/mig.capable": "true"}))
    capacity = sum(MIG_SLICES[p] * n / 7 for i in range(count)
                   for p, n in MIG_LAYOUTS[i % len(MIG_LAYOUTS)])
    return {"apiVersion": "v1", "kind": "List", "items": items}, capacity


def mig_pod(i, rng):
    profile = rng.choice(["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "m-%06d" % i, "namespace": "bench"},
            "spec": {"containers": [{"name": "main", "image": "cuda",
                                     "resources": {"requests": {"cpu": "1", "memory": "4Gi"},
                                                   "limits": {"nvidia.com/mig-" + profile: "1"}}}]}}, \
        MIG_SLICES[profile] / 7


def pod(i, rng):
    r = rng.random()
    labels = {}
    if r < 0.45:
        limits = {"nvidia.com/gpu": str(rng.choice([1, 1, 1, 2, 2, 4, 8]))}
        labels["gpuadmit.io/workload-type"] = "training"
    elif r < 0.75:
        limits = {"nvidia.com/mig-%s" % rng.choice(["1g.10gb", "2g.20gb", "3g.40gb"]): "1"}
    else:
        limits = {"nvidia.com/gpu": "1"}
        labels["gpuadmit.io/workload-type"] = "batch"
    cpu = rng.choice([2, 4, 8, 16])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p-%06d" % i, "namespace": "bench", "labels": labels},
            "spec": {"containers": [{"name": "main", "image": "cuda",
                                     "resources": {"requests": {"cpu": str(cpu),
                                                                "memory": "%dGi" % (cpu * 4)},
                                                   "limits": limits}}]}}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=100000)
    p.add_argument("--rate", type=float, default=5.0, help="arrivals per second")
    p.add_argument("--mean-duration", type=float, default=3600.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--mig-only", action="store_true", help="MIG nodes and single-instance MIG pods")
    p.add_argument("--demand", type=float, default=1.3,
                   help="--mig-only: the stream's ask as a share of the instances' capacity")
    p.add_argument("cluster_out")
    p.add_argument("workload_out")
    a = p.parse_args()
    rng = random.Random(a.seed)
    if a.mig_only:
        items, capacity = mig_cluster(a.nodes)
        with open(a.cluster_out, "w") as f:
            json.dump(items, f)
        with open(a.workload_out, "w") as f:
            asked, i = 0.0, 0
            while asked < a.demand * capacity:
                obj, gpus = mig_pod(i, rng)
                f.write(json.dumps({"at": i, "object": obj}) + "\n")
                asked, i = asked + gpus, i + 1
        return
    with open(a.cluster_out, "w") as f:
        json.dump(cluster(a.nodes), f)
    at = 0.0
    with open(a.workload_out, "w") as f:
        for i in range(a.pods):
            at += rng.expovariate(a.rate)
            line = {"at": round(at, 3), "duration": round(rng.expovariate(1 / a.mean_duration), 1),
                    "object": pod(i, rng)}
            f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
