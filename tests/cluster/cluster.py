#!/usr/bin/python3
"""`make cluster` and `make cluster-down`: a local Kubernetes control plane with fake GPU nodes and
gpuadmit registered, left running in the background.

    cluster.py up   --dir build/cluster --gpuadmit build/gpuadmit [--nodes FILE]
    cluster.py down --dir build/cluster
    cluster.py status --dir build/cluster

`up` returns once every component is ready, writes DIR/kubeconfig (the cluster admin) and prints
the kubectl commands to try. Logs are in DIR/run/logs/. `down` stops every process `up` started.
"""

import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from control_plane import ControlPlane  # noqa: E402
from processes import StartError, pid_alive, stop_pid  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))

TRY = """
The cluster is up. Try:

  export KUBECONFIG={kubeconfig} PATH={bin}:$PATH
  kubectl get nodes -L nvidia.com/gpu.product
  kubectl apply -f tests/cluster/examples/mig-pod.yaml
  kubectl get pod mig-test -o jsonpath='{{.metadata.annotations}}{{"\\n"}}{{.spec.containers[0].resources}}{{"\\n"}}'
  kubectl apply -f tests/cluster/examples/deployment-20.yaml
  kubectl get pods -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName,GPU:.spec.containers[0].resources.limits,FALLBACK:.metadata.annotations.gpuadmit\\.io/fallback

gpuadmit's log: {log}
Stop everything with: make cluster-down
"""


def state_path(directory):
    return os.path.join(directory, "run", "state.json")


def running(directory):
    try:
        with open(state_path(directory)) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return None
    return state if any(pid_alive(p) for p in state["pids"].values()) else None


def up(args):
    if running(args.dir):
        print("cluster.py: a cluster is already running from %s; `make cluster-down` first"
              % args.dir, file=sys.stderr)
        return 1
    workdir = os.path.join(args.dir, "run")
    shutil.rmtree(workdir, ignore_errors=True)
    plane = ControlPlane(workdir, REPO, gpuadmit=os.path.abspath(args.gpuadmit),
                         bin_dir=args.bin)
    try:
        plane.start()
        plane.add_nodes(args.nodes)
        plane.start_gpuadmit()
        plane.register_webhook()
    except (StartError, TimeoutError, RuntimeError) as e:
        print("cluster.py: %s" % e, file=sys.stderr)
        print("cluster.py: logs kept in %s" % plane.logs, file=sys.stderr)
        plane.stop()
        return 1
    kubeconfig = os.path.join(args.dir, "kubeconfig")
    shutil.copy(plane.kubeconfig, kubeconfig)
    with open(state_path(args.dir), "w") as f:
        json.dump(plane.state(), f, indent=2)
    print(TRY.format(kubeconfig=os.path.relpath(kubeconfig, os.getcwd()), bin=plane.bin,
                     log=os.path.relpath(plane.processes["gpuadmit"].log, os.getcwd())))
    return 0


def down(args):
    try:
        with open(state_path(args.dir)) as f:
            state = json.load(f)
    except (OSError, ValueError):
        print("cluster.py: no cluster state in %s: nothing to stop" % args.dir)
        return 0
    for name, pid in reversed(list(state["pids"].items())):
        if pid_alive(pid):
            print("stopping %s (pid %d)" % (name, pid))
            stop_pid(pid)
    os.remove(state_path(args.dir))
    return 0


def status(args):
    state = running(args.dir)
    if not state:
        print("no cluster running from %s" % args.dir)
        return 1
    for name, pid in state["pids"].items():
        print("%-24s pid %-8d %s" % (name, pid, "running" if pid_alive(pid) else "exited"))
    print("server %s, kubeconfig %s" % (state["server"], os.path.join(args.dir, "kubeconfig")))
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", choices=["up", "down", "status"])
    parser.add_argument("--dir", default=os.path.join(REPO, "build/cluster"))
    parser.add_argument("--bin", help="the components' binaries (default: DIR/bin)")
    parser.add_argument("--gpuadmit", default=os.path.join(REPO, "build/gpuadmit"))
    parser.add_argument("--nodes", default=os.path.join(REPO, "tests/cluster/nodes.json"),
                        help="the fake nodes: what `kubectl get nodes -o json` prints")
    args = parser.parse_args()
    args.dir = os.path.abspath(args.dir)
    args.bin = args.bin or os.path.join(args.dir, "bin")
    return {"up": up, "down": down, "status": status}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
