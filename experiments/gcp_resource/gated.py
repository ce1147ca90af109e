"""The gate's systems: Interlock over the object as a lookup target, the generation read as the premise, the open
incident as the lease. `interlock_ttl` is the same gate on claims that wait out a 30 s TTL after their holder
dies (experiments.ttl_claims), as the published run's claims did."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.cloud import storage

from interlock import Effect, Gate, FileClaims
from interlock.hooks import Hooks
from interlock.receipts import verify
from interlock.targets.gcs import GcsObjectTarget, generation_premise

from experiments import planted
from experiments.gcp_resource.case import (AGENT, AGENT_WRITER, INCIDENT_FILE, JOURNAL_FILE, WRITER_KEY,
                                           IncidentLease, effect_key)
from experiments.journals import case_bundle, open_for_case
from experiments.ttl_claims import TtlClaims

INTERLOCK, INTERLOCK_TTL = "interlock", "interlock_ttl"
CLAIM_WAIT_SECONDS = 10.0
# The bound this scenario declares for a stray upload from a dead worker, which ifGenerationMatch does not stop when
# only the incident closed: the stand-in commits an upload as it arrives; for a live bucket it is an assumption.
IN_FLIGHT_SECONDS = 5.0
RECEIPT_KEYS = ("valid", "tamper_evident", "signed", "happened", "happened_once", "authorized_when_fired",
                "assumptions_held", "refused", "evidence", "rechecked_at_recovery", "problems")


def submit(system: str, case_dir: Path, client: storage.Client, case: dict[str, Any], decision: dict[str, Any],
           body: str, hook: Hooks) -> tuple[str, dict[str, Any]]:
    """Submit the decided rollback; a restarted worker submits the same effect and the gate settles it."""
    bucket, name = case["bucket"], case["object"]
    effect = Effect(
        key=effect_key(bucket, name),
        payload={"bucket": bucket, "object": name, "to_version": decision["to_version"], "body": body,
                 "if_generation_match": decision["generation"]},
        premises=[generation_premise(client, bucket, name, decided=decision["generation"])],
        lease=IncidentLease(case_dir / INCIDENT_FILE),
        agent=AGENT,
    )
    journal, claims = open_for_case(case_dir / JOURNAL_FILE)
    if system == INTERLOCK_TTL:
        claims = TtlClaims(FileClaims(case_dir / f"{JOURNAL_FILE}.claims"), case_dir / f"{JOURNAL_FILE}.ttl")
    target = planted.target(GcsObjectTarget(client, bucket, name, metadata={WRITER_KEY: AGENT_WRITER},
                                            in_flight=IN_FLIGHT_SECONDS))
    outcome = Gate(journal, target, claims=claims, claim_wait=CLAIM_WAIT_SECONDS, hooks=hook).submit(effect)
    entries = case_bundle(journal, effect.effect_id, case_dir / JOURNAL_FILE)["entries"]
    receipt = verify({"effect_id": effect.effect_id, "entries": entries})
    return outcome.status, {"effect_id": effect.effect_id,
                            "journal": [e["kind"] + (f" via {e['via']}" if e.get("via") else "") for e in entries],
                            "receipt": {key: receipt.get(key) for key in RECEIPT_KEYS}}
