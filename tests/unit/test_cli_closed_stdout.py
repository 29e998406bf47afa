"""`cortex dlq list --org acme | head -1`: once the reader is gone, the command stops quietly, as programs
that SIGPIPE ends do. Before: "error: cannot connect to the database: [Errno 32] Broken pipe" and exit
code 1 (BrokenPipeError is a ConnectionError), or, for a short output flushed at exit, Python's warning."""

import argparse
import os
import signal
import sys

import pytest

from cortex_cli import main as cli


@pytest.mark.parametrize("lines", [1, 10_000], ids=["flushed-at-the-end", "written-while-running"])
def test_a_closed_stdout_ends_the_command_quietly(
    lines: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def listing(args: argparse.Namespace) -> int:
        print("a line of output\n" * lines, end="")
        return 0

    read_end, write_end = os.pipe()
    os.close(read_end)  # what `head -1` does once it has its line
    with os.fdopen(write_end, "w") as closed:
        monkeypatch.setattr(sys, "stdout", closed)
        monkeypatch.setattr(cli, "_migrate", listing)

        code = cli.main(["migrate"])

        closed.write("what is left is flushed at exit")  # to /dev/null now, without a second error

    assert code == 128 + signal.SIGPIPE
    assert capsys.readouterr().err == ""
