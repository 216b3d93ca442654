"""The check lines every end-to-end script prints.

`check(name, ok, reason)` prints `ok - NAME` or `not ok - NAME: REASON` at once; `summary()`
prints the failures again, last, so a log cut in the middle still shows them, then
`N passed, M failed`, and returns the exit status: 1 when anything failed.
"""

import sys

RESULTS = {"passed": 0, "failed": 0}
FAILURES = []


def check(name, ok, reason=""):
    if ok:
        RESULTS["passed"] += 1
        print("ok - %s" % name)
    else:
        RESULTS["failed"] += 1
        FAILURES.append("not ok - %s: %s" % (name, reason))
        print(FAILURES[-1])
    sys.stdout.flush()
    return ok


def summary():
    if FAILURES:
        print("# the failures again:")
        for line in FAILURES:
            print(line)
    print("%d passed, %d failed" % (RESULTS["passed"], RESULTS["failed"]))
    sys.stdout.flush()
    return 1 if RESULTS["failed"] else 0
