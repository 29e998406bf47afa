"""The CLI refuses blank or overlong names before it touches anything. Before: `cortex token --create`
made an organization with an empty slug or a member with an empty user id, `cortex apikey create` a key
with no name, and `cortex work create --title ''` ended in a pydantic traceback."""

import pytest

from cortex_cli.main import parser
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
