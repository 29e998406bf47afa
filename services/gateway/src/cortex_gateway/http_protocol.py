"""uvicorn's HTTP/1.1 protocol (httptools), answering a request it cannot parse with a problem document.

Such a request never reaches the app: a request line past llhttp's 64 KiB (a URL with thousands of
parameters), or bytes that are not HTTP. uvicorn answers those in plain text; every other error of the
API is `application/problem+json` (RFC 9457), and a client should not need a second error parser.
"""

import json

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from cortex_gateway.problems import PROBLEM_JSON, problem_document

DETAIL = "The request cannot be parsed as HTTP, or its request line (the URL) is longer than 64 KiB."


class ProblemHttpProtocol(HttpToolsProtocol):
    def send_400_response(self, msg: str) -> None:
        body = json.dumps(problem_document(400, DETAIL)).encode()
        head = [b"HTTP/1.1 400 Bad Request"]
        head += [name + b": " + value for name, value in self.server_state.default_headers]
        head += [
            b"content-type: " + PROBLEM_JSON.encode(),
            b"content-length: " + str(len(body)).encode(),
            b"connection: close",
        ]
        self.transport.write(b"\r\n".join(head) + b"\r\n\r\n" + body)
        self.transport.close()
