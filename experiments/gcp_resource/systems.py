"""The systems this scenario compares, one entry each: how a worker acts on the decided rollback with it.

Each entry takes (system, phase, case_dir, client, case, decision, body, hook) and returns (outcome, ids); `hook`
is the worker's fault hook (experiments.crash), reached at the same points by every system. Adding a
system to the scenario is one entry here; the runner runs every system named here that `--systems` asks for.
Each entry imports its own module when called, so a worker loads only the system it runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from interlock.hooks import Hooks

from experiments.phases import DECIDE

System = Callable[[str, str, Path, Any, dict[str, Any], dict[str, Any], str, Hooks], tuple[str, dict[str, Any]]]


def _queued(system: str, phase: str, case_dir: Path, client: Any, case: dict[str, Any], decision: dict[str, Any],
            body: str, hook: Hooks) -> tuple[str, dict[str, Any]]:
    """A baseline: the first worker queues the rollback, every worker handles the queued message."""
    from experiments.gcp_resource import baselines

    if phase == DECIDE:
        baselines.JobQueue(case_dir).put(case, decision, body)
    return baselines.deliver(system, phase, case_dir, client, hook)


def _gated(system: str, phase: str, case_dir: Path, client: Any, case: dict[str, Any], decision: dict[str, Any],
           body: str, hook: Hooks) -> tuple[str, dict[str, Any]]:
    """The gate: every worker submits the same effect and the gate settles it."""
    from experiments.gcp_resource import gated

    return gated.submit(system, case_dir, client, case, decision, body, hook)


def _peer(system: str, phase: str, case_dir: Path, client: Any, case: dict[str, Any], decision: dict[str, Any],
          body: str, hook: Hooks) -> tuple[str, dict[str, Any]]:
    """A peer (DBOS, Powertools): the cell's job runs as the peer's documentation recommends (experiments.peers)."""
    from experiments.peers import gcp_resource

    return gcp_resource.run(system, phase, case_dir, client, hook.reach)


SYSTEMS: dict[str, System] = {
    "no_check": _queued,
    "hand_check": _queued,
    "interlock": _gated,
    "interlock_ttl": _gated,
    "dbos_step": _peer,
    "powertools_idempotent": _peer,
}
