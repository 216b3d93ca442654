#!/usr/bin/python3
"""What the real apiserver does around gpuadmit's answer:

  - every CREATE review under tests/fixtures/ is replayed as the object itself, created through
    the real apiserver (defaulting before gpuadmit, validation after its patch): each is
    accepted, and carries what `gpuadmit review` patches into the same object;
  - server-side dry run (`kubectl apply --dry-run=server`) is answered with gpuadmit's patch but
    creates nothing and reserves nothing: 13 dry-run pods asking 2g.20gb on a cluster of 12 all
    keep 2g.20gb, and a real 12-replica burst afterwards still gets all 12;
  - the apiserver presents its client certificate (AdmissionConfiguration) and gpuadmit
    refuses any client without it, or with one the same CA signed for another name;
  - `failurePolicy: Ignore` with gpuadmit stopped: a GPU pod is created unchanged within the
    webhook's timeout, and a pod in gpuadmit's own namespace is admitted without a call.
"""

import copy
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import jsonpatch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import MIG2, asks, check, log, run  # noqa: E402
from kube import ApiError, resource_path  # noqa: E402

CREATABLE = {"Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
SERVER_FIELDS = ("uid", "creationTimestamp", "resourceVersion", "managedFields", "generation",
                 "ownerReferences", "selfLink", "deletionTimestamp")
# Opted out of gpuadmit (the webhook's namespaceSelector): what the apiserver says without it.
CONTROL_NAMESPACE = "no-gpuadmit"


def fixture_objects(repo):
    """(file, object) for each CREATE review of a kind the cluster serves."""
    files = sorted(glob.glob(os.path.join(repo, "tests/fixtures/gpu/*.json")) +
                   glob.glob(os.path.join(repo, "tests/fixtures/admission/*.json")))
    for path in files:
        with open(path) as f:
            review = json.load(f)
        request = review.get("request", {})
        obj = request.get("object")
        if request.get("operation") != "CREATE" or not obj or obj.get("kind") not in CREATABLE:
            continue
        if request.get("dryRun") or request.get("subResource"):
            continue
        yield path, review, obj


def creatable(obj, namespace):
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    for key in SERVER_FIELDS:
        meta.pop(key, None)
    meta["namespace"] = namespace
    if not meta.get("name"):
        meta["name"] = meta.get("generateName", "obj-").rstrip("-") + "-fixture"
    meta.pop("generateName", None)
    obj.pop("status", None)
    spec = obj.get("spec", {})
    spec.pop("nodeName", None)  # a recorded binding names a node this cluster does not have
    if obj["kind"] == "Job":  # the recorded Job's selector was generated for its own uid
        spec.pop("selector", None)
        labels = spec.get("template", {}).get("metadata", {}).get("labels", {})
        for key in ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                    "batch.kubernetes.io/job-name"):
            labels.pop(key, None)
    # A recorded pod's service-account volume names a token that does not exist here.
    for pod_spec in pod_specs(obj):
        pod_spec.pop("nodeName", None)
        pod_spec["volumes"] = [v for v in pod_spec.get("volumes", [])
                               if not v.get("name", "").startswith("kube-api-access-")]
        for c in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
            c["volumeMounts"] = [m for m in c.get("volumeMounts", [])
                                 if not m.get("name", "").startswith("kube-api-access-")]
        pod_spec.pop("serviceAccountName", None)
        pod_spec.pop("serviceAccount", None)
    return obj


def pod_specs(obj):
    spec = obj.get("spec", {})
    if obj["kind"] == "Pod":
        return [spec]
    if obj["kind"] == "CronJob":
        return [spec.get("jobTemplate", {}).get("spec", {}).get("template", {}).get("spec", {})]
    return [spec.get("template", {}).get("spec", {})]


def expected_patch(args, policy, plane, review_obj):
    """What `gpuadmit review` patches into `review_obj`, against the live cluster's state."""
    with tempfile.TemporaryDirectory() as d:
        snapshot = os.path.join(d, "cluster.json")
        with open(snapshot, "w") as f:
            f.write(plane.kubectl("get", "nodes,pods", "-A", "-o", "json"))
        review = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                  "request": review_obj}
        body = os.path.join(d, "review.json")
        with open(body, "w") as f:
            json.dump(review, f)
        done = subprocess.run([args.gpuadmit, "review", "--policy", policy, "--cluster",
                               snapshot, body], capture_output=True, text=True, timeout=60)
        answer = json.loads(done.stdout)["response"]
        if "patch" not in answer:
            return []
        import base64
        return json.loads(base64.b64decode(answer["patch"]))


def without_reservation(value):
    """The reservation's id is the serving replica's own: compared by presence only."""
    if isinstance(value, dict):
        return {k: ("<id>" if k.endswith("/reservation") else without_reservation(v))
                for k, v in value.items()}
    return value


def invalid_as_recorded(api, manifest):
    """The apiserver's refusal of `manifest` where gpuadmit is never called (a namespace that
    opts out), or None when it is valid there."""
    control = copy.deepcopy(manifest)
    control["metadata"]["namespace"] = CONTROL_NAMESPACE
    try:
        api.create(resource_path(control), control, dry_run=True)
    except ApiError as e:
        return str(e)
    return None


def scenario(plane, args):
    api = plane.api()
    policy = os.path.join(args.source_dir, "manifests/examples/policy.yaml")
    namespace = "fixtures"
    plane.create_namespace(namespace)
    plane.create_namespace(CONTROL_NAMESPACE, labels={"gpuadmit.io/ignore": "true"})
    accepted = 0
    for path, review, obj in fixture_objects(args.source_dir):
        name = os.path.basename(path)
        manifest = creatable(obj, namespace)
        collection = resource_path(manifest)
        # The review gpuadmit would see for this object, as `gpuadmit review` decides it now.
        request = copy.deepcopy(review["request"])
        request["object"] = manifest
        request["namespace"] = namespace
        request["dryRun"] = False
        ops = expected_patch(args, policy, plane, request)
        try:
            created = api.create(collection, manifest)
        except ApiError as e:
            refusal = invalid_as_recorded(api, manifest)
            if refusal:
                log("%s: not replayed, invalid as recorded even without gpuadmit: %s"
                    % (name, refusal[:200]))
            else:
                check("%s: accepted by the real apiserver" % name, False, str(e))
            continue
        accepted += 1
        want = jsonpatch.apply_patch(manifest, ops) if ops else manifest
        missing = []
        for op in ops:
            if op["op"] not in ("add", "replace"):
                continue
            pointer = jsonpatch.JsonPointer(op["path"])
            try:
                have = pointer.resolve(created)
            except jsonpatch.JsonPointerException:
                missing.append(op["path"])
                continue
            if op["path"].endswith("~1reservation"):
                continue  # present, with this replica's own id
            if without_reservation(have) != without_reservation(pointer.resolve(want)):
                missing.append("%s: %r != %r" % (op["path"], have, pointer.resolve(want)))
        check("%s: accepted, and carries gpuadmit's %d-op patch" % (name, len(ops)),
              not missing, "; ".join(missing)[:600])
        api.delete(collection + "/" + manifest["metadata"]["name"] + "?propagationPolicy=Background")
    check("at least 20 fixture objects were replayed", accepted >= 20, "%d" % accepted)
    wait_empty(api, namespace)

    dry_run(plane, api)
    network_policy(plane, api)
    client_authentication(plane)
    fail_open(plane, api)


def wait_empty(api, namespace):
    api.wait(lambda: not api.get("/api/v1/namespaces/%s/pods" % namespace)["items"], 60,
             "the fixtures' pods to be gone")


def mig_pod(name, namespace="default"):
    """A pod asking one 2g.20gb device, that the restricted Pod Security level admits."""
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace},
            "spec": {"securityContext": {"runAsNonRoot": True, "runAsUser": 65532,
                                         "seccompProfile": {"type": "RuntimeDefault"}},
                     "containers": [{"name": "cuda", "image": "cuda",
                                     "securityContext": {"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}},
                                     "resources": {"limits": {MIG2: "1"}}}]}}


def dry_run(plane, api):
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        yaml.safe_dump_all([mig_pod("dry-%02d" % i) for i in range(13)], f)
    out = plane.kubectl("apply", "--dry-run=server", "-f", f.name, "-o", "json")
    items = json.loads(out).get("items", [])
    kept = [p for p in items if asks(p) == [MIG2]]
    check("dry run: 13 pods answered, all keep 2g.20gb (no dry-run review reserved a device)",
          len(items) == 13 and len(kept) == 13, "%d answered, %d kept" % (len(items), len(kept)))
    check("dry run: the answers carry gpuadmit's placement (node affinity)",
          all("affinity" in p["spec"] for p in items))
    check("dry run: nothing was created",
          not api.get("/api/v1/namespaces/default/pods")["items"])
    for i in range(12):
        api.create("/api/v1/namespaces/default/pods", mig_pod("real-%02d" % i))
    pods = api.get("/api/v1/namespaces/default/pods")["items"]
    check("dry run: 12 real pods afterwards all get 2g.20gb",
          sum(1 for p in pods if asks(p) == [MIG2]) == 12,
          str([asks(p) for p in pods]))
    for p in pods:
        api.delete("/api/v1/namespaces/default/pods/" + p["metadata"]["name"])


def network_policy(plane, api):
    """The network-policy component renders and the real apiserver accepts it; its ports are the
    Deployment's."""
    rendered = yaml.safe_load(plane.kubectl(
        "kustomize", os.path.join(plane.repo, "manifests/overlays/network-policy")))
    rendered["metadata"]["namespace"] = "gpuadmit"
    try:
        created = api.create("/apis/networking.k8s.io/v1/namespaces/gpuadmit/networkpolicies",
                             rendered)
        ok, why = created["metadata"]["name"] == "gpuadmit", ""
    except ApiError as e:
        ok, why = False, str(e)
    check("network policy: the component's NetworkPolicy is accepted by the real apiserver", ok,
          why)
    with open(os.path.join(plane.repo, "manifests/base/deployment.yaml")) as f:
        deployment = yaml.safe_load(f)
    ports = {p["containerPort"] for c in deployment["spec"]["template"]["spec"]["containers"]
             for p in c.get("ports", [])}
    allowed = {p["port"] for rule in rendered["spec"]["ingress"] for p in rule["ports"]}
    check("network policy: it admits exactly the Deployment's ports %s" % sorted(ports),
          allowed == ports, "%s != %s" % (sorted(allowed), sorted(ports)))


def client_authentication(plane):
    """The apiserver's calls carry its client certificate (every review above came that way);
    gpuadmit refuses any other client at the TLS handshake."""
    import socket
    import ssl
    port = plane.gpuadmit_ports["gpuadmit"][0]
    ca = os.path.join(plane.gpuadmit_certs, "ca.crt")

    def handshake(cert=None):
        context = ssl.create_default_context(cafile=ca)
        if cert:
            context.load_cert_chain(plane.pki.path(cert + ".crt"), plane.pki.path(cert + ".key"))
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
                with context.wrap_socket(raw, server_hostname="localhost") as tls:
                    tls.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
                    return tls.recv(64).decode(errors="replace").split("\r\n")[0]
        except (ssl.SSLError, ConnectionError, OSError) as e:
            return "refused: %s" % e.__class__.__name__

    check("client auth: the apiserver's client certificate is served",
          handshake("webhook-client").startswith("HTTP/1.1 200"), handshake("webhook-client"))
    check("client auth: a client without a certificate is refused at the handshake",
          handshake().startswith("refused"), handshake())
    check("client auth: a certificate of the same CA for another name is refused",
          handshake("admin").startswith("refused"), handshake("admin"))


def fail_open(plane, api):
    gpuadmit = plane.processes["gpuadmit"]
    os.kill(gpuadmit.pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        pod = api.create("/api/v1/namespaces/default/pods", mig_pod("while-hung"))
        took = time.monotonic() - started
        # While it is hung, a call to it would take the whole 5 s timeout: a quick answer in its
        # own namespace shows the apiserver did not call it.
        started = time.monotonic()
        own = api.create("/api/v1/namespaces/gpuadmit/pods", mig_pod("own-namespace", "gpuadmit"))
        own_took = time.monotonic() - started
    finally:
        os.kill(gpuadmit.pid, signal.SIGCONT)
    check("fail open: with gpuadmit hung (SIGSTOP), a GPU pod is created unchanged after the "
          "webhook's 5 s timeout (%.2f s)" % took,
          asks(pod) == [MIG2] and 4.5 < took < 8 and
          not any(k.startswith("gpuadmit.io/") for k in pod["metadata"].get("annotations", {})))
    check("fail open: gpuadmit's own namespace is admitted without a call, even while it hangs "
          "(%.3f s)" % own_took, own_took < 2.5 and own["metadata"]["name"] == "own-namespace")
    code = plane.stop_process("gpuadmit")
    log("gpuadmit stopped (exit %s)" % code)
    started = time.monotonic()
    pod = api.create("/api/v1/namespaces/default/pods", mig_pod("while-down"))
    took = time.monotonic() - started
    check("fail open: a GPU pod is created while gpuadmit is down", asks(pod) == [MIG2])
    check("fail open: ... unchanged (no gpuadmit annotation)",
          not any(k.startswith("gpuadmit.io/") for k in pod["metadata"].get("annotations", {})))
    check("fail open: ... within the webhook's 5 s timeout (%.2f s)" % took, took < 5.5)


if __name__ == "__main__":
    sys.exit(run(scenario, "admission"))
