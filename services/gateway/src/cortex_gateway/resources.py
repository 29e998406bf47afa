"""What the routes need at run time, built once by the app's lifespan."""

from dataclasses import dataclass

import asyncpg
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from cortex_gateway.settings import GatewaySettings
from cortex_messaging.buckets import Buckets


@dataclass(frozen=True)
class Resources:
    settings: GatewaySettings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    nc: NATS
    js: JetStreamContext
    access_pool: asyncpg.Pool  # autocommit connections for the one-statement caller lookup (access.py)
    buckets: Buckets  # long note bodies travel through the Object Store
