"""The JetStream streams Cortex uses, created at start-up when missing. Settings live here, in code."""

import logging

from nats.js import JetStreamContext
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig
from nats.js.errors import NotFoundError

from cortex_contracts.subjects import STREAM_DLQ, STREAM_KB, STREAM_SUBJECTS

log = logging.getLogger(__name__)

DUPLICATE_WINDOW_SECONDS = 120.0
DAY_SECONDS = 86_400.0


def stream_configs() -> list[StreamConfig]:
    configs = []
    for name, subjects in STREAM_SUBJECTS.items():
        # KB keeps everything (a full re-index replays it); the others age out.
        max_age = 0.0 if name == STREAM_KB else (30 if name == STREAM_DLQ else 7) * DAY_SECONDS
        configs.append(
            StreamConfig(
                name=name,
                subjects=subjects,
                retention=RetentionPolicy.LIMITS,
                storage=StorageType.FILE,
                discard=DiscardPolicy.OLD,
                max_age=max_age,
                duplicate_window=DUPLICATE_WINDOW_SECONDS,
            )
        )
    return configs


async def ensure_streams(js: JetStreamContext) -> None:
    for config in stream_configs():
        assert config.name is not None
        try:
            await js.stream_info(config.name)
        except NotFoundError:
            await js.add_stream(config)
            log.info("created stream %s for %s", config.name, config.subjects)
