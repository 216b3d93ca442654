"""Processes the local control plane runs: each one logged to its own file, in its own process
session (so `make cluster` can leave them running and `make cluster-down` can end them), and
reported with its exit code and log tail when it dies or never becomes ready.

    etcd = Process("etcd", [bin, "--data-dir", d], logs)
    etcd.start()
    etcd.wait_ready(lambda: http_ok(url), seconds=30)   # StartError if it exits or times out
    etcd.stop()
"""

import os
import signal
import subprocess
import time


class StartError(RuntimeError):
    pass


def log_tail(path, lines=25):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return "(no log: %s)" % e


class Process:
    def __init__(self, name, argv, log_dir, env=None):
        self.name, self.argv = name, argv
        self.log = os.path.join(log_dir, name + ".log")
        self.env = env
        self.popen = None
        self.pid = None

    def start(self):
        out = open(self.log, "ab")
        try:
            self.popen = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT,
                                          stdin=subprocess.DEVNULL, start_new_session=True,
                                          env=self.env)
        except OSError as e:
            raise StartError("%s: cannot start %s: %s" % (self.name, self.argv[0], e))
        finally:
            out.close()
        self.pid = self.popen.pid
        return self

    def exit_code(self):
        """None while running (or not ours to wait for), else the exit status."""
        return self.popen.poll() if self.popen else None

    def failure(self, what):
        code = self.exit_code()
        state = "exited with code %s" % code if code is not None else "still running"
        return "%s %s (%s); last lines of %s:\n%s" % (self.name, what, state, self.log,
                                                     log_tail(self.log))

    def wait_ready(self, ready, seconds, what="to become ready"):
        deadline = time.monotonic() + seconds
        while True:
            if self.exit_code() is not None:
                raise StartError(self.failure("stopped before it was ready"))
            try:
                if ready():
                    return
            except Exception:  # not answering yet: connection refused, TLS not up, 503
                pass
            if time.monotonic() > deadline:
                raise StartError(self.failure("did not become ready within %ss" % seconds))
            time.sleep(0.1)

    def stop(self, grace=10):
        """SIGTERM to the process's session, SIGKILL after `grace` seconds. Its exit code."""
        stop_pid(self.pid, grace)
        return self.popen.wait(timeout=5) if self.popen else None


def pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie of ours has exited
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def stop_pid(pid, grace=10):
    """Ends the process session led by `pid` (started with start_new_session)."""
    if not pid or not pid_alive(pid):
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not pid_alive(pid):
                return
            time.sleep(0.05)
