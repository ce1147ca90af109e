"""Every scenario as the explorer drives it: through the runner's scenario interface (experiments.runner.Scenario),
so the explorer prepares a run's case, acts, slows the service and reads the ground truth exactly as the scenario
runner does, and a new scenario is one module.

A world is one scenario instance over its stand-ins for a whole exploration (a fresh object, slot or ledger per
run), plus what only the explorer adds: the PostgreSQL journal (one database every run shares, or, for a hazard
that strikes the server itself, one cluster per concurrent run, held by one run at a time), the claim TTL its
hazards need, and the workers' environment.
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import Any

from experiments import live, planted
from experiments.explore.ledger_worker import CLAIM_TTL_ENV as LEDGER_CLAIM_TTL_ENV
from experiments.journals import CLAIM_TTL_ENV, JOURNAL_URL_ENV
from experiments.runner import Case, Scenario
from experiments.services.ledger import MAX_DELAY_SECONDS

SETTLE_MARGIN_SECONDS = 2.0
SETTLE_POLL_SECONDS = 0.005


@dataclass
class Truth:
    """What the service holds: the agent's committed writes (each with the time the service received it) and how
    many agent copies the service holds now (versions in the listing, live events on the slot, applies)."""

    writes: list[tuple[str, float]]
    live: int


class World:
    """One scenario over its stand-ins, shared by the explorer's threads (`lock` guards the scenario's clients)."""

    def __init__(self, scenario: Scenario, services: live.Services, claim_ttl: float | None):
        self.scenario = scenario
        self.module = scenario.worker
        self.journal, self.log = scenario.journal_file, scenario.send_log
        self.env = dict(services.env)  # what every worker needs to reach the stand-ins
        if claim_ttl is not None:  # the scenario workers' and the ledger worker's names for it
            self.env.update({CLAIM_TTL_ENV: str(claim_ttl), LEDGER_CLAIM_TTL_ENV: str(claim_ttl)})
        self.databases: queue.Queue[Database] | None = None  # free databases, when each run holds one alone
        self.database: Database | None = None  # the one every run shares
        self.lock = threading.Lock()
        self._index = count()
        self._held: dict[str, Database] = {}

    def setup(self, directory: Path, schedule: Any, system: str) -> Case:
        """The scenario seeds the run's case; a slow-service schedule slows its agent writes before any is sent."""
        facts = {} if schedule.fence is None else {"fence": schedule.fence}
        case = Case(directory, self.scenario.fault_type(f"explore-{schedule.seed}", **facts), system,
                    next(self._index))
        self.scenario.seed(case)
        case.ids["run"] = f"{schedule.seed}-{system}"
        if self.databases is not None:
            self._held[case.ids["run"]] = self.databases.get()
        if schedule.delay is not None:
            self.scenario.slow_writes(case, schedule.delay)
        return case

    def argv(self, case: Case, phase: str) -> list[str]:
        """The worker's command line."""
        return self.scenario.worker_args(case, phase)

    def arm_cut(self, case: Case) -> None:
        """Lose the answer of the case's next committed agent write."""
        self.scenario.arm_cut(case)

    def act(self, case: Case, action: str, when: str) -> None:
        """The premise moves or the authority ends, now."""
        self.scenario.perform(case, action, when)

    def worker_env(self, case: Case) -> dict[str, str]:
        """What a worker of this run adds to the world's environment: the run's database address, if any."""
        database = self._database(case)
        return {} if database is None else {JOURNAL_URL_ENV: database.url_for(case.ids["run"])}

    def strike(self, case: Case, how: str) -> None:
        """End the run's database sessions, or stop and start the database server."""
        database = self._database(case)
        if database is None:
            raise ValueError(f"{how} needs the PostgreSQL journal")
        if how == "terminate_session":
            database.terminate(case.ids["run"])
        elif how == "restart_server":
            database.restart()
        else:
            raise ValueError(f"unknown database hazard {how!r}")

    def plant(self, raises: str | None, hold: float | None) -> dict[str, str]:
        """What the first sender's environment plants in its send function: a bug raised at a point, a request
        held that many seconds."""
        env = {} if raises is None else {planted.RAISES_ENV: raises}
        return env if hold is None else {**env, planted.HOLDS_ENV: str(hold)}

    def received(self, case: Case) -> bool:
        """The service holds (or has landed) an agent write of the case."""
        return bool(self.scenario.held_writes(case))

    def settle(self, case: Case) -> bool:
        """Wait until every agent write the service received has landed (a dead sender's request may still be
        waiting out its delay); False if one is still pending after the longest delay."""
        deadline = time.monotonic() + MAX_DELAY_SECONDS + SETTLE_MARGIN_SECONDS
        while not all(held["landed"] for held in self.scenario.held_writes(case)):
            if time.monotonic() > deadline:
                return False
            time.sleep(SETTLE_POLL_SECONDS)
        return True

    def truth(self, case: Case) -> Truth:
        """The agent's writes and live copies, as the scenario reads them from its service."""
        return Truth(*self.scenario.agent_writes(case))

    def finish(self, case: Case) -> None:
        """Drop what the run set up at the service; a database it held alone is free for the next run."""
        self.scenario.release(case)
        held = self._held.pop(case.ids.get("run", ""), None)
        if held is not None and self.databases is not None:
            self.databases.put(held)

    def _database(self, case: Case) -> Database | None:
        return self._held.get(case.ids["run"], self.database)


class Database:
    """The exploration's throwaway PostgreSQL cluster and the one journal database every run shares."""

    NAME = "explore"

    def __init__(self, cluster: Any):
        self.cluster = cluster
        self.url = cluster.create_database(self.NAME)
        self.lock = threading.Lock()

    def url_for(self, run: str) -> str:
        """The journal address a run's workers use: their sessions carry the run's name."""
        return f"{self.url}?application_name=explore-{run}"

    def terminate(self, run: str) -> int:
        """End every session of the run's workers (pg_terminate_backend); how many there were."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                                (f"explore-{run}",)).fetchall()
        return len(rows)

    def restart(self) -> None:
        """Stop the server (every session ends at once) and start it again."""
        with self.lock:
            self.cluster.restart()


def scenario_class(name: str) -> type[Scenario]:
    """The scenario module the explorer runs under that name."""
    if name == "gcp_resource":
        from experiments.gcp_resource.scenario import GcpResource

        return GcpResource
    if name == "calendar":
        from experiments.calendar.scenario import Calendar

        return Calendar
    if name == "ledger":
        from experiments.explore.ledger import Ledger

        return Ledger
    raise ValueError(f"unknown scenario {name!r}")


@contextlib.contextmanager
def world(scenario: str, work: Path, journal: str = "jsonl", claim_ttl: float | None = None,
          own_database: int = 0) -> Iterator[World]:
    """The scenario over its stand-ins and the journal database for the block; with `own_database` > 0, that many
    clusters, each run holding one alone (a hazard that restarts the server then strikes that run only)."""
    chosen = scenario_class(scenario)
    args = argparse.Namespace(live=False, journal=None, systems=list(chosen.systems),
                              faults=[chosen.fault_type("explore")])
    with contextlib.ExitStack() as stack:
        services = stack.enter_context(live.services(False, work / "services", chosen.roles))
        instance = chosen(args, services, work / "cases")
        stack.enter_context(instance.open())
        explored = World(instance, services, claim_ttl)
        if journal == "postgresql":
            from experiments.services.postgres import TempCluster

            if own_database:
                explored.databases = queue.Queue()
                for _ in range(own_database):
                    explored.databases.put(Database(stack.enter_context(TempCluster())))
            else:
                explored.database = Database(stack.enter_context(TempCluster()))
        yield explored
