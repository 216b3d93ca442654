#!/usr/bin/python3
"""The cluster harness's own promises, without the Kubernetes components (part of `make test`):

  - a component that exits before it is ready is reported with its exit code and log tail, and
    one that never becomes ready is reported within its deadline, not waited on forever;
  - stop() ends a component's whole process session;
  - the Kubernetes release is pinned in one place: build-tools.sh's KUBE_VERSION is the
    k8s.io/kubernetes version of tests/cluster/k8s/go.mod, and every staging module is pinned to
    the matching v0.X.Y.
"""

import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "../e2e"))

from checks import check, summary  # noqa: E402
from processes import Process, StartError, pid_alive  # noqa: E402


def start_error(process, ready, seconds):
    try:
        process.start().wait_ready(ready, seconds)
    except StartError as e:
        return str(e)
    return ""


def main():
    logs = tempfile.mkdtemp(prefix="gpuadmit-harness-")
    crash = Process("crasher", ["sh", "-c", "echo listening failed: port in use; exit 3"], logs)
    message = start_error(crash, lambda: False, 10)
    check("a component that exits is reported with its exit code",
          "exited with code 3" in message, message)
    check("... and its log tail", "listening failed: port in use" in message, message)

    started = time.monotonic()
    hang = Process("hanger", ["sleep", "60"], logs)
    message = start_error(hang, lambda: False, 0.5)
    took = time.monotonic() - started
    check("a component never ready is reported at its deadline (%.1f s)" % took,
          "did not become ready within 0.5s" in message and took < 5, message)
    hang.stop(grace=2)
    check("stop() ends it", not pid_alive(hang.pid))

    missing = Process("missing", ["/nonexistent/kube-apiserver"], logs)
    message = start_error(missing, lambda: True, 1)
    check("a missing binary is reported by name", "/nonexistent/kube-apiserver" in message,
          message)

    with open(os.path.join(HERE, "build-tools.sh")) as f:
        pinned = re.search(r"KUBE_VERSION=(v[0-9.]+)", f.read()).group(1)
    with open(os.path.join(HERE, "k8s/go.mod")) as f:
        gomod = f.read()
    required = re.search(r"^\s*(?:require )?k8s.io/kubernetes (v[0-9.]+)", gomod, re.M).group(1)
    staging = re.findall(r"(k8s.io/\S+) => k8s.io/\S+ (v\S+)", gomod)
    minor = "v0." + pinned[len("v1."):]
    check("KUBE_VERSION %s is go.mod's k8s.io/kubernetes %s" % (pinned, required),
          pinned == required)
    check("all %d staging modules pinned to %s" % (len(staging), minor),
          len(staging) > 20 and all(v == minor for _, v in staging),
          str([s for s in staging if s[1] != minor]))
    return summary()


if __name__ == "__main__":
    sys.exit(main())
