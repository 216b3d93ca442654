#!/usr/bin/python3
"""The Helm chart (charts/gpuadmit) with the pinned helm, on a real control plane:

  - `helm lint --strict` passes, and a bad value is refused by the values schema;
  - `helm template` renders every mode (certificates by the chart, by cert-manager, from a
    Secret; the monitoring objects) and each policy it renders passes `gpuadmit check-policy`,
    gpu-autoscaler's values.yaml keys mapped onto the policy;
  - the switches for the apiserver's client certificate and the NetworkPolicy render what they
    say;
  - `helm install` (both switches on) into the control plane is accepted by the real apiserver
    (its validation is the schema check of every object), then gpuadmit, run as the chart's
    service account with the chart's policy, admits a GPU pod through the chart's
    MutatingWebhookConfiguration (clientConfig.url: gpuadmit runs on this host, KWOK nodes run
    no containers);
  - `helm uninstall` removes the webhook registration, and pods are created without it.
"""

import base64
import os
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from control_plane import WEBHOOK_LIVE_S, _webhook_answers, write_kubeconfig  # noqa: E402
from harness import PODS, check, log, run  # noqa: E402

KUBE_VERSION = "1.37.2"
NAMESPACE = "gpuadmit"
WEBHOOKS = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gpuadmit"
# gpu-autoscaler's values.yaml keys, as its users write them.
AUTOSCALER_VALUES = """
admissionWebhook:
  failurePolicy: Ignore
  exemptNamespaces: [kube-system, production]
  optimization: {enableMIG: true, enableMPS: true, enableTimeSlicing: false,
                 autoDetectWorkloadType: true}
sharing:
  mps: {enabled: true, maxClients: 16, defaultActiveThreads: 100,
        resources: {memoryLimitMB: 2048}}
binPacking: {strategy: bestfit}
"""


def helm(plane, *args, check_rc=True):
    argv = [plane.tool("helm"), *args]
    env = dict(os.environ, HELM_CACHE_HOME=os.path.join(plane.workdir, "helm/cache"),
               HELM_CONFIG_HOME=os.path.join(plane.workdir, "helm/config"),
               HELM_DATA_HOME=os.path.join(plane.workdir, "helm/data"))
    done = subprocess.run(argv, capture_output=True, text=True, timeout=180, env=env)
    if check_rc and done.returncode != 0:
        raise RuntimeError("helm %s: exit %d: %s" % (" ".join(args), done.returncode,
                                                     done.stderr.strip()[-1500:]))
    return done


def rendered(plane, chart, *values):
    done = helm(plane, "template", "gpuadmit", chart, "-n", NAMESPACE, "--kube-version",
                KUBE_VERSION, *values)
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def policy_of(objects):
    for o in objects:
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "gpuadmit-policy":
            return o["data"]["policy.yaml"]
    return None


def check_policy(plane, text, name):
    path = os.path.join(plane.workdir, name)
    with open(path, "w") as f:
        f.write(text)
    done = subprocess.run([plane.gpuadmit_binary, "check-policy", path], capture_output=True,
                          text=True, timeout=30)
    return done.returncode == 0, done.stdout + done.stderr, path


def scenario(plane, args):
    chart = os.path.join(plane.repo, "charts/gpuadmit")
    lint = helm(plane, "lint", chart, "--strict", "--kube-version", KUBE_VERSION, check_rc=False)
    check("helm lint --strict charts/gpuadmit passes", lint.returncode == 0,
          (lint.stdout + lint.stderr)[-800:])
    bad = helm(plane, "template", "g", chart, "--kube-version", KUBE_VERSION,
               "--set", "webhook.failurePolicy=Sometimes", check_rc=False)
    check("a value outside the schema is refused, naming it",
          bad.returncode != 0 and "/webhook/failurePolicy" in bad.stderr, bad.stderr[-400:])

    default = rendered(plane, chart)
    kinds = sorted({o["kind"] for o in default})
    check("helm template: the kustomize base's objects, the policy and the chart's Secret",
          kinds == ["ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment",
                    "MutatingWebhookConfiguration", "PodDisruptionBudget", "Role",
                    "RoleBinding", "Secret", "Service", "ServiceAccount"], kinds)
    hook = [o for o in default if o["kind"] == "MutatingWebhookConfiguration"][0]["webhooks"][0]
    with open(os.path.join(plane.repo, "manifests/base/mutatingwebhookconfiguration.yaml")) as f:
        base = yaml.safe_load(f)["webhooks"][0]
    check("the chart's webhook has the base's rules and matchConditions",
          hook["rules"] == base["rules"] and hook["matchConditions"] == base["matchConditions"])
    with open(os.path.join(plane.repo, "manifests/examples/policy.yaml")) as f:
        shipped = f.read()
    ok, out, _ = check_policy(plane, policy_of(default), "default-policy.yaml")
    check("the default policy is the shipped one, as written, and passes check-policy",
          ok and policy_of(default).strip() == shipped.strip(), out)

    managed = rendered(plane, chart, "--set", "certificates.source=cert-manager",
                       "--set", "metrics.service=true",
                       "--set", "metrics.serviceMonitor.enabled=true",
                       "--set", "metrics.prometheusRule.enabled=true")
    kinds = {o["kind"] for o in managed}
    check("cert-manager and monitoring: Issuers, Certificates, ServiceMonitor, PrometheusRule; "
          "no chart Secret",
          {"Issuer", "Certificate", "ServiceMonitor", "PrometheusRule"} <= kinds and
          "Secret" not in kinds, sorted(kinds))
    rule = [o for o in managed if o["kind"] == "PrometheusRule"][0]
    check("the PrometheusRule carries the monitoring overlay's alerts",
          len(rule["spec"]["groups"][0]["rules"]) >= 5, len(rule["spec"]["groups"][0]["rules"]))

    with open(plane.pki.path("ca.crt"), "rb") as f:
        client_ca = f.read()
    client_auth = ["--set", "webhook.clientAuth.enabled=true",
                   "--set", "webhook.clientAuth.caBundle=" + base64.b64encode(client_ca).decode()]
    elected = [o for o in rendered(plane, chart, *client_auth) if o["kind"] == "Deployment"][0]
    elected_args = elected["spec"]["template"]["spec"]["containers"][0]["args"]
    check("clientAuth with three leader-elected replicas: each requires the apiserver's "
          "certificate (the replicas trust each other's serving certificate)",
          elected["spec"]["replicas"] == 3 and "--leader-elect" in elected_args and
          "--client-ca" in elected_args, elected_args)
    guarded = rendered(plane, chart, "--set", "replicas=1", *client_auth,
                       "--set", "webhook.clientAuth.clientName=kube-apiserver",
                       "--set", "networkPolicy.enabled=true")
    args = [o for o in guarded if o["kind"] == "Deployment"][0]["spec"]["template"]["spec"][
        "containers"][0]["args"]
    ca_map = [o for o in guarded if o["kind"] == "ConfigMap" and
              o["metadata"]["name"] == "gpuadmit-client-ca"]
    check("clientAuth: serve requires the apiserver's client certificate, from the CA given",
          "--client-ca" in args and args[args.index("--client-name") + 1] == "kube-apiserver" and
          ca_map and ca_map[0]["data"]["ca.crt"].strip() == client_ca.decode().strip(), args)
    policies = [o for o in guarded if o["kind"] == "NetworkPolicy"]
    check("networkPolicy: the webhook port from the control plane and the replicas only",
          policies and [r["ports"][0]["port"] for r in policies[0]["spec"]["ingress"]] ==
          [8443, 8443, 9090])

    values = os.path.join(plane.workdir, "autoscaler-values.yaml")
    with open(values, "w") as f:
        f.write(AUTOSCALER_VALUES)
    mapped_text = policy_of(rendered(plane, chart, "-f", values))
    ok, out, _ = check_policy(plane, mapped_text, "mapped-policy.yaml")
    mapped = yaml.safe_load(mapped_text)
    check("gpu-autoscaler's values map onto a policy that passes check-policy", ok, out)
    check("... time-slicing off, MPS at 100% threads, 2048 MiB and 16 clients, bestfit, the "
          "exempt list",
          mapped["sharing"]["modes"] == {"mig": True, "mps": True, "timeSlicing": False} and
          mapped["sharing"]["mps"] == {"activeThreadPercentage": 100, "memoryLimit": 2048,
                                       "maxClients": 16} and
          mapped["placement"]["strategy"] == "bestfit" and
          mapped["exemptNamespaces"] == ["kube-system", "production"], mapped.get("sharing"))

    # The install: certificates from a Secret (gpuadmit serves on this host with a certificate
    # for 127.0.0.1), the webhook first at a port nothing listens on.
    certs = os.path.join(plane.workdir, "gpuadmit-certs")
    subprocess.run([os.path.join(plane.repo, "certs/gen-certs.sh"), "--out", certs],
                   check=True, capture_output=True, timeout=60)
    with open(os.path.join(certs, "ca.crt"), "rb") as f:
        bundle = base64.b64encode(f.read()).decode()
    common = ["-n", NAMESPACE, "--kubeconfig", plane.kubeconfig, "--set", "replicas=1",
              "--set", "certificates.source=secret", "--set", "webhook.caBundle=" + bundle,
              *client_auth, "--set", "networkPolicy.enabled=true"]
    installed = helm(plane, "install", "gpuadmit", chart, "--create-namespace", *common,
                     "--set", "webhook.url=https://127.0.0.1:1/mutate", check_rc=False)
    check("helm install is accepted by the apiserver", installed.returncode == 0,
          installed.stderr[-800:])
    api = plane.api()
    check("the chart's objects are in the cluster",
          api.exists(WEBHOOKS) and
          api.exists("/api/v1/namespaces/gpuadmit/configmaps/gpuadmit-policy") and
          api.exists("/apis/apps/v1/namespaces/gpuadmit/deployments/gpuadmit") and
          api.exists("/api/v1/namespaces/gpuadmit/serviceaccounts/gpuadmit") and
          api.exists("/apis/networking.k8s.io/v1/namespaces/gpuadmit/networkpolicies/gpuadmit"))

    # gpuadmit as the chart's service account, with the chart's policy as installed.
    token = api.create("/api/v1/namespaces/gpuadmit/serviceaccounts/gpuadmit/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600}})["status"]["token"]
    plane.gpuadmit_kubeconfig = write_kubeconfig(
        os.path.join(plane.workdir, "chart-sa.kubeconfig"), plane.server,
        plane.pki.path("ca.crt"), token=token, namespace=NAMESPACE)
    plane.gpuadmit_certs = certs
    installed_policy = api.get("/api/v1/namespaces/gpuadmit/configmaps/gpuadmit-policy")
    _, _, policy_path = check_policy(plane, installed_policy["data"]["policy.yaml"],
                                     "installed-policy.yaml")
    port, _ = plane.start_gpuadmit(policy=policy_path)
    upgraded = helm(plane, "upgrade", "gpuadmit", chart, *common,
                    "--set", "webhook.url=https://127.0.0.1:%d/mutate" % port, check_rc=False)
    check("helm upgrade points the webhook at gpuadmit", upgraded.returncode == 0,
          upgraded.stderr[-800:])
    api.wait(lambda: _webhook_answers(api), WEBHOOK_LIVE_S,
             "the apiserver to call gpuadmit through the chart's webhook")

    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "through-the-chart", "namespace": "default"},
           "spec": {"containers": [{"name": "main", "image": "cuda",
                                    "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
    created = api.create(PODS, pod)
    check("a GPU pod is admitted through the chart's webhook: gpuadmit placed it",
          "affinity" in created["spec"] and
          any(k.startswith("gpuadmit.io/") for k in created["metadata"].get("annotations", {})),
          created["spec"].get("affinity"))

    removed = helm(plane, "uninstall", "gpuadmit", "-n", NAMESPACE, "--kubeconfig",
                   plane.kubeconfig, check_rc=False)
    check("helm uninstall removes the webhook registration",
          removed.returncode == 0 and not api.exists(WEBHOOKS), removed.stderr[-400:])
    pod["metadata"]["name"] = "after-uninstall"
    after = api.create(PODS, pod)
    check("... and pods are then created as written", "affinity" not in after["spec"])
    log("chart scenario done")


if __name__ == "__main__":
    sys.exit(run(scenario, "helm", nodes=True, gpuadmit=False))
