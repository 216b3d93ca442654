"""What the end-to-end scripts share besides their check lines: a free loopback port for a
server they start, and a bounded wait for a condition (no sleep that hopes for luck).

    port = free_port()
    ok = wait_for(lambda: server_ready(port), seconds=20)
"""

import socket
import time


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, seconds):
    """Polls `predicate` every 20 ms for at most `seconds`; its last answer."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()
