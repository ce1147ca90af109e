"""The gate's column: Interlock over the object as a tier-2 target, the generation read as the premise, the open
incident as the lease. `interlock_ttl` is the same gate with claim liveness detection off: the restart worker
waits out a 30 s claim TTL before it may claim, which reproduces the published timing (this wait lives here, in
the experiment's worker, not in the library)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from google.cloud import storage

from experiments import crash
from interlock import Effect, Gate
from interlock.targets.gcs import GcsObjectTarget, generation_premise

from experiments.gcp_resource.case import (AGENT, AGENT_WRITER, INCIDENT_FILE, JOURNAL_FILE, WRITER_KEY,
                                           IncidentLease, effect_key)
from experiments.gcp_resource.faults import CLAIM_TTL_SECONDS
from experiments.gcp_resource.scoring import journal_kinds, receipt_summary
from experiments.journals import case_bundle, open_for_case

INTERLOCK, INTERLOCK_TTL = "interlock", "interlock_ttl"
CLAIM_WAIT_SECONDS = 10.0


def submit(system: str, phase: str, case_dir: Path, client: storage.Client, case: dict[str, Any],
           decision: dict[str, Any], body: str) -> tuple[str, dict[str, Any]]:
    """Submit the decided rollback; a restarted worker submits the same effect and the gate settles it."""
    bucket, name = case["bucket"], case["object"]
    generation = decision["generation"]
    effect = Effect(
        key=effect_key(bucket, name),
        payload={"bucket": bucket, "object": name, "to_version": decision["to_version"], "body": body,
                 "if_generation_match": generation},
        premises=[generation_premise(client, bucket, name, decided=generation)],
        lease=IncidentLease(case_dir / INCIDENT_FILE),
        agent=AGENT,
    )
    journal, claims = open_for_case(case_dir / JOURNAL_FILE)
    gate = Gate(journal, GcsObjectTarget(client, bucket, name, metadata={WRITER_KEY: AGENT_WRITER}), claims=claims,
                claim_wait=CLAIM_WAIT_SECONDS, hooks=crash.HOOK)
    if system == INTERLOCK_TTL and phase == "restart":
        _wait_out_claim_ttl(gate, effect.effect_id)
    outcome = gate.submit(effect)
    entries = case_bundle(journal, effect.effect_id, case_dir / JOURNAL_FILE)["entries"]
    return outcome.status, {"effect_id": effect.effect_id, "journal": journal_kinds(entries),
                            "receipt": receipt_summary(entries, effect.effect_id)}


def _wait_out_claim_ttl(gate: Gate, effect_id: str) -> None:
    """Without liveness detection a dead owner's claim looks held until its TTL runs out from when it was taken."""
    owner = gate.claims.owner(effect_id)
    if owner and isinstance(owner.get("since"), (int, float)):
        time.sleep(max(0.0, owner["since"] + CLAIM_TTL_SECONDS - time.time()))
