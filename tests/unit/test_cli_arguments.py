"""The CLI refuses blank or overlong names before it touches anything. Before: `cortex token --create`
made an organization with an empty slug or a member with an empty user id, `cortex apikey create` a key
with no name, and `cortex work create --title ''` ended in a pydantic traceback."""

from pathlib import Path

import nats.errors
import pytest

from cortex_cli.main import main, parser
from cortex_cli.unreachable import database_refusal, nats_refusal
from cortex_contracts.doc_classes import DOC_CLASSES


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["token", "--org", "", "--user", "alice", "--create"], "argument --org: must not be blank"),
        (["token", "--org", "acme", "--user", "  ", "--create"], "argument --user: must not be blank"),
        (["token", "--org", "a" * 101, "--user", "alice"], "argument --org: at most 100 characters, not 101"),
        (["apikey", "create", "--org", "acme", "--name", ""], "argument --name: must not be blank"),
        (["work", "create", "--org", "acme", "--title", " "], "argument --title: must not be blank"),
        (["work", "create", "--org", "acme", "--title", "T", "--team", ""], "argument --team: must not be blank"),
        (["ingest", "a.md", "--org", "acme", "--tag", "t" * 65], "argument --tag: at most 64 characters, not 65"),
        (["dlq", "list", "--org", "\x00"], "argument --org: must not be blank"),
        (
            ["ingest", "a.md", "--org", "acme", "--class", "bogus"],
            f"argument --class: invalid choice: 'bogus' (choose from {', '.join(map(repr, DOC_CLASSES))})",
        ),
    ],
)
def test_blank_or_overlong_names_are_refused(argv: list[str], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parser().parse_args(argv)

    assert exit_.value.code == 2
    assert capsys.readouterr().err.rstrip().endswith(error)


def test_names_are_taken_without_surrounding_spaces() -> None:
    args = parser().parse_args(["work", "create", "--org", " acme ", "--title", " Billing ", "--team", "Platform "])

    assert (args.org, args.title, args.team) == ("acme", "Billing", "Platform")


def test_ingest_says_which_files_are_missing_and_which_are_directories(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: both were "not a file (directories are not read)", and only once Cortex was found running.
    assert main(["ingest", str(tmp_path / "missing.md"), "--org", "acme"]) == 2
    assert capsys.readouterr().err == f"error: no such file: {tmp_path / 'missing.md'}\n"
    assert main(["ingest", str(tmp_path), "--org", "acme"]) == 2
    assert capsys.readouterr().err == f"error: not a file (directories are not read): {tmp_path}\n"


@pytest.mark.parametrize(
    ("argv", "environment", "error"),
    [  # QA 38: SQLAlchemy's traceback, a data directory's secret in place of an empty one, a flag never given
        (["migrate"], {"DATABASE_URL": "localhost/postgres"}, "error: DATABASE_URL must be a PostgreSQL URL"),
        (["apikey", "list", "--org", "acme"], {"DATABASE_URL": "localhost/postgres"}, "error: DATABASE_URL must be"),
        (["run"], {"DATABASE_URL": "localhost/postgres"}, "error: DATABASE_URL must be a PostgreSQL URL"),
        (["run"], {"CORTEX_SECRET": ""}, "error: CORTEX_SECRET is empty: give one, or unset it"),
        (["run"], {"CORTEX_SECRET": "s3cret"}, "error: CORTEX_SECRET must be at least 32 bytes"),
        (["run"], {"CORTEX_AGGREGATOR_COPIES": "abc"}, "error: CORTEX_AGGREGATOR_COPIES: not a number of processes"),
    ],
)
def test_a_setting_the_cli_reads_itself_is_refused_in_one_line(
    argv: list[str],
    environment: dict[str, str],
    error: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the developer's
    monkeypatch.setenv("CORTEX_DATA_DIR", str(tmp_path / "data"))
    for name in ("DATABASE_URL", "CORTEX_SECRET", "CORTEX_AGGREGATOR_COPIES"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)

    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(error)
    assert not (tmp_path / "data" / "pg").exists()  # refused before any server started


def test_replay_takes_letter_numbers_or_all_not_both(capsys: pytest.CaptureFixture[str]) -> None:
    """Said before anything is reached (no database or NATS here)."""
    assert main(["dlq", "replay", "--org", "acme", "3", "--all"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("(their numbers, from `cortex dlq list`), not both")
    assert main(["dlq", "replay", "--org", "acme"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("(their numbers, from `cortex dlq list`), or give --all")


def test_cortex_run_does_not_tell_its_operator_to_check_that_cortex_run_is_running() -> None:
    refused = ConnectionRefusedError(111, "Connect call failed")
    assert (database_refusal(refused) or "").endswith("(check DATABASE_URL, or that `cortex run` is running)")
    assert (database_refusal(refused, running=False) or "").endswith("(check DATABASE_URL)")


def test_a_nats_timeout_is_not_blamed_on_the_database() -> None:
    """nats-py's TimeoutError is a TimeoutError too: before (QA 46), an interrupted replay said "cannot connect to
    the database: nats: timeout"; and a database timeout said nothing after "cannot connect to the database:"."""
    timeout = nats.errors.TimeoutError()
    assert database_refusal(timeout) is None
    said = "NATS did not answer: nats: timeout (check NATS_URL, or that `cortex run` is running)"
    assert nats_refusal(timeout) == said
    assert (database_refusal(TimeoutError()) or "").startswith("cannot connect to the database: timed out (")
