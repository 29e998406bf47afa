"""What the tests' stand-in HTTP servers share: a JSON request handler, and serving one in a thread on a
free loopback port."""

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    def read_json(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")

    def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        # A client that gave up waiting (as it should, when a test makes the server slow) has closed the connection.
        with suppress(BrokenPipeError, ConnectionResetError):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 — the base class's name
        pass


@contextmanager
def serving(handler: type[BaseHTTPRequestHandler], name: str) -> Iterator[str]:
    """`handler` served in a thread until the block ends; yields the root URL, `http://127.0.0.1:PORT`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name=name, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
