"""One process per open journal and claims store: a child forked after either was opened shares the parent's
open files, locks and database sessions, so its writes would interleave with the parent's under one lock or on
one session. Each refuses it."""

from __future__ import annotations

import os

from .errors import ConfigurationError


def refuse_if_forked(opened_by: int, what: object) -> None:
    """Raise ConfigurationError when this process is not `opened_by`, the process that opened `what`."""
    now = os.getpid()
    if now != opened_by:
        raise ConfigurationError(f"{what}: opened by process {opened_by} and used by process {now}, forked from it; "
                                 "open it (or the Interlock) in each process, after the fork")
