"""`python -m cortex_cli.warden`: stops a `cortex run`'s embedded servers once the run is gone.

`cortex run` stops its servers itself on the way out, but a supervisor that is killed (SIGKILL, the
out-of-memory killer) cannot: its services stop themselves (`cortex_supervision.lifeline`), while
PostgreSQL and NATS, in sessions of their own, lived on until the next run on that data took them over.
The warden, started with the run, blocks on the run lock, which the supervisor and every service hold
until they end. When it gets the lock the run is over: after a clean stop there is nothing left to do;
after a kill it stops NATS and PostgreSQL, and removes the runtime file that pointed the CLI at them.
"""

import argparse
import fcntl
import logging
import os
from pathlib import Path

from cortex_cli import config
from cortex_cli.run_lock import LOCK_FILE, mark_held
from cortex_embedded_servers import EmbeddedNats, EmbeddedPostgres


def stop_what_the_run_left(directory: Path, *, postgres: bool, nats: bool) -> None:
    descriptor = os.open(directory / LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # returns once every process of the run has ended
        mark_held(descriptor, stopping=True)
        if nats:
            EmbeddedNats(directory / "nats").stop_leftover()
        if postgres:
            EmbeddedPostgres(directory / "pg").stop()
        config.clear_runtime(directory)
    finally:
        os.close(descriptor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--postgres", action="store_true", help="the run started the embedded PostgreSQL")
    parser.add_argument("--nats", action="store_true", help="the run started the embedded NATS")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s warden %(message)s")
    stop_what_the_run_left(args.data_dir, postgres=args.postgres, nats=args.nats)


if __name__ == "__main__":
    main()
