"""uvicorn's HTTP/1.1 protocol (httptools), answering a request it will not take with a problem document.

Such a request never reaches the app:
- one it cannot parse: a request line past llhttp's 64 KiB (a URL with thousands of parameters), or bytes
  that are not HTTP (400);
- one whose head (request line and headers) runs past 128 KiB, or that has more than 100 headers (431).
  Before (QA 30), a 64 MiB header was read, parsed and handed to the app, and every other request on
  the gateway waited behind it.
uvicorn answers the first in plain text and has no bound for the second; every other error of the API is
`application/problem+json` (RFC 9457), and a client should not need a second error parser.
"""

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cortex_gateway.problems import PROBLEM_JSON, problem_bytes

UNPARSABLE = "The request cannot be parsed as HTTP, or its request line (the URL) is longer than 64 KiB."
MAX_HEAD_BYTES = 128 * 1024
MAX_HEADERS = 100
HEAD_TOO_LARGE = f"The request's head is over {MAX_HEAD_BYTES // 1024} KiB or has over {MAX_HEADERS} headers."
REASONS = {400: b"Bad Request", 431: b"Request Header Fields Too Large"}
# After a 431 the rest of what the client sends is read and dropped for this long before the connection
# closes: closed with unread bytes, the socket resets, and the client may lose the answer.
LINGER_SECONDS = 2.0


class TooManyHeaders(Exception):
    """Raised in the parser's callback: httptools stops parsing and the protocol answers 431."""


class ProblemHttpProtocol(HttpToolsProtocol):
    _head_bytes = 0  # received since the current request's head began
    _head_done = False
    _too_many_headers = False
    _refused = False  # answered 431: what still comes is dropped unread

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        super().data_received(data)
        if self._head_done or self.transport.is_closing():
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse_head()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_done = False

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self.headers) >= MAX_HEADERS:
            self._too_many_headers = True
            raise TooManyHeaders
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._head_done, self._head_bytes = True, 0
        super().on_headers_complete()

    def send_400_response(self, msg: str) -> None:
        if self._too_many_headers:
            self._refuse_head()
        else:
            self._send_problem(400, UNPARSABLE)
            self.transport.close()

    def _refuse_head(self) -> None:
        self._refused = True
        self._send_problem(431, HEAD_TOO_LARGE)
        self.transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_SECONDS, self.transport.close)

    def _send_problem(self, status: int, detail: str) -> None:
        body = problem_bytes(status, detail)  # no `instance`: the request's path is not known
        head = [b"HTTP/1.1 " + str(status).encode() + b" " + REASONS[status]]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [
            b"content-type: " + PROBLEM_JSON.encode(),
            b"content-length: " + str(len(body)).encode(),
            b"connection: close",
        ]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
