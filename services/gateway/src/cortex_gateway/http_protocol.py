"""uvicorn's HTTP/1.1 protocol (httptools), answering a request it will not take with a problem document.

Such a request never reaches the app:
- one it cannot parse: a request line past llhttp's 64 KiB (a URL with thousands of parameters), a URL
  with a raw space or non-ASCII byte (QA 47: `?q=café` sent unencoded), or bytes that are not HTTP (400);
- one whose head (request line and headers) runs past 128 KiB, or that has more than 100 headers (431).
  Before (QA 30), a 64 MiB header was read, parsed and handed to the app, and every other request on
  the gateway waited behind it. The parser is given no more than the limit still allows, so a head of
  128 KiB is served and one byte more is not (before, QA 42: what arrived was parsed first and counted
  after, and a head that ended in the read that crossed the limit, up to ~192 KiB, was served).
uvicorn answers the first in plain text and has no bound for the second; every other error of the API is
`application/problem+json` (RFC 9457), and a client should not need a second error parser.
"""

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cortex_gateway.problems import PROBLEM_JSON, problem_bytes

UNPARSABLE = (
    "The request cannot be parsed as HTTP: its request line (the URL) may be longer than 64 KiB, or hold a "
    "character that must be percent-encoded, such as a space or any non-ASCII one (é is %C3%A9)."
)
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
    _head_bytes = 0  # received of the current request's head: since the request before it ended
    _in_head = True  # between requests or in a head (what arrives is counted), not in a body
    _heads_begun = 0
    _heads_ended = 0
    _body_bytes = 0  # of the part being parsed: never the next head's
    _too_many_headers = False
    _refused = False  # answered 431: what still comes is dropped unread

    def data_received(self, data: bytes) -> None:
        start = 0
        while start < len(data) and not (self._refused or self.transport.is_closing()):
            # A body is parsed in parts of the limit's size too, so that a head pipelined behind it and ended
            # within one part is within the limit.
            room = MAX_HEAD_BYTES - self._head_bytes if self._in_head else MAX_HEAD_BYTES
            if room <= 0:  # the head goes on past the limit
                self._refuse_head()
                return
            end = min(start + room, len(data))
            if not self._parse(data, start, end):
                return
            start = end

    def _parse(self, data: bytes, start: int, end: int) -> bool:
        """Parse `data[start:end]` and count what of it is a head not yet ended. False: drop the rest (the
        parser stopped at an upgrade, as uvicorn drops what follows one in a read)."""
        went_on, heads_ended = self._in_head, self._heads_ended
        self._body_bytes = 0
        super().data_received(data if start == 0 and end == len(data) else data[start:end])
        if not self._in_head:
            return True
        if self._heads_begun == self._heads_ended:  # between requests: the last ended with the part
            self._head_bytes = 0
        elif went_on and self._heads_ended == heads_ended:  # all of it is the head's (or blank lines before it)
            self._head_bytes += end - start
        else:
            # A request began after another one's end within this part (pipelined). It is at most what
            # follows the part's last blank line (exact behind a request without a body or with a chunked
            # one, which ends in a blank line), and at most what the body left of the part (exact when the
            # head before ended in an earlier part). Before (QA 44), the next request on a keep-alive
            # connection after a large POST was counted with that POST's body, and refused.
            blank_line = data.rfind(b"\r\n\r\n", start, end)
            after_blank_line = end - (blank_line + 4 if blank_line >= 0 else start)
            self._head_bytes = min(after_blank_line, end - start - self._body_bytes)
        return not self.parser.should_upgrade()

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        super().on_body(body)

    def on_message_begin(self) -> None:
        self._in_head, self._heads_begun = True, self._heads_begun + 1
        super().on_message_begin()

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(self.headers) >= MAX_HEADERS:
            self._too_many_headers = True
            raise TooManyHeaders
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._in_head, self._head_bytes, self._heads_ended = False, 0, self._heads_ended + 1
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_head = True  # what comes next begins the next request's head
        super().on_message_complete()

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
