"""A TCP proxy on loopback that can stop answering: a network partition or a hung server, as a
client sees it (connections accepted, nothing ever answered), which a stopped server (connection
refused at once) does not show."""

from __future__ import annotations

import socket
import threading


class StallingProxy:
    """Forwards ``127.0.0.1:<port>`` to ``127.0.0.1:<target_port>``. :meth:`stall`: nothing is
    relayed and new connections are held unanswered; :meth:`heal`: every connection is closed (the
    partition ends), new ones are forwarded again."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._server.getsockname()[1]
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, name="stalling-proxy", daemon=True).start()

    def stall(self) -> None:
        self._flowing.clear()

    def heal(self) -> None:
        self._drop_all()
        self._flowing.set()

    def close(self) -> None:
        self._closed.set()
        self._server.close()
        self._drop_all()
        self._flowing.set()

    def _drop_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def _keep(self, *sockets: socket.socket) -> None:
        with self._lock:
            self._sockets.extend(sockets)

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            self._keep(client)
            if not self._flowing.is_set():
                continue  # held: accepted, never answered
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
            except OSError:
                client.close()  # the server is stopped: the client sees the connection end
                continue
            self._keep(upstream)
            for source, target in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                self._flowing.wait()  # stalled: what was read is never passed on
                if self._closed.is_set():
                    break
                target.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, target):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
