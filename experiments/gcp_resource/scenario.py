"""Scenario gcp_resource: an agent's config rollback against a human's redeploy, the first worker SIGKILLed.

Per cell: seed v42 (human-deploy), let the decider read the live object and decide the rollback to v41, run the
first worker until the fault fires, let the human upload v43 with no precondition (during the outage, or while
the restarted worker is paused right before its resend), run the restarted worker, then read the service: the
object's full version listing and live resource, and the recording proxy's write log where the bucket keeps no
versions or the connection is cut. Offline (the default) the store is fake-gcs-server behind the recording proxy
and the decider is the scripted one; `--live` uses Google Cloud Storage in fresh interlock-sandbox-<10 hex>
buckets (deleted after the run) and the Anthropic model.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from interlock import effect_id_for

from experiments import harness, live
from experiments.atomic import write_json
from experiments.gcp_resource.case import (AGENT_WRITER, CASE_FILE, DECISION_FILE, HUMAN_DEPLOY, HUMAN_REDEPLOY,
                                           INCIDENT_FILE, INCIDENT_ID, JOURNAL_FILE, LOG_FILE, WRITER_KEY, body,
                                           effect_key, incident_text, object_name)
from experiments.gcp_resource.faults import FAULTS, GcpFault
from experiments.gcp_resource.gated import CLAIM_WAIT_SECONDS, INTERLOCK_TTL
from experiments.gcp_resource.systems import SYSTEMS
from experiments.runner import OUTAGE, PAUSED, Case, Scenario
from experiments.ttl_claims import TTL_SECONDS

if TYPE_CHECKING:
    from experiments.services.gcs_proxy import RecordingProxy

RECORDS = {
    "no_check": "log.jsonl: a line before each upload (it checks nothing) and one with its result",
    "hand_check": "log.jsonl: a line before each upload naming its precondition, and one with its result and any "
                  "version lookup",
    "interlock": "hash-chained journal: the decision, its premise, each incident check, each send and what recovery "
                 "re-checked",
    INTERLOCK_TTL: "hash-chained journal: the decision, its premise, each incident check, each send and what "
                   "recovery re-checked",
    "dbos_step": "DBOS system database: the workflow's status, input and output rows and its step's checkpointed "
                 "output (peer_record_<phase>.json, peer_record_after_run.json)",
    "powertools_idempotent": "Powertools idempotency record in Redis: status, expiry, in-progress expiry and the "
                             "stored answer (peer_record_<phase>.json, peer_record_after_run.json)",
}
CLAIMS = {
    "interlock": {"kind": "flock per effect, released by the kernel when its owner dies",
                  "claim_wait_seconds": CLAIM_WAIT_SECONDS},
    INTERLOCK_TTL: {"kind": "the same flock under claims with no liveness detection: a dead holder's claim is "
                            "waited out for its TTL, counted from when it was taken (experiments.ttl_claims)",
                    "ttl_seconds": TTL_SECONDS, "claim_wait_seconds": CLAIM_WAIT_SECONDS},
}

WRITE_METHODS = frozenset({"POST", "PUT", "PATCH"})
# Run by default, in column order; the rest of SYSTEMS runs when --systems names it.
DEFAULT_SYSTEMS = ("no_check", "hand_check", "interlock", "dbos_step", "powertools_idempotent")
# The control: the published run's claims (a 30 s TTL) on one before-send and one after-commit row.
CONTROLS = {INTERLOCK_TTL: ("crash_before_send_redeploy", "crash_after_commit_redeploy")}


class GcpResource(Scenario):
    """An agent's config rollback on an object store against a human's redeploy."""

    name = "gcp_resource"
    worker = "experiments.gcp_resource.worker"
    roles = (live.OBJECT_STORE, live.MODEL)
    systems = DEFAULT_SYSTEMS
    extra_systems = tuple(name for name in SYSTEMS if name not in DEFAULT_SYSTEMS and name not in CONTROLS)
    controls = cast(dict[str, tuple[str, ...]], CONTROLS)
    faults = FAULTS
    fault_type = GcpFault
    journal_file = JOURNAL_FILE
    send_log = LOG_FILE
    actions = ("human_write", "lease_revoked")

    @contextlib.contextmanager
    def open(self) -> Iterator[None]:
        """The storage client, the decider, and one sandbox bucket per versioning setting the faults use."""
        from experiments.clients import storage_client
        from experiments.deciders import DEFAULT_MODEL, AnthropicDecider, ScriptedDecider

        self.client = storage_client()
        self.decider = AnthropicDecider(DEFAULT_MODEL) if self.args.live else ScriptedDecider()
        self.buckets: dict[bool, str] = {}
        with contextlib.ExitStack() as stack:
            for versioned in sorted({f.versioned for f in self.args.faults}, reverse=True):
                bucket = stack.enter_context(live.sandbox_bucket(self.client, versioned=versioned))
                self.buckets[versioned] = bucket.name
            yield

    def _upload(self, bucket: str, name: str, version: str, writer: str, **precondition: Any) -> str:
        blob = self.client.bucket(bucket).blob(name)
        blob.metadata = {WRITER_KEY: writer}
        blob.upload_from_string(body(version), content_type="application/json", retry=None, **precondition)
        return str(blob.generation)

    def seed(self, case: Case) -> None:
        """v42 by the human's deploy, the open incident, and the decision made on the live object."""
        from experiments.deciders import persisted_decision

        bucket, name = self.buckets[cast(GcpFault, case.fault).versioned], object_name(case.fault.name, case.system)
        seeded = self._upload(bucket, name, "v42", HUMAN_DEPLOY, if_generation_match=0)
        shown = {"bucket": bucket, "object": name, "incident_id": INCIDENT_ID, "incident": incident_text(bucket, name)}
        write_json(case.directory / CASE_FILE, shown)
        write_json(case.directory / INCIDENT_FILE, {INCIDENT_ID: "open"})

        def get_config() -> dict[str, Any]:
            blob = self.client.bucket(bucket).get_blob(name)
            return {"generation": str(blob.generation), "body": json.loads(blob.download_as_text()),
                    "metadata": blob.metadata or {}}

        decision = persisted_decision(case.directory / DECISION_FILE,
                                      lambda: self.decider.decide_rollback(shown, get_config))
        case.ids.update(bucket=bucket, object=name, seed_generation=seeded,
                        decided_on_generation=decision["generation"], human_redeploy_generation=None)
        if case.system.startswith("interlock"):
            case.ids["effect_id"] = effect_id_for(effect_key(bucket, name))

    def arm_cut(self, case: Case) -> None:
        """The proxy cuts the answer of the next agent upload of this object that the store commits."""
        name = case.ids["object"]
        cast("RecordingProxy", self.services.gcs_proxy).cut_next(
            lambda e: e.get("method") == "POST" and e.get("object") == name and e.get("status") == 200
            and (e.get("metadata") or {}).get(WRITER_KEY) == "agent")

    def act(self, case: Case, moment: str) -> dict[str, Any] | None:
        """The human uploads v43 with no precondition, at the moment the fault says."""
        when = {OUTAGE: "outage", PAUSED: "recovery"}.get(moment)
        if when is None or cast(GcpFault, case.fault).redeploy != when:
            return None
        return self.perform(case, "human_write", when)

    def perform(self, case: Case, action: str, when: str) -> dict[str, Any]:
        """The human redeploys v43 with no precondition (`human_write`), or the incident is resolved."""
        if action == "lease_revoked":
            write_json(case.directory / INCIDENT_FILE, {INCIDENT_ID: "resolved"})
            return {"incident": "resolved", "at": time.time(), "when": when}
        generation = self._upload(case.ids["bucket"], case.ids["object"], "v43", HUMAN_REDEPLOY)
        case.ids["human_redeploy_generation"] = generation
        return {"human_redeploy_generation": generation, "at": time.time()}

    def agent_writes(self, case: Case) -> tuple[list[tuple[str, float]], int]:
        """Agent uploads of the object from the proxy's log (answered 200, or committed and cut), each timed when
        the proxy received it; the agent's generations in the version listing."""
        proxy = self.services.gcs_proxy
        if proxy is None:
            raise NotImplementedError("the agent's writes are read from the recording proxy of the stand-in")
        name = case.ids["object"]
        writes = [(str(e["generation"]), float(e.get("received_ts", e["ts"]))) for e in proxy.exchanges_of(name)
                  if e.get("method") in WRITE_METHODS and e.get("generation") and (e.get("status") == 200 or e["cut"])
                  and (e.get("metadata") or {}).get(WRITER_KEY) == AGENT_WRITER]
        versions = self.client.list_blobs(case.ids["bucket"], prefix=name, versions="true")
        return writes, sum(b.name == name and (b.metadata or {}).get(WRITER_KEY) == AGENT_WRITER for b in versions)

    def slow_writes(self, case: Case, seconds: float) -> None:
        """The proxy holds each agent upload of the object for `seconds` before relaying it to the store."""
        name = case.ids["object"]
        cast("RecordingProxy", self.services.gcs_proxy).delays.slow(
            name, lambda r: r["method"] == "POST" and r["object"] == name
            and (r.get("metadata") or {}).get(WRITER_KEY) == AGENT_WRITER, seconds)

    def held_writes(self, case: Case) -> list[dict[str, Any]]:
        """The agent uploads the proxy held so far."""
        return cast("RecordingProxy", self.services.gcs_proxy).delays.arrivals(case.ids["object"])

    def release(self, case: Case) -> None:
        """Stop holding the object's uploads."""
        if self.services.gcs_proxy is not None:
            self.services.gcs_proxy.delays.forget(case.ids["object"])

    def _ground_truth(self, case: Case) -> dict[str, Any]:
        """The live object's raw resource and the raw versions=true listing of the object, oldest first."""
        from google.api_core.exceptions import NotFound

        bucket, name = case.ids["bucket"], case.ids["object"]
        try:
            current = self.client.bucket(bucket).get_blob(name)
        except NotFound:
            current = None
        versions = sorted((b for b in self.client.list_blobs(bucket, prefix=name, versions="true") if b.name == name),
                          key=lambda b: b.generation)
        found = {"gcs_live_raw": dict(current._properties) if current else None,
                 "gcs_versions_raw": [dict(b._properties) for b in versions]}
        if self.services.gcs_proxy is not None and (case.fault.cut or not cast(GcpFault, case.fault).versioned):
            found["write_log"] = [e for e in self.services.gcs_proxy.write_log()
                                  if e.get("object") == name and e.get("method") != "GET"]
        return found

    def observe(self, case: Case) -> dict[str, Any]:
        """The published cell's observation keys: identifiers, the decision, and every artifact."""
        from experiments.deciders import SCRIPTED_MODEL

        artifacts = self._ground_truth(case)
        artifacts.update(harness.collect_artifacts(case.directory))
        artifacts.setdefault("log.jsonl", [])
        artifacts.setdefault("journal.jsonl", [])
        artifacts["worker_decide.out"] = cast(harness.WorkerRun, case.first).output
        artifacts["worker_restart.out"] = cast(harness.WorkerRun, case.restart).output
        decision = artifacts[DECISION_FILE]
        fault = cast(GcpFault, case.fault)
        return {
            "record": RECORDS.get(case.system),
            "ids": case.ids,
            "emulated": (None if self.args.live
                         else f"object store: fake-gcs-server stand-in; decider: {SCRIPTED_MODEL}"),
            "decision": {key: decision[key] for key in ("model", "to_version", "reason")},
            "artifacts": artifacts,
            "ground_truth_source": "versions" if fault.versioned else "write_log",
            "crash_point": fault.kill_at,
            "human_redeploy": fault.redeploy,
            "object_versioning": fault.versioned,
            "connection_cut_after_commit": fault.cut,
            **({"claim": self.claim_settings()[case.system]} if case.system in CLAIMS else {}),
        }

    def finish(self, cells: list[dict[str, Any]]) -> dict[str, Any]:
        """Which service ran and which sandbox buckets were made and deleted."""
        service = ("Google Cloud Storage JSON API" if self.args.live
                   else "fake-gcs-server (stand-in for the Google Cloud Storage JSON API)")
        return {"project": self.client.project, "service": f"{service} (object versioning on; off in the "
                                                           "*_versioning_off rows)",
                "bucket_deleted": self.buckets.get(True) or self.buckets.get(False),
                "buckets_deleted": sorted(self.buckets.values())}

    def claim_settings(self) -> dict[str, Any]:
        """The chosen gated systems' claims."""
        from experiments import journals

        return {s: journals.claim_settings(self.args.journal, CLAIMS[s]) for s in self.args.systems if s in CLAIMS}

    def extra_services(self) -> dict[str, Any]:
        """The incident that authorizes the rollback, and the baselines' queue, are local files."""
        return {"incident": {"real": False, "name": f"incident tracker: a local {INCIDENT_FILE} holding {INCIDENT_ID}'s "
                                                    "status (open or resolved), read by the workers and rewritten by "
                                                    "the harness to resolve it; there is no real incident service",
                             "version": None},
                "queue": {"real": False, "name": "local job.json file (at-least-once redelivery to the restart "
                                                 "worker), for the baselines", "version": None}}
