#!/usr/bin/python3
"""Regenerate tests/fixtures/gpu/: AdmissionReviews that ask for GPUs.

Inputs (all inside the repository, so neither kubectl nor /work/shared is needed):
  tests/fixtures/pods/*.yaml, *.json        real recorded Pods (copied from the shared fixtures)
  tests/fixtures/gpu/kubectl-raw/*.json     raw `kubectl ... --dry-run=client -o json` output
                                            (re-capture with tests/tools/capture_kubectl_raw.py)

Usage:
  /usr/bin/python3 tests/tools/make_gpu_reviews.py            # (re)write tests/fixtures/gpu/*.json
  /usr/bin/python3 tests/tools/make_gpu_reviews.py --check    # exit 1 if any file would change
  /usr/bin/python3 tests/tools/make_gpu_reviews.py --out DIR  # write elsewhere

Needs PyYAML (Debian: python3-yaml). Output is deterministic: fixed UIDs and timestamps,
key order as the apiserver / kubectl print it, 2-space indent, trailing newline
(bench-pod-review.json is minified, one line, no trailing newline).
"""
import argparse
import copy
import json
import os
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIX = os.path.join(REPO, "tests", "fixtures")
PODS = os.path.join(FIX, "pods")
RAW = os.path.join(FIX, "gpu", "kubectl-raw")

MIG_2G = "nvidia.com/mig-2g.20gb"
MIG_1G = "nvidia.com/mig-1g.10gb"
WHOLE_GPU = "nvidia.com/gpu"

V1 = "admission.k8s.io/v1"
V1BETA1 = "admission.k8s.io/v1beta1"

# Fixed, distinct, random (version 4) UUIDs. "req" = AdmissionRequest.uid, "obj" = metadata.uid.
UIDS = {
    "runai-fractional.req": "c07167b3-6b58-4fb5-a369-4df563349d62",
    "runai-mig.req": "7368590f-27c4-4a73-81fb-30009c561b23",
    "runai-reservation.req": "fe282e82-28d7-4e71-99ab-75a354c88a18",
    "runai-reservation-limits-only.req": "5c57cd56-5110-43cb-92aa-45c0d231248f",
    "runai-reservation-limits-only.obj": "c3c7622b-f705-4090-aac2-346e9b26f19a",
    "pod.req": "5fd6ed4c-898d-41e6-a4e1-ba8f8efb07fd",
    "pod.obj": "c562eeb7-2dfe-48aa-9810-9e05fe80062a",
    "deployment.req": "19a9b1c1-26f8-4809-9f9b-18b13021f8cc",
    "deployment.obj": "eba8c307-6d01-46f0-ac5f-eaece03ae138",
    "job.req": "0088638b-9ab1-4f14-b048-396bb9c2a8ae",
    "job.obj": "d73c1cf0-fc10-459d-a4cf-3d8b98837e56",
    "cronjob.req": "64c313d0-29d9-4fd4-afc9-39467f477f15",
    "cronjob.obj": "fb34c06c-570e-4e38-947a-22e55bfcdd31",
    "deployment-update-same-gpu.req": "7721fde7-823b-4fc0-8e3f-0f41f23a4c71",
    "deployment-update-gpu-changed.req": "53403a23-da9b-4672-b378-307d5d918d97",
    "deployment-update-gpu-changed.obj": "cd5d8812-3223-45c0-89ea-b52f71366ce1",
    "pod-dryrun.req": "e27740e4-75ef-4aa2-9fa3-5107e6312774",
    "pod-dryrun.obj": "7187617a-481a-4aac-8b62-98e295183b29",
    "pod-status.req": "f8dca130-1d39-4634-88c6-81261a272a87",
    "pod-multi-container.req": "11c5a4ca-f212-49aa-b130-d63092f77016",
    "pod-multi-container.obj": "e7ca3fd4-9c20-4148-8bf6-865c379f0248",
    "pod-whole-gpu.req": "6a47aaaf-cb49-42fc-a693-7308e866367f",
    "pod-whole-gpu.obj": "a876e87e-f456-4bef-b4f1-323b7a1e1d29",
    "pod-v1beta1.req": "6d8473fe-1cf0-43e8-abe1-7415128907bc",
    "bench.req": "61dcb8a1-2561-45b2-a98a-42d66a0e4071",
}

# The apiserver stamps creationTimestamp before mutating admission; any fixed time will do.
CREATED = "2025-03-14T09:26:53Z"

KUBERNETES_ADMIN = {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]}

# Pod annotations that only exist after the pod was scheduled / started (written by the CNI
# plugin or by the run:ai scheduler when it binds the pod). A CREATE request cannot have them.
POST_SCHEDULING_ANNOTATION_PREFIXES = ("cni.projectcalico.org/",)
POST_SCHEDULING_ANNOTATIONS = {
    "runai-allocated-gpu-memory", "runai-allocated-gpus", "runai-allocated-mig-gpus",
    "runai-calculated-status", "runai-node", "runai-mig-device",
}

GPU_KEYS_TO_REPLACE = (WHOLE_GPU,)  # plus every nvidia.com/mig-* key


# ---------------------------------------------------------------------------------------- helpers

class _NoTimestampLoader(yaml.SafeLoader):
    """SafeLoader that keeps unquoted timestamps as strings (JSON has no datetime)."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    k: [(tag, rx) for (tag, rx) in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_kubectl_edit_yaml(path):
    """Load a `kubectl edit`/`kubectl get -o yaml` dump; drop the leading '#' comment header."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    while lines and lines[0].lstrip().startswith("#"):
        lines.pop(0)
    return yaml.load("".join(lines), Loader=_NoTimestampLoader)


def load_json(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def gvk(group, version, kind):
    return {"group": group, "version": version, "kind": kind}


def gvr(group, version, resource):
    return {"group": group, "version": version, "resource": resource}


KINDS = {
    "Pod": (gvk("", "v1", "Pod"), gvr("", "v1", "pods")),
    "Deployment": (gvk("apps", "v1", "Deployment"), gvr("apps", "v1", "deployments")),
    "Job": (gvk("batch", "v1", "Job"), gvr("batch", "v1", "jobs")),
    "CronJob": (gvk("batch", "v1", "CronJob"), gvr("batch", "v1", "cronjobs")),
}


def review(uid, obj, *, operation="CREATE", old=None, user=None, dry_run=False, options=None,
           sub_resource=None, api_version=V1, name=None, namespace=None):
    """A complete AdmissionReview as the apiserver sends it (field order as in real recordings)."""
    kind, resource = KINDS[obj["kind"]]
    md = obj.get("metadata", {})
    req = {"uid": uid, "kind": kind, "resource": resource}
    if sub_resource:
        req["subResource"] = sub_resource
    req["requestKind"] = copy.deepcopy(kind)
    req["requestResource"] = copy.deepcopy(resource)
    if sub_resource:
        req["requestSubResource"] = sub_resource
    req["name"] = md.get("name", "") if name is None else name
    req["namespace"] = md.get("namespace", "") if namespace is None else namespace
    req["operation"] = operation
    req["userInfo"] = copy.deepcopy(user or KUBERNETES_ADMIN)
    req["object"] = obj
    req["oldObject"] = old
    req["dryRun"] = dry_run
    if options is None:
        options = {"kind": "CreateOptions" if operation == "CREATE" else "UpdateOptions",
                   "apiVersion": "meta.k8s.io/v1"}
    req["options"] = options
    return {"apiVersion": api_version, "kind": "AdmissionReview", "request": req}


def create_options(field_manager, dry_run=False):
    o = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        o["dryRun"] = ["All"]
    o["fieldManager"] = field_manager
    return o


def gpu_resources(name=MIG_2G, count="1", requests=True, extra_limits=None, extra_requests=None):
    limits = dict(extra_limits or {})
    limits[name] = count
    res = {"limits": dict(sorted(limits.items()))}
    reqs = dict(extra_requests or {})
    if requests:
        reqs[name] = count
    if reqs:
        res["requests"] = dict(sorted(reqs.items()))
    return res


def strip_gpu(resmap):
    return {k: v for k, v in (resmap or {}).items()
            if k not in GPU_KEYS_TO_REPLACE and not k.startswith("nvidia.com/mig-")}


def object_meta(raw_md, *, namespace, uid, generation=None, resource_version=None, annotations=None,
                created=CREATED):
    """metadata in the order the apiserver serializes ObjectMeta."""
    md = {"name": raw_md["name"], "namespace": namespace, "uid": uid}
    if resource_version is not None:
        md["resourceVersion"] = resource_version
    if generation is not None:
        md["generation"] = generation
    md["creationTimestamp"] = created
    if "labels" in raw_md:
        md["labels"] = copy.deepcopy(raw_md["labels"])
    if annotations:
        md["annotations"] = annotations
    return md


def pod_spec_of(obj):
    k = obj["kind"]
    if k == "Pod":
        return obj["spec"]
    if k == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return obj["spec"]["template"]["spec"]


# ---------------------------------------------------------------------------------- run:ai pods

def runai_pod(path, *, gpu_requests=True, new_uid=None):
    """A real recorded run:ai Pod turned into what a CREATE admission sees, asking for 2g.20gb."""
    pod = load_kubectl_edit_yaml(path)
    assert pod["kind"] == "Pod", path
    pod.pop("status", None)
    md = pod["metadata"]
    for k in ("resourceVersion", "managedFields", "selfLink", "deletionTimestamp"):
        md.pop(k, None)
    if new_uid:
        md["uid"] = new_uid
    ann = md.get("annotations")
    if ann:
        for k in list(ann):
            if k in POST_SCHEDULING_ANNOTATIONS or k.startswith(POST_SCHEDULING_ANNOTATION_PREFIXES):
                del ann[k]
    spec = pod["spec"]
    spec.pop("nodeName", None)
    c0 = spec["containers"][0]
    res = c0.get("resources") or {}
    limits = strip_gpu(res.get("limits"))
    requests = strip_gpu(res.get("requests"))
    c0["resources"] = gpu_resources(MIG_2G, "1", requests=gpu_requests,
                                    extra_limits=limits, extra_requests=requests)
    # The apiserver hands a CREATE its (empty) status; PrepareForCreate fills it later.
    pod["status"] = {}
    return pod


def runai_user(namespace_of_controller, sa):
    return {"username": "system:serviceaccount:%s:%s" % (namespace_of_controller, sa),
            "groups": ["system:serviceaccounts", "system:serviceaccounts:" + namespace_of_controller,
                       "system:authenticated"]}


# --------------------------------------------------------------------------------- kubectl based

def kubectl_obj(raw_name, uid, *, namespace="default", generation=None):
    raw = load_json(os.path.join(RAW, raw_name))
    obj = {"kind": raw["kind"], "apiVersion": raw["apiVersion"],
           "metadata": object_meta(raw["metadata"], namespace=namespace, uid=uid, generation=generation)}
    for k, v in raw.items():
        if k not in obj:
            obj[k] = v
    return obj


def set_gpu(obj, name=MIG_2G, requests=True, container=0):
    pod_spec_of(obj)["containers"][container]["resources"] = gpu_resources(name, "1", requests=requests)
    return obj


def build():
    out = {}

    # a) real run:ai pods -------------------------------------------------------------------------
    frac = runai_pod(os.path.join(PODS, "pod-runai-fractional-gpu-0.5.yaml"))
    out["pod-runai-fractional.json"] = review(
        UIDS["runai-fractional.req"], frac, user=runai_user("runai", "runai-job-controller"))

    mig = runai_pod(os.path.join(PODS, "pod-runai-mig-1g.5gb-running.yaml"))
    out["pod-runai-mig.json"] = review(
        UIDS["runai-mig.req"], mig, user=runai_user("runai", "runai-job-controller"))

    resv = runai_pod(os.path.join(PODS, "pod-runai-reservation-nvidia-gpu-1.yaml"))
    out["pod-runai-reservation.json"] = review(
        UIDS["runai-reservation.req"], resv, user=runai_user("runai", "runai-scheduler"))

    resv_lo = runai_pod(os.path.join(PODS, "pod-runai-reservation-nvidia-gpu-1.yaml"), gpu_requests=False,
                        new_uid=UIDS["runai-reservation-limits-only.obj"])
    resv_lo["metadata"]["name"] = resv_lo["metadata"]["name"][:-5] + "q7x2k"
    out["pod-runai-reservation-limits-only.json"] = review(
        UIDS["runai-reservation-limits-only.req"], resv_lo, user=runai_user("runai", "runai-scheduler"))

    # b) kubectl --dry-run=client objects -----------------------------------------------------
    pod = set_gpu(kubectl_obj("pod.json", UIDS["pod.obj"]))
    out["kubectl-pod.json"] = review(UIDS["pod.req"], pod, options=create_options("kubectl-run"))

    dep = set_gpu(kubectl_obj("deployment.json", UIDS["deployment.obj"], generation=1))
    out["kubectl-deployment.json"] = review(UIDS["deployment.req"], dep, options=create_options("kubectl-create"))

    job = set_gpu(kubectl_obj("job.json", UIDS["job.obj"], generation=1))
    out["kubectl-job.json"] = review(UIDS["job.req"], job, options=create_options("kubectl-create"))

    cj = set_gpu(kubectl_obj("cronjob.json", UIDS["cronjob.obj"], generation=1))
    out["kubectl-cronjob.json"] = review(UIDS["cronjob.req"], cj, options=create_options("kubectl-create"))

    # UPDATE: the stored Deployment (generation 1, 3 replicas) patched to 5 replicas.
    def stored_deployment(uid, gpu, generation, replicas, rv):
        d = set_gpu(kubectl_obj("deployment.json", uid, generation=generation), name=gpu)
        d["metadata"] = object_meta(d["metadata"], namespace="default", uid=uid, generation=generation,
                                    resource_version=rv, created="2025-03-14T09:26:53Z",
                                    annotations={"deployment.kubernetes.io/revision": "1"})
        d["spec"]["replicas"] = replicas
        d["status"] = {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                       "availableReplicas": 3}
        return d

    old = stored_deployment(UIDS["deployment.obj"], MIG_2G, 1, 3, "48213")
    new = stored_deployment(UIDS["deployment.obj"], MIG_2G, 2, 5, "48213")
    out["kubectl-deployment-update-same-gpu.json"] = review(
        UIDS["deployment-update-same-gpu.req"], new, operation="UPDATE", old=old,
        options={"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-patch"})

    old = stored_deployment(UIDS["deployment-update-gpu-changed.obj"], MIG_1G, 1, 3, "48377")
    new = stored_deployment(UIDS["deployment-update-gpu-changed.obj"], MIG_2G, 2, 3, "48377")
    out["kubectl-deployment-update-gpu-changed.json"] = review(
        UIDS["deployment-update-gpu-changed.req"], new, operation="UPDATE", old=old,
        options={"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubectl-patch"})

    # dryRun
    pod = set_gpu(kubectl_obj("pod.json", UIDS["pod-dryrun.obj"]))
    out["kubectl-pod-dryrun.json"] = review(UIDS["pod-dryrun.req"], pod, dry_run=True,
                                            options=create_options("kubectl-run", dry_run=True))

    # pods/status UPDATE by the kubelet (the pod of kubectl-pod.json, now bound and running)
    def bound_pod(phase):
        p = set_gpu(kubectl_obj("pod.json", UIDS["pod.obj"]))
        p["metadata"] = object_meta(p["metadata"], namespace="default", uid=UIDS["pod.obj"],
                                    resource_version="48290" if phase == "Pending" else "48301")
        p["spec"]["nodeName"] = "gpu-sim-cluster-worker2"
        st = {"phase": phase, "conditions": [
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
             "lastTransitionTime": "2025-03-14T09:26:53Z"}]}
        if phase == "Running":
            st["conditions"] = [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": "2025-03-14T09:26:58Z"},
                {"type": "Initialized", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": "2025-03-14T09:26:53Z"},
                {"type": "Ready", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": "2025-03-14T09:27:04Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": None,
                 "lastTransitionTime": "2025-03-14T09:27:04Z"},
            ] + st["conditions"]
            st["hostIP"] = "172.18.0.3"
            st["hostIPs"] = [{"ip": "172.18.0.3"}]
            st["podIP"] = "10.244.2.17"
            st["podIPs"] = [{"ip": "10.244.2.17"}]
            st["startTime"] = "2025-03-14T09:26:53Z"
            st["containerStatuses"] = [{
                "name": "gpu-pod", "state": {"running": {"startedAt": "2025-03-14T09:27:03Z"}},
                "lastState": {}, "ready": True, "restartCount": 0,
                "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04", "started": True}]
            # imageID/containerID left out rather than inventing digests
        st["qosClass"] = "BestEffort"
        p["status"] = st
        return p

    out["kubectl-pod-status-subresource.json"] = review(
        UIDS["pod-status.req"], bound_pod("Running"), operation="UPDATE", old=bound_pod("Pending"),
        sub_resource="status",
        user={"username": "system:node:gpu-sim-cluster-worker2",
              "groups": ["system:nodes", "system:authenticated"]},
        options={"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "kubelet"})

    # multi-container: init container + two app containers, the second one limits-only
    pod = kubectl_obj("pod.json", UIDS["pod-multi-container.obj"])
    spec = pod["spec"]
    app = spec["containers"][0]
    app["resources"] = gpu_resources(MIG_2G)
    init = {"name": "model-warmup", "image": app["image"], "command": ["nvidia-smi", "-L"],
            "resources": gpu_resources(MIG_2G)}
    side = {"name": "gpu-exporter", "image": app["image"], "resources": gpu_resources(MIG_2G, requests=False)}
    new_spec = {"initContainers": [init], "containers": [app, side]}
    for k, v in spec.items():
        if k not in new_spec:
            new_spec[k] = v
    pod["spec"] = new_spec
    out["kubectl-pod-multi-container.json"] = review(UIDS["pod-multi-container.req"], pod,
                                                     options=create_options("kubectl-create"))

    # whole GPU, no MIG
    pod = set_gpu(kubectl_obj("pod.json", UIDS["pod-whole-gpu.obj"]), name=WHOLE_GPU)
    out["kubectl-pod-whole-gpu.json"] = review(UIDS["pod-whole-gpu.req"], pod, options=create_options("kubectl-run"))

    # v1beta1 copy of kubectl-pod.json (own request uid)
    v1b = copy.deepcopy(out["kubectl-pod.json"])
    v1b["apiVersion"] = V1BETA1
    v1b["request"]["uid"] = UIDS["pod-v1beta1.req"]
    out["kubectl-pod-v1beta1.json"] = v1b

    # bench: the recorded `kubectl get pod -o json` Pod as a CREATE, ~3 KB minified
    out["bench-pod-review.json"] = bench_review()

    return out


def bench_review():
    raw = load_json(os.path.join(PODS, "pod-kubectl-get-o-json-kind-cluster.json"))
    md = raw["metadata"]
    spec = copy.deepcopy(raw["spec"])
    spec.pop("nodeName", None)
    c = spec["containers"][0]
    c["resources"] = gpu_resources(MIG_2G, extra_limits={"memory": "8Gi"},
                                   extra_requests={"cpu": "500m", "memory": "8Gi"})
    last_applied = json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"annotations": {}, "labels": md["labels"], "name": md["name"], "namespace": md["namespace"]},
        "spec": {"containers": [{"image": c["image"], "name": c["name"],
                                 "ports": [{"containerPort": 1234}],
                                 "resources": c["resources"]}]}},
        separators=(",", ":"), sort_keys=True) + "\n"
    managed = [{
        "manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "v1",
        "time": md["creationTimestamp"], "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:annotations": {".": {}, "f:kubectl.kubernetes.io/last-applied-configuration": {}},
                           "f:labels": {".": {}, "f:name": {}}},
            "f:spec": {
                "f:containers": {'k:{"name":"myapp"}': {
                    ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                    "f:ports": {".": {}, 'k:{"containerPort":1234,"protocol":"TCP"}': {
                        ".": {}, "f:containerPort": {}, "f:protocol": {}}},
                    "f:resources": {"f:limits": {".": {}, "f:memory": {}, "f:nvidia.com/mig-2g.20gb": {}},
                                    "f:requests": {".": {}, "f:cpu": {}, "f:memory": {},
                                                   "f:nvidia.com/mig-2g.20gb": {}}},
                    "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                "f:securityContext": {}, "f:terminationGracePeriodSeconds": {}}}}]
    obj = {"kind": "Pod", "apiVersion": "v1",
           "metadata": {"name": md["name"], "namespace": md["namespace"], "uid": md["uid"],
                        "creationTimestamp": md["creationTimestamp"], "labels": md["labels"],
                        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied},
                        "managedFields": managed},
           "spec": spec,
           "status": {}}
    return review(UIDS["bench.req"], obj, options=create_options("kubectl-client-side-apply"))


def serialize(name, doc):
    if name == "bench-pod-review.json":
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(FIX, "gpu"))
    ap.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = ap.parse_args()
    docs = build()
    bench = serialize("bench-pod-review.json", docs["bench-pod-review.json"]).encode()
    if not 2800 <= len(bench) <= 3500:
        sys.stderr.write("make_gpu_reviews: bench-pod-review.json is %d bytes, want 2800..3500\n" % len(bench))
        return 1
    uids = [d["request"]["uid"] for d in docs.values()]
    if len(set(uids)) != len(uids):
        sys.stderr.write("make_gpu_reviews: request uids are not distinct\n")
        return 1
    changed = 0
    os.makedirs(args.out, exist_ok=True)
    for name in sorted(docs):
        data = serialize(name, docs[name]).encode("utf-8")
        path = os.path.join(args.out, name)
        try:
            with open(path, "rb") as f:
                same = f.read() == data
        except FileNotFoundError:
            same = False
        if args.check:
            if not same:
                print("differs:", path)
                changed += 1
            continue
        if not same:
            with open(path, "wb") as f:
                f.write(data)
        print(("wrote " if not same else "unchanged ") + path + " (%d bytes)" % len(data))
    if args.check:
        print("%d of %d files differ" % (changed, len(docs)))
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
