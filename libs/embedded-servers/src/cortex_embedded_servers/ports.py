"""TCP port checks for servers that listen on loopback."""

import socket


def _bind(host: str, port: int) -> int:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        # Same option the servers set, so a port left in TIME_WAIT counts as free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        bound: int = sock.getsockname()[1]
        return bound


def port_is_free(host: str, port: int) -> bool:
    """Whether a server could listen on ``host:port`` right now."""
    try:
        _bind(host, port)
    except OSError:
        return False
    return True


def free_port(host: str) -> int:
    """A port on ``host`` that nothing listens on (the OS picks it)."""
    return _bind(host, 0)
