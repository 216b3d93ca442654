#!/usr/bin/python3
"""Writes demo-cluster.json: the demo cluster as `kubectl get nodes,pods -A -o json` prints it.

Usage: make-demo-cluster.py [OUT]   (default: demo-cluster.json beside this script; "-" = stdout)

The cluster: two worker nodes, each with 4 simulated 70 GB NVIDIA H200 cards in MIG
mixed strategy, and a control-plane node without GPUs.
  gpu-small   4 x 7 x 1g.10gb                 = 28 x nvidia.com/mig-1g.10gb
  gpu-medium  4 x (3 x 2g.20gb + 1 x 1g.10gb) = 12 x nvidia.com/mig-2g.20gb + 4 x mig-1g.10gb
Node labels follow what NVIDIA GPU Feature Discovery publishes for mixed MIG nodes (the label set
of NVIDIA/cloud-native-docs gpu-operator/manifests/output/mig-mixed-node-labels.json, an H100
80GB HBM3 node), with the per-profile memory, multiprocessor and engine values of the H100
profiles of the same name.

Everything is deterministic (fixed seed, fixed timestamps): rerunning gives identical bytes, and
tests/manifests/kustomize_test.sh checks that the committed file is up to date.
Standard library only.
"""

import json
import random
import sys
import uuid
from pathlib import Path

K8S_VERSION = "v1.31.4"
CONTAINERD = "containerd://1.7.24"
OS_IMAGE = "Ubuntu 22.04.5 LTS"
KERNEL = "5.15.0-131-generic"
DRIVER = ("550", "127", "08")
CUDA = ("12", "4")
# A simulated H200: 70 GB, MIG-partitioned in 7 memory slices of ~10 GB.
GPU_PRODUCT = "NVIDIA-H200"
GPU_MEMORY_MIB = 71680
GPUS_PER_NODE = 4

# GFD's per-profile labels; values as GFD reports them for the Hopper profiles of the same name.
MIG_PROFILES = {
    "1g.10gb": {"memory": 9984, "multiprocessors": 16, "slices": 1,
                "copy": 1, "decoder": 1, "encoder": 0, "jpeg": 1, "ofa": 0},
    "2g.20gb": {"memory": 20096, "multiprocessors": 32, "slices": 2,
                "copy": 2, "decoder": 2, "encoder": 0, "jpeg": 2, "ofa": 0},
}

T_CLUSTER = "2025-05-12T09:14:03Z"   # cluster created
T_BOOT = "2025-06-02T07:58:41Z"      # nodes last booted
T_HEARTBEAT = "2025-06-03T10:41:17Z"  # the moment of the snapshot
T_GFD = "1748851221"                 # 2025-06-02T08:00:21Z, GFD's last labelling pass

rng = random.Random(3)  # fixed: the same file on every run
resource_version = [412000]


def next_rv():
    resource_version[0] += rng.randint(3, 97)
    return str(resource_version[0])


def new_uid():
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def suffix(n=5):
    # Kubernetes' generateName alphabet: no vowels, no 0/1/3 (utilrand.String).
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(n))


def rs_hash():
    return "".join(rng.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(10))


def hex_id(n=64):
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


# ---------------------------------------------------------------------------------------------
# Nodes

def gfd_labels(hostname, layout, mig_config):
    """Labels of a MIG mixed-strategy node; layout maps profile -> devices on the node."""
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "feature.node.kubernetes.io/cpu-cpuid.AVX512F": "true",
        "feature.node.kubernetes.io/cpu-cpuid.AMXTILE": "true",
        "feature.node.kubernetes.io/cpu-hardware_multithreading": "true",
        "feature.node.kubernetes.io/kernel-version.full": KERNEL,
        "feature.node.kubernetes.io/kernel-version.major": "5",
        "feature.node.kubernetes.io/kernel-version.minor": "15",
        "feature.node.kubernetes.io/kernel-version.revision": "0",
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "feature.node.kubernetes.io/pci-10de.sriov.capable": "true",
        "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.major": "22",
        "feature.node.kubernetes.io/system-os_release.VERSION_ID.minor": "04",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": hostname,
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/worker": "",
        "nvidia.com/cuda.driver-version.full": ".".join(DRIVER),
        "nvidia.com/cuda.driver-version.major": DRIVER[0],
        "nvidia.com/cuda.driver-version.minor": DRIVER[1],
        "nvidia.com/cuda.driver-version.revision": DRIVER[2],
        "nvidia.com/cuda.driver.major": DRIVER[0],
        "nvidia.com/cuda.driver.minor": DRIVER[1],
        "nvidia.com/cuda.driver.rev": DRIVER[2],
        "nvidia.com/cuda.runtime-version.full": ".".join(CUDA),
        "nvidia.com/cuda.runtime-version.major": CUDA[0],
        "nvidia.com/cuda.runtime-version.minor": CUDA[1],
        "nvidia.com/cuda.runtime.major": CUDA[0],
        "nvidia.com/cuda.runtime.minor": CUDA[1],
        "nvidia.com/gfd.timestamp": T_GFD,
        "nvidia.com/gpu-driver-upgrade-state": "upgrade-done",
        "nvidia.com/gpu.compute.major": "9",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.count": str(GPUS_PER_NODE),
        "nvidia.com/gpu.deploy.container-toolkit": "true",
        "nvidia.com/gpu.deploy.dcgm": "true",
        "nvidia.com/gpu.deploy.dcgm-exporter": "true",
        "nvidia.com/gpu.deploy.device-plugin": "true",
        "nvidia.com/gpu.deploy.driver": "true",
        "nvidia.com/gpu.deploy.gpu-feature-discovery": "true",
        "nvidia.com/gpu.deploy.mig-manager": "true",
        "nvidia.com/gpu.deploy.node-status-exporter": "true",
        "nvidia.com/gpu.deploy.operator-validator": "true",
        "nvidia.com/gpu.family": "hopper",
        "nvidia.com/gpu.machine": "SYS-821GE-TNHR",
        "nvidia.com/gpu.memory": str(GPU_MEMORY_MIB),
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": GPU_PRODUCT,
        # Mixed strategy: no whole GPU is advertised, so there is nothing to replicate.
        "nvidia.com/gpu.replicas": "0",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.config": mig_config,
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mps.capable": "false",
    }
    for profile, count in layout.items():
        p = MIG_PROFILES[profile]
        prefix = "nvidia.com/mig-" + profile
        labels.update({
            prefix + ".count": str(count),
            prefix + ".engines.copy": str(p["copy"]),
            prefix + ".engines.decoder": str(p["decoder"]),
            prefix + ".engines.encoder": str(p["encoder"]),
            prefix + ".engines.jpeg": str(p["jpeg"]),
            prefix + ".engines.ofa": str(p["ofa"]),
            prefix + ".memory": str(p["memory"]),
            prefix + ".multiprocessors": str(p["multiprocessors"]),
            prefix + ".product": "%s-MIG-%s" % (GPU_PRODUCT, profile),
            prefix + ".replicas": "1",
            prefix + ".sharing-strategy": "none",
            prefix + ".slices.ci": str(p["slices"]),
            prefix + ".slices.gi": str(p["slices"]),
        })
    return labels


def mig_config_annotation(per_gpu):
    """fake-gpu-operator's run.ai/mig.config: per_gpu is [(slice position, profile), ...]."""
    lines = ["version: v1", "mig-configs:", "  selected:",
             "  - devices: [%s]" % ", ".join(str(i) for i in range(GPUS_PER_NODE)),
             "    mig-enabled: true", "    mig-devices:"]
    lines += ["      %d: %s" % (pos, profile) for pos, profile in per_gpu]
    return "\n".join(lines)


def node(name, ip, pod_cidr, labels, capacity, allocatable, annotations=None, taints=None,
         images=()):
    spec = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
    if taints:
        spec["taints"] = taints
    base_annotations = {
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    base_annotations.update(annotations or {})

    def condition(kind, status, reason, message, since=T_BOOT):
        return {"lastHeartbeatTime": T_HEARTBEAT, "lastTransitionTime": since,
                "message": message, "reason": reason, "status": status, "type": kind}

    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": base_annotations,
            "creationTimestamp": T_CLUSTER,
            "labels": labels,
            "name": name,
            "resourceVersion": next_rv(),
            "uid": new_uid(),
        },
        "spec": spec,
        "status": {
            "addresses": [{"address": ip, "type": "InternalIP"},
                          {"address": name, "type": "Hostname"}],
            "allocatable": allocatable,
            "capacity": capacity,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory",
                          "kubelet has sufficient memory available"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure",
                          "kubelet has no disk pressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID",
                          "kubelet has sufficient PID available"),
                condition("Ready", "True", "KubeletReady", "kubelet is posting ready status",
                          since="2025-06-02T07:59:12Z"),
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "images": [{"names": list(names), "sizeBytes": size} for names, size in images],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": new_uid(),
                "containerRuntimeVersion": CONTAINERD,
                "kernelVersion": KERNEL,
                "kubeProxyVersion": K8S_VERSION,
                "kubeletVersion": K8S_VERSION,
                "machineID": hex_id(32),
                "operatingSystem": "linux",
                "osImage": OS_IMAGE,
                "systemUUID": new_uid(),
            },
            "runtimeHandlers": [
                {"features": {"recursiveReadOnlyMounts": True, "userNamespaces": True},
                 "name": name_}
                for name_ in (["nvidia", "runc", ""] if "nvidia.com/gpu.present" in labels
                              else ["runc", ""])
            ],
        },
    }


def control_plane_node():
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": "gpu-sim-control-plane",
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/control-plane": "",
        "node.kubernetes.io/exclude-from-external-load-balancers": "",
    }
    capacity = {"cpu": "8", "ephemeral-storage": "203056560Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": "32863220Ki", "pods": "110"}
    allocatable = {"cpu": "8", "ephemeral-storage": "187136925387", "hugepages-1Gi": "0",
                   "hugepages-2Mi": "0", "memory": "32760820Ki", "pods": "110"}
    return node("gpu-sim-control-plane", "10.0.1.10", "10.244.0.0/24", labels, capacity,
                allocatable,
                taints=[{"effect": "NoSchedule", "key": "node-role.kubernetes.io/control-plane"}],
                images=[(["registry.k8s.io/etcd:3.5.15-0"], 56909194),
                        (["registry.k8s.io/kube-apiserver:" + K8S_VERSION], 28390432),
                        (["registry.k8s.io/coredns/coredns:v1.11.3"], 18562039)])


def gpu_node(name, ip, pod_cidr, layout, per_gpu, mig_config):
    labels = gfd_labels(name, layout, mig_config)
    # The node-pool label a kind cluster of these two workers would carry.
    labels["node-pool"] = name.split("-", 1)[1]
    mig = {"nvidia.com/mig-" + p: str(n) for p, n in layout.items()}
    capacity = {"cpu": "64", "ephemeral-storage": "1843220480Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": "527982552Ki", "nvidia.com/gpu": "0",
                "pods": "110", **mig}
    # kube-reserved 500m CPU and 1Gi memory; eviction thresholds 100Mi memory, 10% of the disk.
    allocatable = {"cpu": "63500m", "ephemeral-storage": str(1843220480 * 1024 * 9 // 10),
                   "hugepages-1Gi": "0",
                   "hugepages-2Mi": "0", "memory": "526831576Ki", "nvidia.com/gpu": "0",
                   "pods": "110", **mig}
    annotations = {
        "nfd.node.kubernetes.io/feature-labels": ",".join(
            sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("feature.node.kubernetes.io/"))),
        "nfd.node.kubernetes.io/master.version": "v0.16.6",
        "run.ai/mig.config": mig_config_annotation(per_gpu),
    }
    images = [(["nvcr.io/nvidia/k8s-device-plugin:v0.17.0"], 178120211),
              (["nvcr.io/nvidia/k8s/dcgm-exporter:3.3.9-3.6.1-ubuntu22.04"], 431235018),
              (["vllm/vllm-openai:v0.6.4"], 4968101317)]
    return node(name, ip, pod_cidr, labels, capacity, allocatable, annotations=annotations,
                images=images)


# ---------------------------------------------------------------------------------------------
# Pods

def container(name, image, requests, limits=None, ports=(), args=None):
    resources = {}
    if limits:
        resources["limits"] = limits
    if requests:
        resources["requests"] = requests
    c = {
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": resources,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if args:
        c["args"] = args
    if ports:
        c["ports"] = [{"containerPort": p, "name": n, "protocol": "TCP"} for n, p in ports]
    return c


def qos_class(containers):
    reqs = [c["resources"].get("requests", {}) for c in containers]
    lims = [c["resources"].get("limits", {}) for c in containers]
    if not any(reqs) and not any(lims):
        return "BestEffort"
    guaranteed = all(
        lim.get(r) and lim.get(r) == req.get(r, lim.get(r))
        for req, lim in zip(reqs, lims) for r in ("cpu", "memory"))
    return "Guaranteed" if guaranteed else "Burstable"


def pod(name, namespace, containers, node_name=None, phase="Running", labels=None, owner=None,
        host_network=False, priority_class=None, priority=0, tolerations=(), started=None,
        pod_ip=None, host_ip=None, node_selector=None, service_account="default",
        generate_name=None):
    started = started or "2025-06-02T08:05:00Z"
    token = "kube-api-access-" + suffix()
    spec_containers = []
    for c in containers:
        c = dict(c)
        c["volumeMounts"] = [{"mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                              "name": token, "readOnly": True}]
        spec_containers.append(c)

    metadata = {
        "creationTimestamp": started,
        "labels": labels or {},
        "name": name,
        "namespace": namespace,
        "resourceVersion": next_rv(),
        "uid": new_uid(),
    }
    if generate_name:
        metadata["generateName"] = generate_name
    if owner:
        kind, owner_name, owner_uid = owner
        ref = {"apiVersion": {"Node": "v1", "Job": "batch/v1"}.get(kind, "apps/v1"),
               "blockOwnerDeletion": True, "controller": True, "kind": kind,
               "name": owner_name, "uid": owner_uid}
        if kind == "Node":
            # Mirror pods of static pods: the kubelet sets no blockOwnerDeletion.
            del ref["blockOwnerDeletion"]
        metadata["ownerReferences"] = [ref]

    spec = {
        "containers": spec_containers,
        "dnsPolicy": "ClusterFirstWithHostNet" if host_network else "ClusterFirst",
        "enableServiceLinks": True,
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": priority,
        "restartPolicy": "Never" if owner and owner[0] == "Job" else "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": service_account,
        "serviceAccountName": service_account,
        "terminationGracePeriodSeconds": 30,
        "tolerations": list(tolerations) + [
            {"effect": "NoExecute", "key": "node.kubernetes.io/not-ready",
             "operator": "Exists", "tolerationSeconds": 300},
            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable",
             "operator": "Exists", "tolerationSeconds": 300},
        ],
        "volumes": [{
            "name": token,
            "projected": {
                "defaultMode": 420,
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}],
                                   "name": "kube-root-ca.crt"}},
                    {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1",
                                                             "fieldPath": "metadata.namespace"},
                                                "path": "namespace"}]}},
                ],
            },
        }],
    }
    if node_name:
        spec["nodeName"] = node_name
    if host_network:
        spec["hostNetwork"] = True
    if priority_class:
        spec["priorityClassName"] = priority_class
    if node_selector:
        spec["nodeSelector"] = node_selector
    if owner and owner[0] == "DaemonSet":
        # The DaemonSet controller pins each pod to its node this way.
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}}}

    status = {"phase": phase, "qosClass": qos_class(containers)}
    if node_name:
        pod_ip = host_ip if host_network else pod_ip

        def cond(kind, ok=True, reason=None, at=started):
            c = {"lastProbeTime": None, "lastTransitionTime": at,
                 "status": "True" if ok else "False", "type": kind}
            if reason:
                c["reason"] = reason
            return c

        running = phase == "Running"
        status.update({
            "conditions": [
                cond("PodReadyToStartContainers", running),
                cond("Initialized", reason="PodCompleted" if not running else None),
                cond("Ready", running, None if running else "PodCompleted"),
                cond("ContainersReady", running, None if running else "PodCompleted"),
                cond("PodScheduled"),
            ],
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": pod_ip,
            "podIPs": [{"ip": pod_ip}],
            "startTime": started,
        })
        statuses = []
        for c in spec_containers:
            if running:
                state = {"running": {"startedAt": started}}
            else:
                state = {"terminated": {"containerID": "containerd://" + hex_id(),
                                        "exitCode": 0, "finishedAt": "2025-06-02T09:47:31Z",
                                        "reason": "Completed", "startedAt": started}}
            statuses.append({
                "containerID": "containerd://" + hex_id(),
                "image": qualified_image(c["image"]),
                "imageID": qualified_image(c["image"]).rsplit(":", 1)[0] + "@sha256:" + hex_id(),
                "lastState": {},
                "name": c["name"],
                "ready": running,
                "restartCount": 0,
                "started": running,
                "state": state,
                "volumeMounts": [dict(m, recursiveReadOnly="Disabled")
                                 for m in c["volumeMounts"]],
            })
        if not running:
            for s in statuses:
                s["containerID"] = s["state"]["terminated"]["containerID"]
        status["containerStatuses"] = statuses
    return pod_obj(metadata, spec, status)


def qualified_image(image):
    """The image reference as containerd reports it: docker.io/library/ added where implied."""
    first = image.split("/", 1)[0]
    if "/" in image and ("." in first or ":" in first):
        return image
    return "docker.io/" + (image if "/" in image else "library/" + image)


def pod_obj(metadata, spec, status):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
            "status": status}


NODE_IPS = {"gpu-sim-control-plane": "10.0.1.10", "gpu-small": "10.0.1.11",
            "gpu-medium": "10.0.1.12"}
POD_NETS = {"gpu-sim-control-plane": "10.244.0.", "gpu-small": "10.244.1.",
            "gpu-medium": "10.244.2."}
_next_host = {}


def pod_ip(node_name):
    _next_host[node_name] = _next_host.get(node_name, 1) + rng.randint(1, 9)
    return POD_NETS[node_name] + str(_next_host[node_name])


def on(node_name, **kwargs):
    """Common keyword arguments for a pod bound to node_name."""
    return dict(node_name=node_name, host_ip=NODE_IPS[node_name], pod_ip=pod_ip(node_name),
                **kwargs)


def system_pods():
    cp = "gpu-sim-control-plane"
    cp_node_uid = NODE_UIDS[cp]
    pods = []
    for comp, image, cpu in (("etcd", "registry.k8s.io/etcd:3.5.15-0", "100m"),
                             ("kube-apiserver", "registry.k8s.io/kube-apiserver:" + K8S_VERSION,
                              "250m"),
                             ("kube-controller-manager",
                              "registry.k8s.io/kube-controller-manager:" + K8S_VERSION, "200m"),
                             ("kube-scheduler", "registry.k8s.io/kube-scheduler:" + K8S_VERSION,
                              "100m")):
        requests = {"cpu": cpu}
        if comp == "etcd":
            requests["memory"] = "100Mi"
        pods.append(pod(comp + "-" + cp, "kube-system", [container(comp, image, requests)],
                        labels={"component": comp, "tier": "control-plane"},
                        owner=("Node", cp, cp_node_uid), host_network=True,
                        priority_class="system-node-critical", priority=2000001000,
                        tolerations=[{"effect": "NoExecute", "operator": "Exists"}],
                        started="2025-06-02T07:59:02Z", **on(cp)))

    rs = "coredns-7c65d6cfc9"
    rs_uid = new_uid()
    for _ in range(2):
        pods.append(pod(
            rs + "-" + suffix(), "kube-system",
            [container("coredns", "registry.k8s.io/coredns/coredns:v1.11.3",
                       {"cpu": "100m", "memory": "70Mi"}, {"memory": "170Mi"},
                       ports=(("dns", 53), ("metrics", 9153)),
                       args=["-conf", "/etc/coredns/Corefile"])],
            labels={"k8s-app": "kube-dns", "pod-template-hash": "7c65d6cfc9"},
            owner=("ReplicaSet", rs, rs_uid), generate_name=rs + "-",
            priority_class="system-cluster-critical", priority=2000000000,
            service_account="coredns",
            tolerations=[{"key": "CriticalAddonsOnly", "operator": "Exists"},
                         {"effect": "NoSchedule",
                          "key": "node-role.kubernetes.io/control-plane"}],
            started="2025-06-02T07:59:40Z", **on(cp)))

    ds_uid = new_uid()
    for n in NODE_IPS:
        pods.append(pod(
            "kube-proxy-" + suffix(), "kube-system",
            [container("kube-proxy", "registry.k8s.io/kube-proxy:" + K8S_VERSION, {})],
            labels={"controller-revision-hash": "6d4b8c9f7", "k8s-app": "kube-proxy",
                    "pod-template-generation": "1"},
            owner=("DaemonSet", "kube-proxy", ds_uid), generate_name="kube-proxy-",
            host_network=True, priority_class="system-node-critical", priority=2000001000,
            service_account="kube-proxy", node_selector={"kubernetes.io/os": "linux"},
            tolerations=[{"operator": "Exists"}], started="2025-06-02T07:59:20Z", **on(n)))

    dp_uid, gfd_uid = new_uid(), new_uid()
    for n in ("gpu-small", "gpu-medium"):
        pods.append(pod(
            "nvidia-device-plugin-daemonset-" + suffix(), "gpu-operator",
            [container("nvidia-device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", {})],
            labels={"app": "nvidia-device-plugin-daemonset",
                    "controller-revision-hash": "7f9c5b6d48", "pod-template-generation": "1"},
            owner=("DaemonSet", "nvidia-device-plugin-daemonset", dp_uid),
            generate_name="nvidia-device-plugin-daemonset-",
            priority_class="system-node-critical", priority=2000001000,
            service_account="nvidia-device-plugin",
            node_selector={"nvidia.com/gpu.deploy.device-plugin": "true"},
            tolerations=[{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
            started="2025-06-02T08:00:02Z", **on(n)))
        pods.append(pod(
            "gpu-feature-discovery-" + suffix(), "gpu-operator",
            [container("gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.17.0", {})],
            labels={"app": "gpu-feature-discovery", "app.kubernetes.io/part-of": "nvidia-gpu",
                    "controller-revision-hash": "5c8d9b7f6", "pod-template-generation": "1"},
            owner=("DaemonSet", "gpu-feature-discovery", gfd_uid),
            generate_name="gpu-feature-discovery-",
            priority_class="system-node-critical", priority=2000001000,
            service_account="nvidia-gpu-feature-discovery",
            node_selector={"nvidia.com/gpu.deploy.gpu-feature-discovery": "true"},
            tolerations=[{"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
            started="2025-06-02T08:00:05Z", **on(n)))
    return pods


def gpu_container(name, image, profile, cpu, memory, ports=(), args=None):
    resource = "nvidia.com/mig-" + profile
    both = {"cpu": cpu, "memory": memory, resource: "1"}
    return container(name, image, dict(both), dict(both), ports=ports, args=args)


def workload_pods():
    pods = []
    ns = "ml-serving"

    # gpu-medium: 5 inference replicas, one 2g.20gb each.
    rs = "llm-inference-" + rs_hash()
    rs_uid = new_uid()
    template_hash = rs.rsplit("-", 1)[1]
    for _ in range(5):
        pods.append(pod(
            rs + "-" + suffix(), ns,
            [gpu_container("vllm", "vllm/vllm-openai:v0.6.4", "2g.20gb", "4", "32Gi",
                           ports=(("http", 8000),),
                           args=["--model", "Qwen/Qwen2.5-7B-Instruct",
                                 "--gpu-memory-utilization", "0.90"])],
            labels={"app": "llm-inference", "pod-template-hash": template_hash},
            owner=("ReplicaSet", rs, rs_uid), generate_name=rs + "-",
            started="2025-06-02T08:12:44Z", **on("gpu-medium")))

    # gpu-medium: one embedding server on the node's spare 1g.10gb slices.
    sts_uid = new_uid()
    pods.append(pod(
        "text-embedder-0", ns,
        [gpu_container("tei", "ghcr.io/huggingface/text-embeddings-inference:hopper-1.5",
                       "1g.10gb", "2", "8Gi", ports=(("http", 80),),
                       args=["--model-id", "BAAI/bge-large-en-v1.5"])],
        labels={"app": "text-embedder", "apps.kubernetes.io/pod-index": "0",
                "controller-revision-hash": "text-embedder-5b7d8c6f9d",
                "statefulset.kubernetes.io/pod-name": "text-embedder-0"},
        owner=("StatefulSet", "text-embedder", sts_uid), generate_name="text-embedder-",
        started="2025-06-02T08:20:10Z", **on("gpu-medium")))

    # gpu-medium: a finished fine-tuning job. Succeeded pods hold no devices.
    job_uid = new_uid()
    pods.append(pod(
        "finetune-lora-" + suffix(), "ml-research",
        [gpu_container("trainer", "nvcr.io/nvidia/pytorch:24.10-py3", "2g.20gb", "8", "48Gi",
                       args=["python", "train.py", "--lora-rank", "16"])],
        labels={"batch.kubernetes.io/controller-uid": job_uid,
                "batch.kubernetes.io/job-name": "finetune-lora",
                "controller-uid": job_uid, "job-name": "finetune-lora"},
        owner=("Job", "finetune-lora", job_uid), generate_name="finetune-lora-",
        phase="Succeeded", started="2025-06-02T08:30:00Z", **on("gpu-medium")))

    # gpu-small: 4 speech-to-text replicas and a 2-pod evaluation job, one 1g.10gb each.
    rs = "whisper-asr-" + rs_hash()
    rs_uid = new_uid()
    template_hash = rs.rsplit("-", 1)[1]
    for _ in range(4):
        pods.append(pod(
            rs + "-" + suffix(), ns,
            [gpu_container("whisper", "onerahmet/openai-whisper-asr-webservice:v1.6.0-gpu",
                           "1g.10gb", "2", "12Gi", ports=(("http", 9000),))],
            labels={"app": "whisper-asr", "pod-template-hash": template_hash},
            owner=("ReplicaSet", rs, rs_uid), generate_name=rs + "-",
            started="2025-06-02T08:15:31Z", **on("gpu-small")))
    job_uid = new_uid()
    for index in range(2):
        pods.append(pod(
            "eval-mmlu-%d-%s" % (index, suffix()), "ml-research",
            [gpu_container("eval", "nvcr.io/nvidia/pytorch:24.10-py3", "1g.10gb", "4", "16Gi",
                           args=["python", "-m", "lm_eval", "--tasks", "mmlu"])],
            labels={"batch.kubernetes.io/controller-uid": job_uid,
                    "batch.kubernetes.io/job-completion-index": str(index),
                    "batch.kubernetes.io/job-name": "eval-mmlu",
                    "controller-uid": job_uid, "job-name": "eval-mmlu"},
            owner=("Job", "eval-mmlu", job_uid), generate_name="eval-mmlu-%d-" % index,
            started="2025-06-03T10:02:18Z", **on("gpu-small")))

    # Queued and not bound: it asks for a 2g.20gb, which gpu-medium has free, but the scheduler
    # found no node with its 4 CPUs free (a reason the inventory does not see) and marked it
    # Unschedulable, so it holds no device (docs/decisions.md, "A device's life").
    qwen = pod(
        "qwen-eval", "ml-research",
        [gpu_container("eval", "vllm/vllm-openai:v0.6.4", "2g.20gb", "4", "32Gi")],
        labels={"app": "qwen-eval"}, phase="Pending", started="2025-06-03T10:41:15Z")
    qwen["status"]["conditions"] = [{
        "lastProbeTime": None, "lastTransitionTime": "2025-06-03T10:41:15Z",
        "message": "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient "
                   "nvidia.com/mig-2g.20gb, 1 node(s) had untolerated taint "
                   "{node-role.kubernetes.io/control-plane: }. preemption: 0/3 nodes are "
                   "available: 3 No preemption victims found for incoming pod.",
        "reason": "Unschedulable", "status": "False", "type": "PodScheduled"}]
    pods.append(qwen)
    return pods


SMALL_LAYOUT = {"1g.10gb": GPUS_PER_NODE * 7}
MEDIUM_LAYOUT = {"1g.10gb": GPUS_PER_NODE * 1, "2g.20gb": GPUS_PER_NODE * 3}
NODE_UIDS = {}


def build():
    nodes = [
        control_plane_node(),
        gpu_node("gpu-small", "10.0.1.11", "10.244.1.0/24", SMALL_LAYOUT,
                 [(i, "1g.10gb") for i in range(7)], "all-1g.10gb"),
        gpu_node("gpu-medium", "10.0.1.12", "10.244.2.0/24", MEDIUM_LAYOUT,
                 [(0, "2g.20gb"), (2, "2g.20gb"), (4, "2g.20gb"), (6, "1g.10gb")],
                 "custom-3x2g.20gb-1x1g.10gb"),
    ]
    for n in nodes:
        NODE_UIDS[n["metadata"]["name"]] = n["metadata"]["uid"]
    items = nodes + system_pods() + workload_pods()
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}


def free_devices(cluster):
    """{node: {resource: free}} for MIG resources: allocatable minus bound, non-terminal pods."""
    free = {}
    for item in cluster["items"]:
        if item["kind"] == "Node":
            free[item["metadata"]["name"]] = {
                r: int(q) for r, q in item["status"]["allocatable"].items()
                if r.startswith("nvidia.com/mig-")}
    for item in cluster["items"]:
        if item["kind"] != "Pod" or item["status"]["phase"] in ("Succeeded", "Failed"):
            continue
        node_name = item["spec"].get("nodeName")
        if not node_name:
            continue
        for c in item["spec"]["containers"]:
            for r, q in c["resources"].get("limits", {}).items():
                if r in free[node_name]:
                    free[node_name][r] -= int(q)
    return free


def main(argv):
    if len(argv) > 2 or (len(argv) == 2 and argv[1] in ("-h", "--help")):
        sys.stderr.write(__doc__)
        return 0 if len(argv) == 2 else 2
    out = argv[1] if len(argv) == 2 else str(Path(__file__).with_name("demo-cluster.json"))
    cluster = build()
    # kubectl prints sorted keys with a four-space indent and a final newline.
    text = json.dumps(cluster, indent=4, sort_keys=True) + "\n"
    if out == "-":
        sys.stdout.write(text)
    else:
        Path(out).write_text(text)
    for node_name, resources in free_devices(cluster).items():
        for r, n in sorted(resources.items()):
            sys.stderr.write("%s: %s free %d\n" % (node_name, r, n))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
