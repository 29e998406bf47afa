import asyncio
import httpx
from tests.conftest import Org
from tests.gateways import ROOMY_LIMITS, running_gateway
from tests.infrastructure import Infrastructure


async def test_probe(org: Org, migrated: Infrastructure) -> None:
    async with running_gateway(migrated, **ROOMY_LIMITS) as url:
        async with httpx.AsyncClient(base_url=url, headers=dict(org.member.headers), timeout=30) as c:
            errors = []
            for round_ in range(40):
                rs = await asyncio.gather(*(c.get("/api/memory", params={"limit": 100, "tag": str(n)}) for n in range(30)), return_exceptions=True)
                errors += [(round_, repr(r)) for r in rs if isinstance(r, BaseException)]
                codes = {r.status_code for r in rs if not isinstance(r, BaseException)}
                assert codes <= {200}, codes
            print("ERRORS", len(errors), errors[:3])
            assert not errors
