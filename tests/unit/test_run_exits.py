"""How `cortex run` reports a service's end: no alarm for the signal it sent itself."""

import signal

from cortex_cli.supervisor import describe_exit


def test_a_service_ending_on_the_sigterm_it_was_sent_is_no_alarm() -> None:
    assert describe_exit(-signal.SIGTERM, sent=signal.SIGTERM) == "on the SIGTERM it was sent"


def test_any_other_signal_or_code_is_reported_as_it_is() -> None:
    assert describe_exit(-signal.SIGKILL, sent=signal.SIGTERM) == "killed by SIGKILL"
    assert describe_exit(-signal.SIGTERM) == "killed by SIGTERM"  # it exited on its own
    assert describe_exit(0, sent=signal.SIGTERM) == "exit code 0"
    assert describe_exit(3) == "exit code 3"
