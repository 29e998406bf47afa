"""`cortex run | migrate | token | ingest`."""

import argparse
import asyncio
import sys
import uuid
from pathlib import Path

from cortex_cli import config
from cortex_cli.ingest import IngestOptions, ingest_files
from cortex_cli.organizations import UnknownOrganization, ensure_membership, organization_id
from cortex_store.models import MemberRole


def _run(args: argparse.Namespace) -> int:
    import os

    from cortex_cli.supervisor import RunSettings, run_all
    from cortex_store.migrate import upgrade
    from cortex_store.tenancy import app_role_url

    directory = config.data_dir()
    secret = config.ensure_secret(directory)
    settings = RunSettings(
        data_dir=directory,
        database_url=os.environ.get("DATABASE_URL") or None,
        nats_url=os.environ.get("NATS_URL") or None,
        extra_env={"CORTEX_SECRET": secret, "CORTEX_DATA_DIR": str(directory)},
        migrate=upgrade,
        # Embedded PostgreSQL trusts local logins: the services connect as the app role, under RLS.
        service_database_url=app_role_url if not os.environ.get("DATABASE_URL") else str,
        on_ready=lambda db, nats: config.write_runtime(directory, {"DATABASE_URL": db, "NATS_URL": nats}),
    )
    try:
        return run_all(settings)
    finally:
        config.clear_runtime(directory)


def _migrate(args: argparse.Namespace) -> int:
    from cortex_store.migrate import upgrade

    upgrade(config.endpoints().database_url)
    print("migrations applied")
    return 0


def _token(args: argparse.Namespace) -> int:
    from cortex_gateway.tokens import issue_token

    role = MemberRole(args.role)
    asyncio.run(ensure_membership(config.endpoints().database_url, args.org, args.user, role, create=args.create))
    print(issue_token(args.user, config.ensure_secret(config.data_dir())))
    return 0


def _ingest(args: argparse.Namespace) -> int:
    where = config.endpoints()
    paths = [Path(p) for p in args.files]
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"not a file: {', '.join(missing)}", file=sys.stderr)
        return 2
    org = asyncio.run(organization_id(where.database_url, args.org))
    options = IngestOptions(organization_id=org, work_id=args.work, doc_class=args.doc_class, tags=tuple(args.tag))
    count = asyncio.run(ingest_files(where.nats_url, paths, options))
    print(f"published {count} document event(s) for {args.org}")
    return 0


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="cortex", description="Cortex: organization-wide memory.")
    commands = root.add_subparsers(dest="command", required=True)

    commands.add_parser("run", help="start embedded PostgreSQL + NATS (unless DATABASE_URL/NATS_URL) and every service")
    commands.add_parser("migrate", help="apply database migrations")

    token = commands.add_parser("token", help="print a bearer token for a member of an organization")
    token.add_argument("--org", required=True, help="organization slug")
    token.add_argument("--user", required=True, help="user id")
    token.add_argument("--role", choices=[r.value for r in MemberRole], default=MemberRole.MEMBER.value)
    token.add_argument("--create", action="store_true", help="create the organization and membership if missing")

    ingest = commands.add_parser("ingest", help="publish files as KB document events")
    ingest.add_argument("files", nargs="+", help="markdown or text files")
    ingest.add_argument("--org", required=True, help="organization slug")
    ingest.add_argument("--work", type=uuid.UUID, default=None, help="Work id (absent = org-scoped)")
    ingest.add_argument("--class", dest="doc_class", default=None, help="document class")
    ingest.add_argument("--tag", action="append", default=[], help="tag (repeatable)")
    return root


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    handlers = {"run": _run, "migrate": _migrate, "token": _token, "ingest": _ingest}
    try:
        return handlers[args.command](args)
    except (config.NotRunning, UnknownOrganization) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
