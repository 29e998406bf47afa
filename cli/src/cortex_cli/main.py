"""`cortex run | migrate | token | ingest | work | apikey | plugins | dlq`."""

import argparse
import asyncio
import logging
import os
import signal
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dotenv import load_dotenv

from cortex_cli import config, dead_letters
from cortex_cli.api_keys import create_key, list_keys, revoke_key
from cortex_cli.ingest import IngestOptions, ingest_files
from cortex_cli.organizations import (
    InvalidSlug,
    UnknownOrganization,
    current_role,
    ensure_membership,
    organization_id,
    organization_ids,
    work_in_catalog,
)
from cortex_cli.plugins import choose_plugin, list_plugins, render
from cortex_cli.run_lock import AlreadyRunning, holding_run_lock
from cortex_cli.unreachable import Unreachable, database_refusal, nats_refusal, privilege_refusal
from cortex_cli.works import create_work
from cortex_contracts.doc_classes import DOC_CLASSES
from cortex_plugins import CATEGORIES, PluginChoiceError, PluginRegistry
from cortex_store.models import MemberRole

MAX_COPIES = 64
SLUG_CHARS = 100  # the gateway's X-Scope-Slug takes at most this many
NAME_CHARS = 200  # user ids, key and Team names
TITLE_CHARS = 300  # Work and Mission titles
TAG_CHARS = 64  # tags and document classes


def _copies(value: str) -> int:
    try:
        count = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of processes: {value!r}") from None
    if not 1 <= count <= MAX_COPIES:
        raise argparse.ArgumentTypeError(f"between 1 and {MAX_COPIES}, not {count}")
    return count


def _copies_in_environment() -> int:
    value = os.environ.get("CORTEX_AGGREGATOR_COPIES", "1")
    try:
        return _copies(value)
    except argparse.ArgumentTypeError as exc:
        raise config.BadSetting(f"CORTEX_AGGREGATOR_COPIES: {exc}") from None


def _text(limit: int) -> Callable[[str], str]:
    """An argument that must say something: stripped, not blank, at most `limit` characters, no NUL."""

    def checked(value: str) -> str:
        text = value.strip()
        if not text or "\x00" in text:
            raise argparse.ArgumentTypeError("must not be blank")
        if len(text) > limit:
            raise argparse.ArgumentTypeError(f"at most {limit} characters, not {len(text)}")
        return text

    return checked


def _run(args: argparse.Namespace) -> int:
    directory = config.data_dir()
    with holding_run_lock(directory) as run_lock:
        return _run_holding_the_lock(args, directory, run_lock)


def _run_holding_the_lock(args: argparse.Namespace, directory: Path, run_lock: int) -> int:
    from cortex_cli.supervisor import RunSettings, run_all
    from cortex_store.migrate import upgrade

    secret = config.ensure_secret(directory)
    given_url, app_password = config.given_database_url(), os.environ.get("CORTEX_APP_DB_PASSWORD")
    if given_url and not app_password:
        print(
            "cortex: the services connect as DATABASE_URL's own user (row-level security does not hold a role"
            " that owns the tables); set CORTEX_APP_DB_PASSWORD to run them as cortex_app",
            flush=True,
        )
    settings = RunSettings(
        data_dir=directory,
        database_url=given_url,
        nats_url=os.environ.get("NATS_URL") or None,
        extra_env={"CORTEX_SECRET": secret, "CORTEX_DATA_DIR": str(directory)},
        migrate=upgrade,
        service_database_url=service_database_url(given_url, app_password),
        on_ready=lambda db, nats: config.write_runtime(directory, _runtime(db, nats)),
        copies={"aggregator": args.aggregators or _copies_in_environment()},
        run_lock=run_lock,
    )
    try:
        return run_all(settings)
    finally:
        config.clear_runtime(directory)


def service_database_url(given_url: str | None, app_password: str | None) -> Callable[[str], str]:
    """How the services connect: as cortex_app, under row-level security (on the embedded server, which
    trusts local logins, without a password; on a given one with CORTEX_APP_DB_PASSWORD, which every
    migration sets), else as the given DATABASE_URL's own user."""
    from cortex_store.tenancy import app_role_url

    if given_url is None:
        return app_role_url
    if app_password:
        return lambda owner_url: app_role_url(owner_url, app_password)
    return str


def _migrate(args: argparse.Namespace) -> int:
    from cortex_store.migrate import upgrade

    try:
        upgrade(config.database_url())
    except Exception as exc:
        refusal = privilege_refusal(exc)
        if refusal is None:
            raise  # main() says what a connection refusal is; anything else is a bug: its traceback
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    print("migrations applied")
    return 0


def _runtime(database_url: str, nats_url: str) -> dict[str, str]:
    """What the CLI in another shell needs of this run: where it is, its plugins, and a secret it was given
    (one it made is in the data directory already). runtime.env is 0600, as that file is."""
    given = {"CORTEX_SECRET": os.environ["CORTEX_SECRET"]} if os.environ.get("CORTEX_SECRET") else {}
    return {"DATABASE_URL": database_url, "NATS_URL": nats_url, **config.plugin_settings(os.environ), **given}


def _token(args: argparse.Namespace) -> int:
    from cortex_gateway.tokens import issue_token

    asked = MemberRole(args.role) if args.role else None
    if args.org_id is not None and not args.create:
        print("error: --org-id names the id of an organization to create: give --create too", file=sys.stderr)
        return 2
    database_url = config.endpoints().database_url
    current = asyncio.run(current_role(database_url, args.org, args.user))
    if asked is not None and current is not None and asked is not current and not args.create:
        print(
            f"error: {args.user} is {current.value} in {args.org}; give --create to make them {asked.value}",
            file=sys.stderr,
        )
        return 2
    role = asked or current or MemberRole.MEMBER  # an existing member keeps their role unless --role says
    asyncio.run(ensure_membership(database_url, args.org, args.user, role, create=args.create, wanted_id=args.org_id))
    if current is not None and role is not current:
        print(f"{args.user} was {current.value} in {args.org}, now {role.value}", file=sys.stderr)
    print(issue_token(args.user, config.ensure_secret(config.data_dir())))
    return 0


def _ingest(args: argparse.Namespace) -> int:
    paths = [Path(p) for p in args.files]
    for problem, found in (
        ("no such file", [str(p) for p in paths if not p.exists()]),
        ("not a file (directories are not read)", [str(p) for p in paths if p.exists() and not p.is_file()]),
    ):
        if found:
            print(f"error: {problem}: {', '.join(found)}", file=sys.stderr)
            return 2
    where = config.endpoints()
    org = asyncio.run(organization_id(where.database_url, args.org))
    if args.work is not None and not asyncio.run(work_in_catalog(where.database_url, org, args.work)):
        # Not refused: the catalog follows upstream's events, and a Work created a moment ago may not be there yet.
        print(
            f"warning: {args.org} has no Work {args.work} in its catalog (a typo, or not there yet): "
            "its documents are listed under that id until it is",
            file=sys.stderr,
        )
    options = IngestOptions(organization_id=org, work_id=args.work, doc_class=args.doc_class, tags=tuple(args.tag))
    count = asyncio.run(ingest_files(where.nats_url, where.database_url, paths, options))
    print(f"published {count} file(s) for {args.org}")
    if count < len(paths):  # each one said why, above
        print(f"error: {len(paths) - count} of {len(paths)} file(s) not published", file=sys.stderr)
        return 1
    return 0


def _work_create(args: argparse.Namespace) -> int:
    where = config.endpoints()
    org = asyncio.run(organization_id(where.database_url, args.org))
    work_id = asyncio.run(
        create_work(where.nats_url, org, args.title, mission_title=args.mission_title, team_name=args.team)
    )
    print(work_id)
    return 0


def _apikey(args: argparse.Namespace) -> int:
    where = config.endpoints()
    org = asyncio.run(organization_id(where.database_url, args.org))
    if args.apikey_command == "create":
        key_id, key = asyncio.run(create_key(where.database_url, org, args.name, MemberRole(args.role)))
        print(f"key {key_id} ({args.role}); shown once, store it now:")
        print(key)
    elif args.apikey_command == "revoke":
        if not asyncio.run(revoke_key(where.database_url, org, args.key_id)):
            print(f"error: no active key {args.key_id} in {args.org}", file=sys.stderr)
            return 1
        print(f"revoked {args.key_id}")
    else:
        for info in asyncio.run(list_keys(where.database_url, org)):
            state = f"revoked {info.revoked_at:%Y-%m-%d}" if info.revoked_at else "active"
            print(f"{info.id}  {info.role.value:<6}  {state:<18}  {info.name}")
    return 0


def _dlq(args: argparse.Namespace) -> int:
    if args.dlq_command == "replay" and bool(args.sequences) == args.all:
        which = "not both" if args.all else "or give --all"
        print(f"error: name the letters to replay (their numbers, from `cortex dlq list`), {which}", file=sys.stderr)
        return 2
    where = config.endpoints()
    if args.dlq_command == "list":
        if args.unowned:
            known = asyncio.run(organization_ids(where.database_url))
            letters = asyncio.run(dead_letters.list_unowned_letters(where.nats_url, known))
        else:
            org = asyncio.run(organization_id(where.database_url, args.org))
            letters = asyncio.run(dead_letters.list_letters(where.nats_url, org))
        if args.json:
            if letters:  # none: no line at all, as `jq` and `wc -l` expect of an empty listing
                print(dead_letters.render_json(letters))
        else:
            print(dead_letters.render(letters))
        return 0
    if args.dlq_command == "drop":
        return _drop(args, where)
    org = asyncio.run(organization_id(where.database_url, args.org))
    chosen = None if args.all else set(args.sequences)
    found = asyncio.run(dead_letters.replay_letters(where.nats_url, org, chosen, _replayed))
    missing = sorted((chosen or set()) - {letter.sequence for letter in found})
    if missing:
        print(f"error: no dead letter of {args.org} numbered {', '.join(map(str, missing))}", file=sys.stderr)
    return 1 if missing or any(letter.cut_from is not None for letter in found) else 0


def _drop(args: argparse.Namespace, where: config.Endpoints) -> int:
    if args.unowned:
        whose = dead_letters.unowned(asyncio.run(organization_ids(where.database_url)))
    else:
        whose = dead_letters.owned_by(asyncio.run(organization_id(where.database_url, args.org)))
    dropped = asyncio.run(dead_letters.drop_letters(where.nats_url, set(args.sequences), whose))
    for letter in dropped:
        print(f"dropped {letter.sequence}: {letter.subject}")
    missing = sorted(set(args.sequences) - {letter.sequence for letter in dropped})
    if missing:
        whom = "unowned" if args.unowned else f"of {args.org}"
        print(f"error: no dead letter {whom} numbered {', '.join(map(str, missing))}", file=sys.stderr)
    return 1 if missing else 0


def _replayed(letter: dead_letters.Letter) -> None:
    """Said at once, so that a run cut short leaves a record of what it sent."""
    if letter.cut_from is None:
        print(f"replayed {letter.sequence}: {letter.subject}", flush=True)
    else:
        print(
            f"error: letter {letter.sequence} holds only the start of its event ({letter.cut_from:,} bytes, too "
            "large for the DLQ): not replayed",
            file=sys.stderr,
            flush=True,
        )


def _plugins(args: argparse.Namespace) -> int:
    where = config.endpoints()
    org = asyncio.run(organization_id(where.database_url, args.org))
    # The listing shows each plugin's failure itself; the log lines a service writes (a health check's
    # traceback) would only repeat it, above the table.
    logging.getLogger().addHandler(logging.NullHandler())
    with config.plugins_as_the_run_has_them():  # plugins load lazily: all of it inside
        registry = PluginRegistry.from_environment()
        if args.plugins_command == "use":
            asyncio.run(choose_plugin(where.database_url, org, args.category, args.name, registry))
            print(f"{args.org}: {args.category} = {args.name}")
            if (pin := registry.pin(args.category)) is not None and pin != args.name:  # QA 40: it said nothing
                variable = f"CORTEX_PLUGIN_{args.category.upper()}"
                print(f"note: {variable}={pin} pins the running services; this choice applies once it is unset")
        else:
            print(render(asyncio.run(list_plugins(where.database_url, org, registry))))
    return 0


def _add_dlq_commands(commands: Any) -> None:  # argparse's subparsers action (a private type)
    dlq = commands.add_parser(
        "dlq", help="an organization's dead letters: list them, send them again, or drop them"
    ).add_subparsers(dest="dlq_command", required=True, metavar="COMMAND")
    dlq_list = dlq.add_parser("list", help="number, time, subject, reason and error of each, oldest first")
    whose = dlq_list.add_mutually_exclusive_group(required=True)
    whose.add_argument("--org", type=_text(SLUG_CHARS), help="organization slug")
    whose.add_argument(
        "--unowned", action="store_true", help="letters whose subject names no organization of this deployment"
    )
    dlq_list.add_argument(
        "--json", action="store_true", help="JSON Lines, one object a letter, every field whole (for scripts)"
    )
    replay = dlq.add_parser(
        "replay", help="publish the events again (once their cause is fixed), then drop the letters"
    )
    replay.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    replay.add_argument("sequences", nargs="*", type=int, metavar="NUMBER", help="letters to replay, as listed")
    replay.add_argument("--all", action="store_true", help="every letter of the organization")
    drop = dlq.add_parser("drop", help="delete letters that can never succeed, without sending them again")
    owner = drop.add_mutually_exclusive_group(required=True)
    owner.add_argument("--org", type=_text(SLUG_CHARS), help="organization slug")
    owner.add_argument("--unowned", action="store_true", help="letters `dlq list --unowned` shows")
    drop.add_argument("sequences", nargs="+", type=int, metavar="NUMBER", help="letters to drop, as listed")


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="cortex", description="Cortex: organization-wide memory.")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run", help="start embedded PostgreSQL + NATS (unless DATABASE_URL/NATS_URL) and every service"
    )
    run.add_argument(
        "--aggregators",
        type=_copies,
        help="aggregator processes sharing the searches through their queue group (default 1, or "
        "CORTEX_AGGREGATOR_COPIES); each is one Python process, so more cores want more copies",
    )
    commands.add_parser("migrate", help="apply database migrations")

    token = commands.add_parser("token", help="print a bearer token for a member of an organization")
    token.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    token.add_argument("--user", required=True, type=_text(NAME_CHARS), help="user id")
    token.add_argument(
        "--role",
        choices=[r.value for r in MemberRole],
        default=None,
        help="with --create: the member's role (default: member, or the role they have); without: must match it",
    )
    token.add_argument("--create", action="store_true", help="create the organization and membership if missing")
    token.add_argument(
        "--org-id",
        type=uuid.UUID,
        default=None,
        help="with --create: the id the organization has upstream, which its events name (default: a new one)",
    )

    ingest = commands.add_parser("ingest", help="publish files as KB document or upload events")
    ingest.add_argument("files", nargs="+", help="markdown, text, HTML, PDF, DOCX, XLSX or PPTX files")
    ingest.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    ingest.add_argument("--work", type=uuid.UUID, default=None, help="Work id (absent = org-scoped)")
    # As the API's notes take them (events may carry any class: upstream services may have their own).
    ingest.add_argument("--class", dest="doc_class", choices=list(DOC_CLASSES), default=None, help="document class")
    ingest.add_argument("--tag", action="append", type=_text(TAG_CHARS), default=[], help="tag (repeatable)")

    work = commands.add_parser("work", help="Works (published as catalog events)").add_subparsers(
        dest="work_command", required=True, metavar="COMMAND"
    )
    work_create = work.add_parser("create", help="create a Work; prints its id")
    work_create.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    work_create.add_argument("--title", required=True, type=_text(TITLE_CHARS), help="Work title")
    work_create.add_argument("--mission-title", type=_text(TITLE_CHARS), help="Mission (created if needed)")
    work_create.add_argument("--team", type=_text(NAME_CHARS), help="owning Team name (created if needed)")

    apikey = commands.add_parser("apikey", help="API keys of service accounts and agents").add_subparsers(
        dest="apikey_command", required=True, metavar="COMMAND"
    )
    create = apikey.add_parser("create", help="create a key; prints it once (last line)")
    create.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    create.add_argument("--name", required=True, type=_text(NAME_CHARS), help="what the key is for")
    create.add_argument(
        "--role",
        choices=[r.value for r in MemberRole],
        default=MemberRole.MEMBER.value,
        help="what the key may do: member reads and remembers, admin also writes notes and reads plugins"
        " (default: member)",
    )
    revoke = apikey.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    revoke.add_argument("key_id", type=uuid.UUID)
    listing = apikey.add_parser("list", help="list an organization's keys")
    listing.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")

    _add_dlq_commands(commands)

    plugins = commands.add_parser("plugins", help="plugins by category, and an organization's choices").add_subparsers(
        dest="plugins_command", required=True, metavar="COMMAND"
    )
    plugins_list = plugins.add_parser("list", help="categories, plugins, health and the active choice")
    plugins_list.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    use = plugins.add_parser("use", help="set the organization's plugin for a category (an env pin still wins)")
    use.add_argument("--org", required=True, type=_text(SLUG_CHARS), help="organization slug")
    use.add_argument(
        "category",
        help=", ".join(c.name for c in CATEGORIES if c.selectable and c.per_organization)
        + " (embedder and vector_store are chosen for the whole deployment: CORTEX_PLUGIN_EMBEDDER, …_VECTOR_STORE)",
    )
    use.add_argument("name", help="the plugin's name, as `cortex plugins list` shows it")
    return root


def main(argv: list[str] | None = None) -> int:
    # The services read `.env` (pydantic-settings); so does the CLI, for CORTEX_DATA_DIR, DATABASE_URL and
    # the like. What the environment sets wins, as with the services.
    load_dotenv(Path(".env"), override=False)
    args = parser().parse_args(argv)
    handlers = {
        "run": _run,
        "migrate": _migrate,
        "token": _token,
        "ingest": _ingest,
        "work": _work_create,
        "apikey": _apikey,
        "plugins": _plugins,
        "dlq": _dlq,
    }
    try:
        code = handlers[args.command](args)
        sys.stdout.flush()  # here, not at exit, where a closed pipe would be a warning and exit code 120
    except BrokenPipeError:
        return _reader_gone()
    except config.BadSetting as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (config.NotRunning, AlreadyRunning, Unreachable, UnknownOrganization, InvalidSlug, PluginChoiceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        running = args.command != "run"
        refusal = database_refusal(exc, running=running) or nats_refusal(exc, running=running)
        if refusal is None:
            raise
        print(f"error: {refusal}", file=sys.stderr)
        return 1
    return code


def _reader_gone() -> int:
    """Standard output was closed (`cortex dlq list | head -1`): stop quietly, as a program that SIGPIPE ends.
    What Python would still flush at exit goes to /dev/null (as the signal module's documentation does it)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 128 + signal.SIGPIPE


if __name__ == "__main__":
    sys.exit(main())
