"""Reading an endpoint's answer without trusting its size.

An embeddings answer is refused once it runs past what its vectors could need (QA 34: a 300 MB answer
was read and parsed whole, and the indexer grew to 1.6 GB). The limit follows the request rather than a
setting: inputs × dimension × `BYTES_PER_FLOAT`, plus room for each item's keys, and never less than
`MIN_ANSWER_BYTES`. Bytes are counted decoded, so a compressed answer is measured by what it takes in
memory. Of an error answer only the start is read: it is only shown, cut short, in a message.
"""

import httpx

from cortex_embedding.errors import InvalidEmbeddingResponse

# A float as JSON prints it is at most ~25 bytes ("-1.2345678901234567e-05, "); pretty-printed JSON puts
# each on a line of its own, indented: 48 leaves room for that, and still refuses a runaway answer.
BYTES_PER_FLOAT = 48
BYTES_PER_ITEM = 256  # {"object": "embedding", "index": 63, "embedding": […]}
UNKNOWN_DIMENSION = 4096  # before the dimension is known: as large as common embedding models go
MIN_ANSWER_BYTES = 1024 * 1024
ERROR_DETAIL_BYTES = 4096


def answer_limit(inputs: int, dimension: int | None) -> int:
    """The most bytes an answer with `inputs` vectors of `dimension` may take."""
    per_input = (dimension or UNKNOWN_DIMENSION) * BYTES_PER_FLOAT + BYTES_PER_ITEM
    return max(MIN_ANSWER_BYTES, inputs * per_input)


async def read_within(response: httpx.Response, limit: int) -> bytes:
    """The body, refused once it runs past `limit` bytes (or says it will), the rest left unread."""
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise InvalidEmbeddingResponse(f"an answer of {declared} bytes: more than its vectors need ({limit} bytes)")
    content = bytearray()
    async for chunk in response.aiter_bytes():
        content += chunk
        if len(content) > limit:
            raise InvalidEmbeddingResponse(f"an answer running past {limit} bytes: more than its vectors need")
    return bytes(content)


async def read_start(response: httpx.Response, limit: int = ERROR_DETAIL_BYTES) -> bytes:
    """The body's first `limit` bytes, the rest left unread."""
    content = bytearray()
    async for chunk in response.aiter_bytes():
        content += chunk
        if len(content) >= limit:
            break
    return bytes(content[:limit])
