"""The rows of the scenario: where the first worker stops, what the human does, and what the service should hold."""

from __future__ import annotations

from dataclasses import dataclass

from experiments.gcp_resource.case import AGENT_WRITER, HUMAN_REDEPLOY

BEFORE_SEND, AFTER_COMMIT = "before_send", "after_commit"
SYSTEMS = ("no_check", "hand_check", "interlock")
OPT_IN_SYSTEMS = ("interlock_ttl",)
CLAIM_TTL_SECONDS = 30.0


@dataclass(frozen=True)
class Fault:
    """One row. `crash` is the kill point of the first worker (None: it is not killed); `redeploy` says when the
    human uploads v43 (`outage`: while no worker runs; `recovery`: while the restart worker is paused right before
    its resend); `cut` cuts the connection of the first worker's upload after the store committed it."""

    name: str
    crash: str | None
    redeploy: str | None
    want_writes: int
    want_owner: str
    want: str
    versioned: bool = True
    cut: bool = False
    published: bool = False

    @property
    def ground_truth_source(self) -> str:
        """Versions when the bucket keeps them; otherwise the recording proxy's write log."""
        return "versions" if self.versioned else "write_log"

    @property
    def needs_proxy(self) -> bool:
        """Rows judged or faulted on the wire need the recording proxy, which only runs offline."""
        return self.cut or not self.versioned


_WANT_REDEPLOY_BEFORE = "the human's v43 stays live; the stale rollback never lands"
_WANT_REDEPLOY_AFTER = "the rollback landed once before the redeploy; the human's v43 stays live"
_WANT_CONTROL = "control: the rollback landed once and stays live; nothing writes it twice"


def _published(name: str, crash: str, redeploy: str | None, writes: int, owner: str, want: str) -> list[Fault]:
    return [Fault(name, crash, redeploy, writes, owner, want, published=True),
            Fault(f"{name}_versioning_off", crash, redeploy, writes, owner, want, versioned=False)]


_ROWS = [
    *_published("crash_before_send_redeploy", BEFORE_SEND, "outage", 0, HUMAN_REDEPLOY, _WANT_REDEPLOY_BEFORE),
    *_published("crash_after_commit_redeploy", AFTER_COMMIT, "outage", 1, HUMAN_REDEPLOY, _WANT_REDEPLOY_AFTER),
    *_published("crash_after_commit_no_change", AFTER_COMMIT, None, 1, AGENT_WRITER, _WANT_CONTROL),
    Fault("cut_after_commit_no_change", None, None, 1, AGENT_WRITER,
          "the connection is cut after the store committed the rollback: it landed once and stays live", cut=True),
    Fault("crash_before_send_redeploy_during_recovery", BEFORE_SEND, "recovery", 0, HUMAN_REDEPLOY,
          "the human's v43 lands right before the restart's resend; the stale rollback never lands"),
]
# Published rows first (in the published order), then the rows beyond the published run.
FAULTS = {f.name: f for f in sorted(_ROWS, key=lambda f: not f.published)}
