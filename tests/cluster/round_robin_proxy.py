"""A TCP load balancer on loopback in front of several gpuadmit replicas, as a Service's virtual
IP is in a cluster: each new connection goes to the next replica in turn, and a replica that
refuses the connection (stopped) is skipped, as its endpoint would leave the Service.

    proxy = RoundRobinProxy([port1, port2, port3]).start()
    proxy.port            # point the webhook's clientConfig.url here
    proxy.set_backends([...]); proxy.stop()

TLS passes through untouched: the apiserver verifies gpuadmit's own certificate.
"""

import itertools
import socket
import struct
import threading


class RoundRobinProxy:
    def __init__(self, backends):
        self.backends = list(backends)
        self.lock = threading.Lock()
        self.turn = itertools.count()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.port = self.listener.getsockname()[1]
        self.stopped = False
        self.connections = {}  # backend port -> connections sent there

    def set_backends(self, backends):
        with self.lock:
            self.backends = list(backends)

    def start(self):
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def stop(self):
        self.stopped = True
        self.listener.close()

    def _connect(self):
        with self.lock:
            backends = list(self.backends)
        start = next(self.turn)
        for i in range(len(backends)):
            port = backends[(start + i) % len(backends)]
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=2)
                upstream.settimeout(None)
                with self.lock:
                    self.connections[port] = self.connections.get(port, 0) + 1
                return upstream
            except OSError:
                continue
        return None

    def _accept(self):
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = self._connect()
            if upstream is None:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def _pipe(source, sink):
    """Copies source to sink as the kernel forwards a connection: an orderly close (FIN) is
    passed on as one, and a reset as a reset, so the apiserver sees a killed replica's
    connections reset, as it would through a Service, and retries the call."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            sink.sendall(data)
    except OSError:
        _reset(sink)
        _reset(source)


def _reset(s):
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    s.close()
