"""Google Cloud Storage objects as a tier-2 target: no dedupe, but the version listing answers "did it land",
and every write is fenced by `ifGenerationMatch` on the generation the effect was decided on."""

from __future__ import annotations

from typing import Any

import requests
from google.api_core.exceptions import NotFound, PreconditionFailed, ServerError
from google.cloud import storage

from ..errors import ConfigurationError
from ..premises import Premise
from .base import DEDUPE, TIER_LOOKUP, Rejected, Unanswered, validate_fencing

EFFECT_ID_KEY = "interlock_effect_id"
GENERATION = "generation"  # the name of `generation_premise`, which every write preconditions on


class GcsObjectTarget:
    """Overwrite one object with `payload["body"]`, compare-and-swap on `payload["if_generation_match"]`.

    Each write carries the effect id in custom metadata, so recovery can find it in the version listing
    (needs object versioning: without it a replaced write leaves no trace). Uploads are multipart with no
    client retries: a retried conditional upload would turn "my write landed" into a 412. Every payload carries
    `if_generation_match`, so a stray write from a dead sender meets a 412 once the generation moved, whoever
    moved it: the fence covers the generation premise and a second write of the effect. It does not cover a
    lease that ended while the generation stayed: recovery then waits `in_flight` seconds after the last send.
    """

    name = "gcs-object"
    tier = TIER_LOOKUP
    can_lookup = True
    fences = frozenset({GENERATION, DEDUPE})

    def __init__(self, client: storage.Client, bucket: str, object_name: str, metadata: dict[str, str] | None = None,
                 *, in_flight: float | None = None):
        validate_fencing(self.fences, in_flight)
        self.bucket = client.bucket(bucket)
        self.object_name = object_name
        self.metadata = dict(metadata or {})
        self.in_flight = in_flight

    def apply(self, effect_id: str, payload: dict[str, Any]) -> str:
        """Upload the body; return the new generation."""
        blob = self.bucket.blob(self.object_name)
        blob.metadata = {**self.metadata, EFFECT_ID_KEY: effect_id}
        match = payload.get("if_generation_match")
        if match is None:
            raise ConfigurationError("a GCS effect's payload needs if_generation_match: it is the write's fence")
        try:
            blob.upload_from_string(payload["body"], content_type=payload.get("content_type", "application/json"),
                                    if_generation_match=int(match), retry=None)
        except PreconditionFailed as exc:
            raise Rejected(f"412 precondition failed: ifGenerationMatch={match}", precondition=True) from exc
        except (requests.ConnectionError, requests.Timeout, ServerError) as exc:
            raise Unanswered(f"{type(exc).__name__}: {exc}") from exc
        return str(blob.generation)

    def lookup(self, effect_id: str, payload: dict[str, Any]) -> str | None:
        """The generation this effect wrote, found in the version listing by its effect-id metadata.

        `versions` goes as the string "true": Cloud Storage accepts it, and fake-gcs-server ignores a boolean.
        """
        for blob in self.bucket.list_blobs(prefix=self.object_name, versions="true"):
            if blob.name == self.object_name and (blob.metadata or {}).get(EFFECT_ID_KEY) == effect_id:
                return str(blob.generation)
        return None


def generation_premise(client: storage.Client, bucket: str, object_name: str, decided: str,
                       writer_key: str = "writer") -> Premise:
    """The live generation as a premise; this effect's own write is not a change, and a change names its writer."""
    handle = client.bucket(bucket)
    seen: dict[str, dict[str, str]] = {}

    def read() -> str | None:
        try:
            blob = handle.get_blob(object_name)
        except NotFound:
            blob = None
        if blob is None:
            return None
        seen[str(blob.generation)] = blob.metadata or {}
        return str(blob.generation)

    def own_write(now: Any, was: Any, effect_id: str) -> bool:
        return seen.get(now, {}).get(EFFECT_ID_KEY) == effect_id

    def annotate(now: Any) -> str:
        writer = seen.get(now, {}).get(writer_key)
        return f" (deployed by {writer})" if writer else ""

    return Premise(GENERATION, read, decided=str(decided), own_write=own_write, annotate=annotate)
