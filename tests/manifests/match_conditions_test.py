#!/usr/bin/python3
"""The webhook's matchConditions are kept in step with what the shipped policy can change:

  - the policy's annotationPrefix and the gpu-autoscaler.io alias are the key prefixes that send
    a GPU-less object (the condition names both);
  - every custom workload the policy declares is sent whatever it holds (its kind is outside the
    condition's list of core kinds) and has a rule;
  - the policy does not fill GPU counts into pods that ask none (requirements.gpuCount off or
    warn), which the condition could not see, nor place them (placement.podsWithoutGpus), which
    the condition would keep from it;
  - every resource the catalog names starts with nvidia.com/, the prefix the condition reads.

    match_conditions_test.py --source-dir DIR
"""

import argparse
import os
import sys

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../e2e"))
from checks import check, summary  # noqa: E402

CORE_KINDS = ["Pod", "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.source_dir, "manifests/base/mutatingwebhookconfiguration.yaml")) as f:
        hook = yaml.safe_load(f)["webhooks"][0]
    with open(os.path.join(args.source_dir, "manifests/examples/policy.yaml")) as f:
        policy = yaml.safe_load(f)
    conditions = hook.get("matchConditions", [])
    check("the webhook has one match condition", len(conditions) == 1, str(conditions))
    expression = conditions[0]["expression"] if conditions else ""
    prefix = policy.get("annotationPrefix", "gpuadmit.io")
    for key in (prefix, "gpu-autoscaler.io"):
        check("objects carrying a %s/ annotation or label are sent" % key,
              expression.count("k.startsWith('%s/')" % key) == 2)
    kinds = "[%s]" % ", ".join("'%s'" % k for k in CORE_KINDS)
    check("the condition lists exactly the core kinds it reads", kinds in " ".join(
        expression.split()), kinds)
    rules = {(r["apiGroups"][0], res) for r in hook["rules"] for res in r["resources"]}
    for workload in policy.get("workloads", []):
        plural = workload["kind"].lower() + "s"
        check("custom workload %s: outside the core kinds, so always sent" % workload["kind"],
              workload["kind"] not in CORE_KINDS)
        check("custom workload %s: has a rule" % workload["kind"],
              (workload["group"], plural) in rules, str(sorted(rules)))
    count = policy.get("requirements", {}).get("gpuCount", "warn")
    check("requirements.gpuCount %s fills no GPU count into a pod that asks none" % count,
          count in ("off", "warn"))
    check("placement.podsWithoutGpus is off: the condition sends no pod without GPUs",
          not policy.get("placement", {}).get("podsWithoutGpus", False))
    check("pod specs are read for nvidia.com/ resources in limits and requests, and claims",
          expression.count("startsWith('nvidia.com/')") == 4 and "resourceClaims" in expression)
    return summary()


if __name__ == "__main__":
    sys.exit(main())
