"""Closing a service's database connections on the server side, as a restart or an idle timeout would."""

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

TERMINATE = text(
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name AND pid <> pg_backend_pid()"
)
LEFT = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")


async def terminate_backends(owner: AsyncEngine, application_name: str) -> int:
    """Terminate every connection named `application_name`, wait until they are gone; how many there were."""
    async with owner.connect() as connection:
        terminated = (await connection.execute(TERMINATE, {"name": application_name})).scalars()
        count = sum(1 for ok in terminated if ok)
        for _ in range(100):
            if await connection.scalar(LEFT, {"name": application_name}) == 0:
                break
            await connection.execute(text("SELECT pg_sleep(0.05)"))
        await connection.commit()
    return count
