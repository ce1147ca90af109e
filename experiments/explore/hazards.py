"""The hazards the explorer draws schedules for: what each does to a run, and where it can run.

Each hazard has its own count per system in its own result file (results/reliability/explore_<scenario>.json
for the plain crash schedules on the file journal, explore_<scenario>[_pg]_<hazard>.json for the others).
"""

from __future__ import annotations

from dataclasses import dataclass

from experiments import crash

JOURNALS = ("jsonl", "postgresql")
POINTS = crash.POINTS
ALL = ("gcp_resource", "calendar", "ledger")
# The claim TTL of the ledger's workers, and of every scenario's under the hazards that outlast a claim: short
# enough that a schedule can outlast it.
SHORT_TTL = 1.0
OUTLAST_TTL = frozenset({"sigstop", "paused_past_ttl", "slow_send_past_ttl", "late_request"})


@dataclass(frozen=True)
class Hazard:
    """One hazard: its name, one sentence on what it does, the scenarios and journals it runs on."""

    name: str
    what: str
    scenarios: tuple[str, ...]
    journals: tuple[str, ...]


HAZARDS = {h.name: h for h in (
    Hazard("crash", "SIGKILLs at the kill points (up to three workers in a row), an outage action, a lost answer, "
                    "then up to 8 concurrent recoverers", ALL, JOURNALS),
    Hazard("concurrent_recovery", "the crash schedules, always with 2 to 8 processes recovering at once",
           ALL, ("postgresql",)),
    Hazard("slow_service", "the service lands each agent write 0-2 s after the request arrived; the sender is "
                           "SIGKILLed while its request waits there and recovery starts at once", ALL, JOURNALS),
    Hazard("sigstop", "a sender is stopped (SIGSTOP) at a kill point while recoverers run and the outage action "
                      "strikes, then continued (SIGCONT)", ALL, ("jsonl",)),
    Hazard("journal_cut", "the journal is cut at a random byte offset before the recoverers open it", ALL,
           ("jsonl",)),
    Hazard("late_request", "the first sender's send function holds its request 0-6 s (a client retrying an "
                           "attempt that never arrived), the service lands it 0-2 s after it arrives, and the sender "
                           "is SIGKILLed while it waits there; recovery starts at once", ALL, JOURNALS),
    Hazard("send_raises", "the first sender's send function raises KeyError, before its request or after the "
                          "service applied it", ALL, JOURNALS),
    Hazard("session_terminated", "the sender's database sessions are ended (pg_terminate_backend) while it waits "
                                 "at a kill point and recoverers run", ALL, ("postgresql",)),
    Hazard("server_restart", "the database server is stopped and started again while a sender waits at a kill "
                             "point and recoverers run", ALL, ("postgresql",)),
    Hazard("paused_past_ttl", "a sender is stopped (SIGSTOP) at a kill point for longer than its claim's TTL while "
                              "recoverers take over, then continued", ALL, ("postgresql",)),
    Hazard("slow_send_past_ttl", "every agent write takes longer than the claim's TTL at the service, while "
                                 "recoverers start during the send", ALL, ("postgresql",)),
)}


def hazard_named(name: str) -> Hazard:
    """The hazard of that name; ValueError naming the known ones otherwise."""
    try:
        return HAZARDS[name]
    except KeyError:
        raise ValueError(f"unknown hazard {name!r}; known: {', '.join(HAZARDS)}") from None


def claim_ttl(scenario: str, hazard: str) -> float | None:
    """The claim TTL the gated workers run with (None: the scenario's own)."""
    return SHORT_TTL if scenario == "ledger" or hazard in OUTLAST_TTL else None


def result_name(scenario: str, hazard: str, journal: str) -> str:
    """The result file of one exploration (the plain crash schedules keep their historical name)."""
    parts = [scenario] + (["pg"] if journal == "postgresql" else []) + ([] if hazard == "crash" else [hazard])
    return f"explore_{'_'.join(parts)}.json"
