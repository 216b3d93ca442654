"""A real Kubernetes control plane on loopback, for the cluster tests and `make cluster`: etcd,
kube-apiserver (RBAC, the default admission plugins, certificates made here),
kube-controller-manager, kube-scheduler (default profile), KWOK keeping fake GPU nodes Ready and
bound pods Running, and gpuadmit registered by the MutatingWebhookConfiguration of manifests/.

    plane = ControlPlane(workdir, repo=REPO, gpuadmit=BINARY)
    plane.start()                        # every step bounded; StartError names what failed
    plane.add_nodes("tests/cluster/nodes.json")
    plane.start_gpuadmit()               # serve --kubeconfig, as the gpuadmit service account
    plane.register_webhook()             # manifests/' webhook, clientConfig.url to the process
    api = plane.api()                    # a Kube client as the cluster admin
    plane.stop()

Everything listens on 127.0.0.1 on ports chosen free. The components' binaries are the ones
tests/cluster/build-tools.sh builds into build/cluster/bin.
"""

import base64
import json
import os
import socket
import subprocess
import time
import urllib.request

import yaml

from kube import Kube, resource_path
from pki import Pki
from processes import Process, StartError

# Per-step deadlines: each is several times what the step takes on a 2-vCPU machine, so a
# missed one means the component is broken, not slow.
ETCD_READY_S = 30
APISERVER_READY_S = 90
CONTROLLERS_READY_S = 60
GPUADMIT_READY_S = 30
WEBHOOK_LIVE_S = 30
NODES_READY_S = 60

# The apiserver's own Service range; no traffic goes there (no kube-proxy runs).
SERVICE_CIDR = "10.96.0.0/16"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_kubeconfig(path, server, ca, cert=None, key=None, token=None, namespace=None):
    user = {"token": token} if token else {"client-certificate": cert, "client-key": key}
    context = {"cluster": "local", "user": "user"}
    if namespace:
        context["namespace"] = namespace
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "local",
        "clusters": [{"name": "local", "cluster": {"server": server, "certificate-authority": ca}}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "local", "context": context}],
    }
    with open(path, "w") as f:
        yaml.safe_dump(config, f)
    os.chmod(path, 0o600)
    return path


def _https_ok(url, ca, cert, key):
    import ssl
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)
    with urllib.request.urlopen(url, context=context, timeout=5) as r:
        return r.status == 200


def _http_ok(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.status == 200


def _insecure_https_ok(url):
    import ssl
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url, context=context, timeout=5) as r:
        return r.status == 200


# The name the apiserver's webhook client certificate holds, and gpuadmit requires
# (serve --client-name).
WEBHOOK_CLIENT = "kube-apiserver"


class ControlPlane:
    def __init__(self, workdir, repo, gpuadmit=None, bin_dir=None, log=print, client_auth=True):
        """`client_auth`: the apiserver presents a client certificate to webhooks (its
        AdmissionConfiguration), and gpuadmit requires it (--client-ca, --client-name)."""
        self.client_auth = client_auth
        self.workdir = os.path.abspath(workdir)
        self.repo = os.path.abspath(repo)
        self.bin = os.path.abspath(bin_dir or os.path.join(self.repo, "build/cluster/bin"))
        self.gpuadmit_binary = gpuadmit
        self.log = log
        self.logs = os.path.join(self.workdir, "logs")
        os.makedirs(self.logs, exist_ok=True)
        self.pki = Pki(os.path.join(self.workdir, "pki"))
        self.processes = {}
        self.apiserver_port = None
        self.gpuadmit_ports = {}

    # --- the control plane -------------------------------------------------------------------

    def tool(self, name):
        path = os.path.join(self.bin, name)
        if not os.access(path, os.X_OK):
            raise StartError("%s is missing: build it with `make cluster-tools` "
                             "(tests/cluster/build-tools.sh)" % path)
        return path

    def _run(self, name, argv, ready, seconds, env=None):
        self.log("starting %s" % name)
        process = Process(name, argv, self.logs, env).start()
        self.processes[name] = process
        process.wait_ready(ready, seconds)
        return process

    def start(self):
        started = time.monotonic()
        self._make_certificates()
        self._start_etcd()
        self._start_apiserver()
        self._start_controllers()
        self.log("control plane ready in %.1f s: %s" % (time.monotonic() - started, self.server))
        return self

    def _make_certificates(self):
        p = self.pki
        p.ensure_ca()
        p.serving("kube-apiserver", dns=["localhost", "kubernetes", "kubernetes.default",
                                         "kubernetes.default.svc",
                                         "kubernetes.default.svc.cluster.local"],
                  ips=["127.0.0.1", "10.96.0.1"])
        p.client("admin", user="kubernetes-admin", group="system:masters")
        p.client("kube-controller-manager", user="system:kube-controller-manager")
        p.client("kube-scheduler", user="system:kube-scheduler")
        p.client("kwok", user="kwok-controller", group="system:masters")
        p.client("webhook-client", user=WEBHOOK_CLIENT)
        p.service_account_keys()

    def _start_etcd(self):
        client, peer = free_port(), free_port()
        self.etcd_url = "http://127.0.0.1:%d" % client
        data = os.path.join(self.workdir, "etcd")
        self._run("etcd", [
            self.tool("etcd"), "--name", "local", "--data-dir", data,
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % peer,
            "--initial-cluster", "local=http://127.0.0.1:%d" % peer,
            # A test cluster's data is thrown away: no fsync keeps a slow disk off every write.
            "--unsafe-no-fsync", "--log-level", "warn",
        ], lambda: _http_ok(self.etcd_url + "/health"), ETCD_READY_S)

    def _start_apiserver(self):
        p = self.pki
        self.apiserver_port = free_port()
        self.server = "https://127.0.0.1:%d" % self.apiserver_port
        sa_key, sa_pub = p.service_account_keys()
        self._run("kube-apiserver", [
            self.tool("kube-apiserver"),
            "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(self.apiserver_port),
            "--tls-cert-file", p.path("kube-apiserver.crt"),
            "--tls-private-key-file", p.path("kube-apiserver.key"),
            "--client-ca-file", p.path("ca.crt"),
            "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
            "--service-account-key-file", sa_pub,
            "--service-account-signing-key-file", sa_key,
            "--service-cluster-ip-range", SERVICE_CIDR,
            # Loopback is not a valid Endpoints address: the `kubernetes` Service keeps none.
            "--endpoint-reconciler-type", "none",
            "--cert-dir", os.path.join(self.workdir, "apiserver-certs"),
            "--allow-privileged",
            *self._admission_configuration(),
            "--v", "1",
        ], lambda: _https_ok(self.server + "/readyz", p.path("ca.crt"), p.path("admin.crt"),
                             p.path("admin.key")), APISERVER_READY_S)
        self.kubeconfig = write_kubeconfig(
            os.path.join(self.workdir, "kubeconfig"), self.server, p.path("ca.crt"),
            p.path("admin.crt"), p.path("admin.key"))

    def _admission_configuration(self):
        """The apiserver's credentials for calling webhooks: the client certificate
        webhook-client.crt for every webhook ("*": this cluster's only one is gpuadmit, on a
        port chosen at start). In a cluster the user is named gpuadmit.gpuadmit.svc."""
        if not self.client_auth:
            return []
        p = self.pki
        kubeconfig = os.path.join(self.workdir, "webhook-client.kubeconfig")
        with open(kubeconfig, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "users": [{
                "name": "*", "user": {"client-certificate": p.path("webhook-client.crt"),
                                      "client-key": p.path("webhook-client.key")}}]}, f)
        config = os.path.join(self.workdir, "admission-configuration.yaml")
        with open(config, "w") as f:
            yaml.safe_dump({
                "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                "plugins": [{"name": "MutatingAdmissionWebhook", "configuration": {
                    "apiVersion": "apiserver.config.k8s.io/v1",
                    "kind": "WebhookAdmissionConfiguration", "kubeConfigFile": kubeconfig}}]}, f)
        return ["--admission-control-config-file", config]

    def _component_kubeconfig(self, name):
        p = self.pki
        return write_kubeconfig(os.path.join(self.workdir, name + ".kubeconfig"), self.server,
                                p.path("ca.crt"), p.path(name + ".crt"), p.path(name + ".key"))

    def _start_controllers(self):
        kcm_port, scheduler_port = free_port(), free_port()
        self._run("kube-controller-manager", [
            self.tool("kube-controller-manager"),
            "--kubeconfig", self._component_kubeconfig("kube-controller-manager"),
            # What the tests' workloads need. No node-lifecycle controller: KWOK's nodes stay
            # Ready without heartbeats.
            "--controllers", "deployment-controller,replicaset-controller,"
            "statefulset-controller,daemonset-controller,job-controller,cronjob-controller,"
            "garbage-collector-controller,namespace-controller,serviceaccount-controller,"
            "ttl-after-finished-controller,disruption-controller,root-ca-certificate-publisher-controller,"
            "resourceclaim-controller",
            "--root-ca-file", self.pki.path("ca.crt"),
            # Each controller acts as its own service account, with its bootstrap role.
            "--use-service-account-credentials=true",
            "--leader-elect=false", "--bind-address", "127.0.0.1",
            "--secure-port", str(kcm_port),
            "--cert-dir", os.path.join(self.workdir, "kcm-certs"),
            # A 200-pod burst is created by one ReplicaSet sync; the default 20 QPS would
            # spread it over ten seconds.
            "--kube-api-qps", "500", "--kube-api-burst", "1000",
            "--concurrent-replicaset-syncs", "10", "--concurrent-job-syncs", "10",
            "--v", "1",
        ], lambda: _insecure_https_ok("https://127.0.0.1:%d/healthz" % kcm_port),
            CONTROLLERS_READY_S)
        self._run("kube-scheduler", [
            self.tool("kube-scheduler"),
            "--kubeconfig", self._component_kubeconfig("kube-scheduler"),
            "--leader-elect=false", "--bind-address", "127.0.0.1",
            "--secure-port", str(scheduler_port),
            "--cert-dir", os.path.join(self.workdir, "scheduler-certs"),
            "--kube-api-qps", "500", "--kube-api-burst", "1000",
            "--v", "1",
        ], lambda: _insecure_https_ok("https://127.0.0.1:%d/healthz" % scheduler_port),
            CONTROLLERS_READY_S)
        kwok_port = free_port()
        self._run("kwok", [
            self.tool("kwok"),
            "--kubeconfig", self._component_kubeconfig("kwok"),
            "--config", os.path.join(self.repo, "tests/cluster/kwok-stages.yaml"),
            "--manage-all-nodes=false",
            "--manage-nodes-with-annotation-selector", KWOK_NODE_ANNOTATION + "=fake",
            "--server-address", "127.0.0.1:%d" % kwok_port,
            "--node-ip", "127.0.0.1", "--cidr", "10.244.0.1/16",
        ], lambda: _http_ok("http://127.0.0.1:%d/healthz" % kwok_port), CONTROLLERS_READY_S)
        api = self.api()
        api.wait(lambda: api.exists("/api/v1/namespaces/default/serviceaccounts/default"),
                 CONTROLLERS_READY_S, "the default service account (kube-controller-manager)")

    def api(self):
        p = self.pki
        return Kube(self.server, p.path("ca.crt"), p.path("admin.crt"), p.path("admin.key"))

    def create_namespace(self, name, labels=None):
        """Creates namespace `name` and waits for its default service account, which pods in
        it need before they can be created."""
        api = self.api()
        metadata = {"name": name, "labels": labels} if labels else {"name": name}
        api.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": metadata})
        api.wait(lambda: api.exists("/api/v1/namespaces/%s/serviceaccounts/default" % name),
                 CONTROLLERS_READY_S, "namespace %s's default service account" % name)

    def kubectl(self, *args, input=None, check=True, timeout=120):
        done = subprocess.run([self.tool("kubectl"), "--kubeconfig", self.kubeconfig, *args],
                              input=input, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise RuntimeError("kubectl %s: exit %d: %s" % (" ".join(args), done.returncode,
                                                            done.stderr.strip()[-1000:]))
        return done.stdout

    # --- nodes ---------------------------------------------------------------------------------

    def add_nodes(self, nodes_file):
        """Creates the nodes of a `kubectl get nodes -o json` List (JSON or YAML), managed by
        KWOK, and waits until every one is Ready."""
        with open(nodes_file) as f:
            listing = yaml.safe_load(f)
        items = listing.get("items", [listing]) if isinstance(listing, dict) else listing
        api = self.api()
        names = []
        for node in items:
            if node.get("kind", "Node") != "Node":
                continue
            api.create("/api/v1/nodes", fake_node(node))
            names.append(node["metadata"]["name"])
        api.wait(lambda: all(_node_ready(api, n) for n in names), NODES_READY_S,
                 "%d nodes Ready (KWOK)" % len(names))
        # The apiserver taints a new node not-ready; the node-lifecycle controller, which does
        # not run here (no kubelet heartbeats), would lift the taint once the node is Ready.
        for node in items:
            if node.get("kind", "Node") == "Node":
                api.merge_patch("/api/v1/nodes/" + node["metadata"]["name"],
                                {"spec": {"taints": node.get("spec", {}).get("taints")}})
        self.log("%d fake nodes Ready: %s" % (len(names), ", ".join(names[:10])))
        return names

    # --- gpuadmit ------------------------------------------------------------------------------

    def install_gpuadmit_objects(self):
        """The manifests' Namespace, ServiceAccount and RBAC, applied as a user would; returns a
        kubeconfig that authenticates as gpuadmit's service account."""
        rendered = self.kubectl("kustomize", os.path.join(self.repo, "manifests"))
        api = self.api()
        for doc in yaml.safe_load_all(rendered):
            if doc and doc["kind"] in ("Namespace", "ServiceAccount", "ClusterRole",
                                       "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap"):
                path = resource_path(doc) + "/" + doc["metadata"]["name"]
                api.apply(path, doc)
        token = api.create("/api/v1/namespaces/gpuadmit/serviceaccounts/gpuadmit/token", {
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 86400}})["status"]["token"]
        self.gpuadmit_kubeconfig = write_kubeconfig(
            os.path.join(self.workdir, "gpuadmit.kubeconfig"), self.server,
            self.pki.path("ca.crt"), token=token, namespace="gpuadmit")
        certs = os.path.join(self.workdir, "gpuadmit-certs")
        done = subprocess.run([os.path.join(self.repo, "certs/gen-certs.sh"), "--out", certs],
                              capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise StartError("certs/gen-certs.sh: exit %d: %s" % (done.returncode, done.stderr))
        self.gpuadmit_certs = certs
        return self.gpuadmit_kubeconfig

    def start_gpuadmit(self, name="gpuadmit", extra=(), policy=None, replicas=None,
                       client_auth=True):
        """`serve` as gpuadmit's service account, requiring the apiserver's client certificate
        (unless `client_auth` is False); with `replicas`, one of that many replicas electing a
        leader on the Lease gpuadmit/gpuadmit. (listen port, metrics port)."""
        if not getattr(self, "gpuadmit_kubeconfig", None):
            self.install_gpuadmit_objects()
        port, metrics = free_port(), free_port()
        certs = self.gpuadmit_certs
        argv = [self.gpuadmit_binary, "serve",
                "--policy", policy or os.path.join(self.repo, "manifests/examples/policy.yaml"),
                "--kubeconfig", self.gpuadmit_kubeconfig,
                "--tls-cert", os.path.join(certs, "tls.crt"),
                "--tls-key", os.path.join(certs, "tls.key"),
                "--listen", "127.0.0.1:%d" % port,
                "--metrics-listen", "127.0.0.1:%d" % metrics, *extra]
        if self.client_auth and client_auth:
            argv += ["--client-ca", self.pki.path("ca.crt"), "--client-name", WEBHOOK_CLIENT]
        if replicas:
            argv += ["--leader-elect", "--advertise", "127.0.0.1:%d" % port, "--id", name,
                     "--leader-election-namespace", "gpuadmit",
                     "--peer-ca", os.path.join(certs, "ca.crt"),
                     "--leader-elect-replicas", str(replicas)]
        self._run(name, argv, lambda: _http_ok("http://127.0.0.1:%d/readyz" % metrics),
                  GPUADMIT_READY_S)
        self.gpuadmit_ports[name] = (port, metrics)
        return port, metrics

    def stop_process(self, name):
        process = self.processes.pop(name)
        return process.stop()

    def webhook_configuration(self, url, match_conditions=True):
        """manifests/' MutatingWebhookConfiguration with only clientConfig changed: `url`, and
        the caBundle of the certificates gpuadmit serves; without its matchConditions when
        `match_conditions` is False (pods asking for no GPU are sent too)."""
        path = os.path.join(self.repo, "manifests/base/mutatingwebhookconfiguration.yaml")
        with open(path) as f:
            config = yaml.safe_load(f)
        with open(os.path.join(self.gpuadmit_certs, "ca.crt"), "rb") as f:
            bundle = base64.b64encode(f.read()).decode()
        for hook in config["webhooks"]:
            hook["clientConfig"] = {"url": url, "caBundle": bundle}
            if not match_conditions:
                hook.pop("matchConditions", None)
        return config

    def register_webhook(self, port=None, match_conditions=True, placed=True):
        """Registers the webhook at https://127.0.0.1:PORT/mutate (gpuadmit's by default) and
        waits until the apiserver calls it: a dry-run GPU pod comes back placed, or (`placed`
        False, for a policy that places nothing) gpuadmit's metrics count its review."""
        port = port or self.gpuadmit_ports["gpuadmit"][0]
        config = self.webhook_configuration("https://127.0.0.1:%d/mutate" % port,
                                            match_conditions)
        api = self.api()
        api.apply("/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/gpuadmit",
                  config)
        if placed:
            api.wait(lambda: _webhook_answers(api), WEBHOOK_LIVE_S,
                     "the apiserver to call gpuadmit (a dry-run GPU pod placed)")
        else:
            metrics = [m for p, m in self.gpuadmit_ports.values() if p == port][0]
            api.wait(lambda: _review_counted(api, metrics), WEBHOOK_LIVE_S,
                     "the apiserver to call gpuadmit (a dry-run GPU pod reviewed)")
        self.log("gpuadmit registered: %s" % config["webhooks"][0]["clientConfig"]["url"])

    # --- the end -------------------------------------------------------------------------------

    def state(self):
        return {"workdir": self.workdir, "server": getattr(self, "server", None),
                "kubeconfig": getattr(self, "kubeconfig", None),
                "pids": {n: p.pid for n, p in self.processes.items()},
                "gpuadmit_ports": self.gpuadmit_ports}

    def failures(self):
        """A line for each component that has exited, with its log tail."""
        return [p.failure("exited") for p in self.processes.values() if p.exit_code() is not None]

    def stop(self):
        for name in reversed(list(self.processes)):
            self.processes[name].stop()
        self.processes.clear()


def fake_node(node):
    """A recorded node made creatable: server-set fields dropped, KWOK's annotation added, the
    status (capacity, allocatable, addresses) kept, since a Node is created with its status."""
    node = json.loads(json.dumps(node))
    meta = node.setdefault("metadata", {})
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
        meta.pop(key, None)
    meta.setdefault("annotations", {})[KWOK_NODE_ANNOTATION] = "fake"
    node["apiVersion"], node["kind"] = "v1", "Node"
    status = node.get("status", {})
    node["status"] = {k: status[k] for k in ("capacity", "allocatable", "addresses", "nodeInfo")
                      if k in status}
    spec = node.get("spec", {})
    node["spec"] = {k: spec[k] for k in ("taints", "unschedulable") if k in spec}
    return node


def _node_ready(api, name):
    node = api.get("/api/v1/nodes/" + name)
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in node.get("status", {}).get("conditions", []))


PROBE_POD = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "gpuadmit-probe", "namespace": "default"},
    "spec": {"containers": [{"name": "probe", "image": "probe",
                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
}


def _review_counted(api, metrics_port):
    api.create("/api/v1/namespaces/default/pods", PROBE_POD, dry_run=True)
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=5) as r:
        text = r.read().decode()
    return any(line.startswith("gpuadmit_admission_reviews_total") and not line.endswith(" 0")
               for line in text.splitlines())


def _webhook_answers(api):
    """The probe has no affinity of its own: gpuadmit's placement adds one."""
    pod = api.create("/api/v1/namespaces/default/pods", PROBE_POD, dry_run=True)
    return "affinity" in pod["spec"]
