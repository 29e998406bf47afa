"""Dead letters: what can never be handled goes to the DLQ stream with the reason and the original."""

import base64
import json
from dataclasses import dataclass

from nats.js import JetStreamContext

from cortex_contracts.subjects import dead_letter


@dataclass(frozen=True)
class DeadLetter:
    subject: str
    consumer: str
    reason: str
    error: str
    deliveries: int
    headers: dict[str, str]
    payload: bytes

    def record(self) -> bytes:
        try:
            payload: str = self.payload.decode()
            encoding = "utf-8"
        except UnicodeDecodeError:
            payload, encoding = base64.b64encode(self.payload).decode(), "base64"
        return json.dumps(
            {
                "subject": self.subject,
                "consumer": self.consumer,
                "reason": self.reason,
                "error": self.error[:4000],
                "deliveries": self.deliveries,
                "headers": self.headers,
                "payload": payload,
                "payloadEncoding": encoding,
            }
        ).encode()


def _header_safe(value: str) -> str:
    return " ".join(value.split())[:500]


async def send_dead_letter(js: JetStreamContext, letter: DeadLetter) -> None:
    # The original headers go along too, minus the dedup id: the DLQ must accept a second
    # dead letter for the same event (say, after it was replayed and failed again).
    headers = {k: v for k, v in letter.headers.items() if k != "Nats-Msg-Id"}
    headers |= {
        "Cortex-Dlq-Reason": _header_safe(letter.reason),
        "Cortex-Dlq-Error": _header_safe(letter.error),
        "Cortex-Dlq-Consumer": letter.consumer,
        "Cortex-Dlq-Subject": letter.subject,
        "Cortex-Dlq-Deliveries": str(letter.deliveries),
    }
    await js.publish(dead_letter(letter.subject), letter.record(), headers=headers)
