"""Whether the gateway can listen where its settings say, asked before anything starts."""

import socket


def listen_refusal(host: str, port: int) -> str | None:
    """Why the server could not listen there (an unknown host name, an address not of this machine, a port in
    use), found by binding as uvicorn will: a setting to fix, where uvicorn's own failure would be restarted.
    `cortex run` asks the same before it starts anything."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as trial:
        trial.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            trial.bind((host, port))
        except OSError as exc:  # socket.gaierror included: a name that does not resolve
            return f"cannot listen on {host}:{port} (CORTEX_GATEWAY_HOST, CORTEX_GATEWAY_PORT): {exc.strerror or exc}"
    return None
