#!/usr/bin/python3
"""GPUs claimed the DRA way, on the real control plane: the test plays NVIDIA's DRA driver,
publishing the ResourceSlices of two H200 nodes that KWOK runs (h200-small 4 x 7 1g.10gb,
h200-medium 4 x (3 2g.20gb + 1 1g.10gb)) and the driver's DeviceClasses; the real kube-scheduler
allocates, the real resourceclaim controller makes each pod's claim from its template.

  - `gpuadmit inventory`, as gpuadmit's service account with the manifests' RBAC, lists the DRA
    devices per node (12 mig-2g.20gb on h200-medium, source dra);
  - a ResourceClaimTemplate asking exactly one 2g.20gb, applied with kubectl, is stored as a
    firstAvailable list 2g.20gb, 1g.10gb, and annotated;
  - seed 003's burst written as claims (a Deployment of 20 replicas naming that template) ends
    with all 20 claims allocated by kube-scheduler, 12 on 2g.20gb and 8 on 1g.10gb, every pod
    Running, where the claims as written leave 8 pods Pending and the allocator's first fit
    alone (firstAvailable without gpuadmit's steering) puts fewer on 2g.20gb;
  - with dra.firstAvailable off (a quota engine that takes no prioritized lists), a template for a
    2g.20gb made once all are allocated asks a 1g.10gb, from the inventory's watch of the claims;
  - a dry-run claim is answered and nothing is stored.
"""

import json
import os
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import dra_objects  # noqa: E402
from harness import check, log, run  # noqa: E402

RESOURCE = "/apis/resource.k8s.io/v1"
TEMPLATES = RESOURCE + "/namespaces/default/resourceclaimtemplates"
CLAIMS = RESOURCE + "/namespaces/default/resourceclaims"
PODS = "/api/v1/namespaces/default/pods"
WAIT_S = 120


def template(name, profile):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": dra_objects.mig_claim_spec(profile)}}


def deployment(name, template_name, replicas):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "resourceClaims": [{"name": "gpu",
                                             "resourceClaimTemplateName": template_name}],
                         "containers": [{"name": "cuda", "image": "nvidia/cuda:12.4.1-base",
                                         "command": ["sleep", "infinity"],
                                         "resources": {"claims": [{"name": "gpu"}]}}]}}}}


def publish_driver(plane, api, workdir):
    """The driver's part: DeviceClasses, KWOK nodes without GPU allocatable, their slices."""
    for cls in (dra_objects.device_class_gpu(), dra_objects.device_class_mig()):
        api.create(RESOURCE + "/deviceclasses", cls)
    nodes = os.path.join(workdir, "dra-nodes.json")
    with open(nodes, "w") as f:
        json.dump({"kind": "List", "items": [dra_objects.node(n) for n in dra_objects.SEED_NODES]}, f)
    plane.add_nodes(nodes)
    for node, layout in dra_objects.SEED_NODES.items():
        api.create(RESOURCE + "/resourceslices", dra_objects.static_mig_slice(node, layout))


def allocated_profiles(api):
    """The profile each allocated claim of default holds, as a subrequest names it ("2g-20gb",
    read off the device's name: gpu-0-mig-2g20gb-14-0), by claim."""
    out = {}
    for claim in api.get(CLAIMS)["items"]:
        results = claim.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        for r in results:
            profile = r["device"].split("-mig-")[-1].split("-")[0]  # "2g20gb"
            out[claim["metadata"]["name"]] = profile.replace("g", "g-", 1)
    return out


def inventory_sees_dra(plane):
    done = subprocess.run([plane.gpuadmit_binary, "inventory", "--kubeconfig",
                           plane.gpuadmit_kubeconfig, "-o", "json"],
                          capture_output=True, text=True, timeout=90)
    check("inventory: gpuadmit inventory against the apiserver exits 0", done.returncode == 0,
          done.stderr[-500:])
    rows = {r["node"]: r for r in json.loads(done.stdout or "[]")}
    medium = rows.get("h200-medium", {}).get("resources", {}).get("nvidia.com/mig-2g.20gb", {})
    check("inventory: h200-medium offers 12 mig-2g.20gb, from DRA",
          medium.get("allocatable") == 12 and medium.get("source") == "dra", str(medium))
    small = rows.get("h200-small", {})
    check("inventory: h200-small's pool is listed",
          small.get("draPools") == ["gpu.nvidia.com/h200-small"], str(small.get("draPools")))


def policy_file(plane, workdir, name, change):
    with open(os.path.join(plane.repo, "manifests/examples/policy.yaml")) as f:
        policy = yaml.safe_load(f)
    change(policy)
    path = os.path.join(workdir, name + ".yaml")
    with open(path, "w") as f:
        yaml.safe_dump(policy, f)
    return path


def restart_gpuadmit(plane, policy, places=True):
    plane.stop_process("gpuadmit")
    plane.start_gpuadmit(policy=policy)
    plane.register_webhook(placed=places)


def run_burst(plane, api, name, expect_allocated):
    """A template asking one 2g.20gb and a 20-replica Deployment naming it: once settled (every
    pod Running, or `expect_allocated` claims allocated and the rest unschedulable), the
    profiles allocated and the pods left Pending."""
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(template(name, "2g.20gb")))
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(deployment(name, name, 20)))

    def unschedulable(p):
        return any(c.get("reason") == "Unschedulable" for c in p["status"].get("conditions", []))

    def settled():
        pods = api.get(PODS, labelSelector="app=" + name)["items"]
        profiles = allocated_profiles(api)
        running = sum(p["status"].get("phase") == "Running" for p in pods)
        stuck = sum(unschedulable(p) for p in pods)
        if len(pods) == 20 and len(profiles) == expect_allocated and running + stuck == 20:
            return pods, profiles
        return None

    try:
        pods, profiles = api.wait(settled, WAIT_S, "the %s burst settled" % name)
    except TimeoutError:
        pods = api.get(PODS, labelSelector="app=" + name)["items"]
        profiles = allocated_profiles(api)
    counts = {p: list(profiles.values()).count(p) for p in ("2g-20gb", "1g-10gb")}
    counts["pending"] = sum(not p["spec"].get("nodeName") for p in pods)
    counts["running"] = sum(p["status"].get("phase") == "Running" for p in pods)
    log("%s: %s" % (name, counts))
    return counts


def clear_burst(plane, api, name):
    plane.kubectl("delete", "deployment/" + name, "--wait=false")
    api.wait(lambda: not api.get(PODS)["items"] and not allocated_profiles(api), WAIT_S,
             "the %s burst's pods and claims gone" % name)


def baselines(plane, api, workdir):
    """The same burst without gpuadmit's rewrite (the claims as written), and rewritten but not
    steered (the allocator's first fit on the node kube-scheduler picks)."""
    written = policy_file(plane, workdir, "as-written", lambda p: (
        p["mig"].update({"fallback": False}), p["placement"].update({"enabled": False})))
    restart_gpuadmit(plane, written, places=False)
    as_written = run_burst(plane, api, "as-written", 12)
    clear_burst(plane, api, "as-written")
    check("baseline as written: 12 allocated, 8 pods Pending",
          as_written["2g-20gb"] == 12 and as_written["pending"] == 8, str(as_written))
    unsteered = policy_file(plane, workdir, "unsteered",
                            lambda p: p["placement"].update({"enabled": False}))
    restart_gpuadmit(plane, unsteered, places=False)
    first_fit = run_burst(plane, api, "first-fit", 20)
    clear_burst(plane, api, "first-fit")
    check("baseline first fit: all 20 allocated", first_fit["running"] == 20, str(first_fit))
    print("| run | 2g.20gb allocated | 1g.10gb allocated | pods Pending |")
    print("|---|---|---|---|")
    for label, c in (("claims as written", as_written), ("firstAvailable, allocator's first fit",
                                                          first_fit)):
        print("| %s | %d | %d | %d |" % (label, c["2g-20gb"], c["1g-10gb"], c["pending"]))
    restart_gpuadmit(plane, os.path.join(plane.repo, "manifests/examples/policy.yaml"))
    return first_fit


def burst(plane, api):
    plane.kubectl("apply", "-f", "-", input=yaml.safe_dump(template("mig-2g", "2g.20gb")))
    stored = api.get(TEMPLATES + "/mig-2g")
    request = stored["spec"]["spec"]["devices"]["requests"][0]
    names = [s["name"] for s in request.get("firstAvailable", [])]
    check("template: stored as firstAvailable 2g-20gb, 1g-10gb", names == ["2g-20gb", "1g-10gb"],
          json.dumps(request))
    check("template: annotated with the list written",
          stored["metadata"].get("annotations", {}).get("gpuadmit.io/first-available")
          == "gpu: 2g.20gb,1g.10gb", str(stored["metadata"].get("annotations")))
    # run_burst applies the same template again: an UPDATE of an immutable spec that gpuadmit
    # rewrote, which must pass as a no-op.
    counts = run_burst(plane, api, "mig-2g", 20)
    again = api.get(TEMPLATES + "/mig-2g")
    check("template: kubectl apply of the same manifest again passes, the spec unchanged",
          again["spec"] == stored["spec"], json.dumps(again["spec"])[:300])
    print(plane.kubectl("get", "resourceclaims", "-o", "custom-columns=NAME:.metadata.name,"
                        "NODE:.status.allocation.nodeSelector.nodeSelectorTerms[0].matchFields[0]"
                        ".values[0],REQUEST:.status.allocation.devices.results[0].request,"
                        "DEVICE:.status.allocation.devices.results[0].device"))
    check("burst: 20 claims allocated by kube-scheduler",
          counts["2g-20gb"] + counts["1g-10gb"] == 20, str(counts))
    check("burst: 12 on 2g.20gb", counts["2g-20gb"] == 12, str(counts))
    check("burst: 8 on 1g.10gb", counts["1g-10gb"] == 8, str(counts))
    check("burst: every pod Running", counts["running"] == 20, str(counts))
    print("| steered by gpuadmit | %d | %d | %d |" % (counts["2g-20gb"], counts["1g-10gb"],
                                                     counts["pending"]))
    return counts


def chosen_at_admission(plane, api, workdir):
    """gpuadmit again, with dra.firstAvailable off: the profile is chosen from the live claims."""
    path = policy_file(plane, workdir, "no-first-available",
                       lambda p: p.update({"dra": {"firstAvailable": False}}))
    restart_gpuadmit(plane, path)
    made = api.create(TEMPLATES, template("mig-2g-now", "2g.20gb"))
    exactly = made["spec"]["spec"]["devices"]["requests"][0].get("exactly", {})
    expression = exactly.get("selectors", [{}])[0].get("cel", {}).get("expression", "")
    check("admission choice: with every 2g.20gb allocated, the template asks 1g.10gb",
          expression.endswith("'1g.10gb'"), expression)
    check("admission choice: annotated 2g.20gb->1g.10gb",
          made["metadata"].get("annotations", {}).get("gpuadmit.io/fallback") == "2g.20gb->1g.10gb",
          str(made["metadata"].get("annotations")))
    dry = api.create(CLAIMS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                              "metadata": {"name": "dry", "namespace": "default"},
                              "spec": dra_objects.mig_claim_spec("2g.20gb")}, dry_run=True)
    check("dry run: a dry-run claim is answered too, and nothing is stored",
          dry["spec"]["devices"]["requests"][0].get("exactly") is not None
          and not api.exists(CLAIMS + "/dry"), json.dumps(dry["spec"]))


def scenario(plane, args):
    api = plane.api()
    workdir = tempfile.mkdtemp(prefix="dra-", dir=plane.workdir)
    publish_driver(plane, api, workdir)
    log("published the ResourceSlices of %s" % ", ".join(dra_objects.SEED_NODES))
    inventory_sees_dra(plane)
    first_fit = baselines(plane, api, workdir)
    steered = burst(plane, api)
    check("steering: more claims on the profile asked than the allocator's first fit gives",
          steered["2g-20gb"] > first_fit["2g-20gb"],
          "steered %d, first fit %d" % (steered["2g-20gb"], first_fit["2g-20gb"]))
    chosen_at_admission(plane, api, workdir)


if __name__ == "__main__":
    sys.exit(run(scenario, "dra"))
