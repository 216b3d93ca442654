"""What every cluster scenario shares: its command line, a control plane of its own in a
temporary directory, the check lines, and the logs kept when something failed.

    def scenario(plane, args):
        check("...", ok, reason)
    sys.exit(run(scenario, "seed_burst", nodes=True, gpuadmit=True))

A component that fails to start, or a wait that runs out, fails the scenario with the
component's exit code and log tail; the logs are copied to build/cluster/test-logs/NAME/.
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../e2e"))

from checks import check, summary  # noqa: E402,F401
from control_plane import ControlPlane  # noqa: E402


MIG2 = "nvidia.com/mig-2g.20gb"
MIG1 = "nvidia.com/mig-1g.10gb"
PODS = "/api/v1/namespaces/default/pods"


def asks(pod):
    """The nvidia.com/ resources the pod's first container limits, sorted."""
    limits = pod["spec"]["containers"][0].get("resources", {}).get("limits", {})
    return sorted(k for k in limits if k.startswith("nvidia.com/"))


def parse_args(extra=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--gpuadmit", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--bin", help="the components (default: SOURCE/build/cluster/bin)")
    parser.add_argument("--logs", help="where a failed run's logs go")
    if extra:
        extra(parser)
    return parser.parse_args()


def log(message):
    print("# %s %s" % (time.strftime("%H:%M:%S"), message))
    sys.stdout.flush()


def run(scenario, name, nodes=True, gpuadmit=True, register=True, extra_args=None):
    args = parse_args(extra_args)
    repo = os.path.abspath(args.source_dir)
    workdir = tempfile.mkdtemp(prefix="gpuadmit-cluster-%s-" % name)
    plane = ControlPlane(workdir, repo, gpuadmit=os.path.abspath(args.gpuadmit),
                         bin_dir=args.bin, log=log)
    failed = False
    try:
        plane.start()
        if nodes:
            plane.add_nodes(os.path.join(repo, "tests/cluster/nodes.json"))
        if gpuadmit:
            plane.start_gpuadmit()
            if register:
                plane.register_webhook()
        scenario(plane, args)
    except Exception as e:  # a failed step fails the scenario, with what is known
        traceback.print_exc()
        check("scenario %s ran to its end" % name, False, str(e).splitlines()[0][:300])
        for line in plane.failures():
            print(line)
    status = summary()
    failed = status != 0
    if failed:
        logs = args.logs or os.path.join(repo, "build/cluster/test-logs", name)
        shutil.rmtree(logs, ignore_errors=True)
        shutil.copytree(plane.logs, logs)
        print("# logs kept in %s" % logs)
    plane.stop()
    shutil.rmtree(workdir, ignore_errors=True)
    return status
