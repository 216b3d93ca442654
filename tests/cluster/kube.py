"""A small client of the real kube-apiserver for the cluster tests: JSON over one kept-alive TLS
connection, authenticated by a client certificate (the admin's, usually).

    api = Kube("https://127.0.0.1:6443", ca="ca.crt", cert="admin.crt", key="admin.key")
    pod = api.create("/api/v1/namespaces/default/pods", manifest)      # the admitted object
    api.create(path, manifest, dry_run=True)                            # server-side dry run
    pods = api.get("/api/v1/namespaces/default/pods")["items"]
    api.wait(lambda: len(api.get(path)["items"]) == 20, seconds=60, what="20 pods")

A status of 400 and above raises ApiError with the apiserver's own message. Not thread safe: one
Kube per thread (`clone()`).
"""

import http.client
import json
import ssl
import threading
import time
import urllib.parse


class ApiError(Exception):
    def __init__(self, status, method, path, body):
        self.status = status
        self.body = body
        try:
            message = json.loads(body).get("message", body)
        except ValueError:
            message = body
        super().__init__("%s %s: HTTP %d: %s" % (method, path, status, str(message)[:600]))


class Kube:
    def __init__(self, server, ca, cert=None, key=None, token=None, timeout=30):
        self.server, self.ca, self.cert, self.key, self.token = server, ca, cert, key, token
        self.timeout = timeout
        url = urllib.parse.urlsplit(server)
        self.host, self.port = url.hostname, url.port or 443
        self.context = ssl.create_default_context(cafile=ca)
        if cert:
            self.context.load_cert_chain(cert, key)
        self.conn = None

    def clone(self):
        return Kube(self.server, self.ca, self.cert, self.key, self.token, self.timeout)

    def _connection(self):
        if self.conn is None:
            self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.context,
                                                    timeout=self.timeout)
        return self.conn

    def request(self, method, path, body=None, content_type="application/json", query=None):
        """(status, body text); reconnects once when a kept-alive connection was closed."""
        if query:
            path += ("&" if "?" in path else "?") + urllib.parse.urlencode(query)
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
            if not isinstance(body, (bytes, str)):
                body = json.dumps(body)
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (0, 1):
            try:
                conn = self._connection()
                conn.request(method, path, body=body, headers=headers)
                response = conn.getresponse()
                return response.status, response.read().decode()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, http.client.BadStatusLine):
                self.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def _json(self, method, path, body=None, content_type="application/json", query=None):
        status, text = self.request(method, path, body, content_type, query)
        if status >= 400:
            raise ApiError(status, method, path, text)
        return json.loads(text) if text else {}

    def get(self, path, **query):
        return self._json("GET", path, query=query or None)

    def create(self, path, manifest, dry_run=False):
        return self._json("POST", path, manifest, query={"dryRun": "All"} if dry_run else None)

    def merge_patch(self, path, patch):
        return self._json("PATCH", path, patch, "application/merge-patch+json")

    def json_patch(self, path, ops):
        return self._json("PATCH", path, ops, "application/json-patch+json")

    def apply(self, path, manifest, manager="gpuadmit-cluster-test"):
        """Server-side apply (PATCH application/apply-patch+yaml, force)."""
        return self._json("PATCH", path, manifest, "application/apply-patch+yaml",
                          query={"fieldManager": manager, "force": "true"})

    def exists(self, path):
        return self.request("GET", path)[0] == 200

    def delete(self, path, missing_ok=True):
        status, text = self.request("DELETE", path)
        if status >= 400 and not (missing_ok and status == 404):
            raise ApiError(status, "DELETE", path, text)

    def wait(self, predicate, seconds, what):
        """Polls `predicate` every 100 ms for at most `seconds`; raises TimeoutError naming
        `what` when it never held."""
        deadline = time.monotonic() + seconds
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError("waited %ss for %s" % (seconds, what))
            time.sleep(0.1)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def create_in_parallel(api, items, make, clients=16):
    """POSTs make(item) -> (path, body) for every item over `clients` connections of their own;
    (seconds taken, the error texts of refused creates)."""
    todo = list(items)
    lock = threading.Lock()
    errors = []

    def worker():
        client = api.clone()
        while True:
            with lock:
                if not todo:
                    return
                item = todo.pop()
            path, body = make(item)
            status, text = client.request("POST", path, body)
            if status >= 300:
                with lock:
                    errors.append(text[:200])

    started = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.monotonic() - started, errors


def resource_path(manifest):
    """The collection path a manifest is created in: /api/v1/namespaces/NS/pods and so on."""
    api_version = manifest["apiVersion"]
    kind = manifest["kind"]
    plural = PLURALS.get(kind) or kind.lower() + "s"
    prefix = "/api/v1" if api_version == "v1" else "/apis/" + api_version
    namespace = manifest.get("metadata", {}).get("namespace")
    if kind in CLUSTER_SCOPED:
        return "%s/%s" % (prefix, plural)
    return "%s/namespaces/%s/%s" % (prefix, namespace or "default", plural)


PLURALS = {"CronJob": "cronjobs", "DaemonSet": "daemonsets", "Deployment": "deployments",
           "ReplicaSet": "replicasets", "StatefulSet": "statefulsets", "Job": "jobs",
           "Pod": "pods", "Node": "nodes", "Namespace": "namespaces",
           "ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles",
           "ClusterRoleBinding": "clusterrolebindings", "Role": "roles",
           "RoleBinding": "rolebindings", "ConfigMap": "configmaps", "Lease": "leases",
           "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
           "InferenceService": "inferenceservices", "PriorityClass": "priorityclasses"}
CLUSTER_SCOPED = {"Node", "Namespace", "ClusterRole", "ClusterRoleBinding",
                  "MutatingWebhookConfiguration", "PriorityClass"}
