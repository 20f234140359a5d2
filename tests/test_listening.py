"""Who listens on a TCP port, from the kernel's socket tables (what a controller start polls for)."""

from __future__ import annotations

import os
import socket

from netsleuth.controllers.listening import listeners, port_listening


def _bound(family: int, host: str, listen: bool) -> socket.socket:
    s = socket.socket(family, socket.SOCK_STREAM)
    s.bind((host, 0))
    if listen:
        s.listen()
    return s


def test_a_listening_socket_is_found_with_its_process_and_a_closed_one_is_gone() -> None:
    for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        s = _bound(family, host, listen=True)
        port = s.getsockname()[1]
        assert port_listening(port) and listeners(port) == [os.getpid()]
        s.close()
        assert not port_listening(port) and listeners(port) == []


def test_a_bound_socket_that_does_not_listen_and_a_connection_do_not_count() -> None:
    bound = _bound(socket.AF_INET, "127.0.0.1", listen=False)
    server = _bound(socket.AF_INET, "127.0.0.1", listen=True)
    client = socket.create_connection(server.getsockname())
    conn, _ = server.accept()
    try:
        assert not port_listening(bound.getsockname()[1])
        assert not port_listening(client.getsockname()[1])   # an established connection's own port
        server.close()
        assert not port_listening(conn.getsockname()[1])       # the accepted connection keeps the port
    finally:
        for s in (bound, client, conn):
            s.close()
