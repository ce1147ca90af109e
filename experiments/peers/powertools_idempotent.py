"""Powertools for AWS Lambda idempotency as a peer: the job's write as an `@idempotent_function` on a Redis store.

Configured as the Powertools idempotency documentation describes: the idempotency key is the job id
(`event_key_jmespath`), payload validation is on over the whole request (`payload_validation_jmespath`), a missing
key is an error, records expire after the documented default of one hour (`expires_after_seconds`), the Lambda
context is registered before the call (`register_lambda_context`, "Lambda timeouts") so an INPROGRESS record
expires when the invocation that wrote it would have timed out, and the persistence layer is
`RedisCachePersistenceLayer` on a real redis-server ("Redis as persistence layer").

Here no Lambda runtime runs: `LambdaContext` is a stand-in for the context object the runtime passes a handler,
with the Lambda default timeout of 3 s. The worker calls `handler(event, context)` as the runtime would. A restarted
worker is the invocation that retries the job: when Powertools answers that an earlier invocation is still in
progress, it is invoked once more after that record's in-progress expiry (Lambda's own retry of an asynchronous
invocation comes a minute or more later; waiting only until the expiry changes nothing the retry sees).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import redis
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (IdempotencyAlreadyInProgressError,
                                                                    IdempotencyValidationError)
from aws_lambda_powertools.utilities.idempotency.persistence.redis import RedisCachePersistenceLayer

from experiments.peers.job import IN_PROGRESS, POWERTOOLS_IDEMPOTENT, VALIDATION_ERROR, PeerJob, Send

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency.hook import IdempotentHookFunction
    from aws_lambda_powertools.utilities.idempotency.persistence.redis import RedisClientProtocol
    from aws_lambda_powertools.utilities.typing import LambdaContext as RuntimeContext

FUNCTION_NAME = "interlock-peer-job"
KEY_PREFIX = f"{FUNCTION_NAME}.send_write"
LAMBDA_TIMEOUT_SECONDS = 3.0
RETRY_DEADLINE_SECONDS = 30.0


class LambdaContext:
    """A stand-in for the Lambda runtime's context: the fields Powertools reads, and the invocation's deadline."""

    function_name = FUNCTION_NAME
    function_version = "$LATEST"
    memory_limit_in_mb = 128
    invoked_function_arn = f"arn:aws:lambda:local:000000000000:function:{FUNCTION_NAME}"

    def __init__(self, timeout: float = LAMBDA_TIMEOUT_SECONDS):
        self.aws_request_id = str(uuid.uuid4())
        self._deadline = time.time() + timeout

    def get_remaining_time_in_millis(self) -> int:
        """What is left of the invocation's timeout, as the runtime reports it."""
        return max(0, int((self._deadline - time.time()) * 1000))


def store(redis_url: str) -> RedisCachePersistenceLayer:
    """The Redis persistence layer on the run's redis-server, with a client as the documentation builds one."""
    return RedisCachePersistenceLayer(
        client=cast("RedisClientProtocol", redis.Redis.from_url(redis_url, decode_responses=True)))


def config() -> IdempotencyConfig:
    """The idempotency settings above; a fresh object per handler, since registering a context mutates it."""
    return IdempotencyConfig(event_key_jmespath="job_id", payload_validation_jmespath="request",
                             raise_on_no_idempotency_key=True,
                             response_hook=cast("IdempotentHookFunction", _replayed))


def _replayed(response: dict[str, Any], record: Any) -> dict[str, Any]:
    """Powertools calls this when it answers from a COMPLETED record instead of running the function."""
    return {**response, "replayed": True}


def handler_for(send: Send, persistence: RedisCachePersistenceLayer,
                settings: IdempotencyConfig) -> Callable[[dict[str, Any], LambdaContext], dict[str, Any]]:
    """The Lambda handler: register the context, then call the idempotent write with the event as its data.

    The event is `{"job_id": ..., "request": ...}`: the key is the job id, the validated payload the request.
    """
    os.environ["AWS_LAMBDA_FUNCTION_NAME"] = FUNCTION_NAME  # what the runtime sets; part of the idempotency key

    @cast("Callable[[Callable[[dict[str, Any]], dict[str, Any]]], Callable[..., dict[str, Any]]]",
          idempotent_function(data_keyword_argument="event", persistence_store=persistence, config=settings,
                              key_prefix=KEY_PREFIX))
    def send_write(event: dict[str, Any]) -> dict[str, Any]:
        outcome, ids = send(event["request"])
        return {"outcome": outcome, "ids": ids}

    def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
        settings.register_lambda_context(cast("RuntimeContext", context))  # the stand-in has the fields it reads
        return send_write(event=event)

    return handler


def run(phase: str, job: PeerJob, redis_url: str) -> tuple[str, dict[str, Any]]:
    """Invoke the handler with the job's event; a restart invokes again once an in-progress record expired."""
    persistence = store(redis_url)
    handler = handler_for(job.send, persistence, config())
    event = {"job_id": job.job_id, "request": job.request}
    outcome, ids = _invoke(handler, event)
    invocations = [{"at": time.time(), "outcome": outcome}]
    if outcome == IN_PROGRESS and phase == "restart" and _wait_for_in_progress_expiry(persistence, event):
        outcome, ids = _invoke(handler, event)
        invocations.append({"at": time.time(), "outcome": outcome})
    return outcome, {**ids, "idempotency_key_job": job.job_id, "invocations": invocations}


def _invoke(handler: Callable[..., dict[str, Any]], event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    try:
        result = handler(event, LambdaContext())
    except IdempotencyAlreadyInProgressError as exc:
        return IN_PROGRESS, {"error": f"{type(exc).__name__}: {exc}"}
    except IdempotencyValidationError as exc:
        return VALIDATION_ERROR, {"error": f"{type(exc).__name__}: {exc}"}
    return result["outcome"], {**result["ids"], "replayed": bool(result.get("replayed"))}


def _wait_for_in_progress_expiry(persistence: RedisCachePersistenceLayer, event: dict[str, Any]) -> bool:
    """Until the INPROGRESS record's own expiry passes (or it is gone); False when the record sets none."""
    deadline = time.monotonic() + RETRY_DEADLINE_SECONDS
    while time.monotonic() < deadline:
        value = _stored(persistence, event)
        if value is None or value.get("status") != "INPROGRESS":
            return True
        expiry = value.get("in_progress_expiration")
        if expiry is None:
            return False
        if time.time() * 1000 > expiry:
            return True
        time.sleep(min(0.05, max(0.0, expiry / 1000 - time.time())))
    return False


def _key(persistence: RedisCachePersistenceLayer, event: dict[str, Any]) -> str:
    """The store's own key derivation (its get_record would also validate the payload, which fails on a COMPLETED
    record: the Redis layer drops the validation hash when it marks a record COMPLETED)."""
    return cast(str, persistence._get_hashed_idempotency_key(event))  # None only without a key, which raises here


def _stored(persistence: RedisCachePersistenceLayer, event: dict[str, Any]) -> dict[str, Any] | None:
    raw = persistence.client.get(_key(persistence, event))
    return json.loads(raw) if raw is not None else None


def record(job_id: str, redis_url: str) -> dict[str, Any]:
    """The job's idempotency record as Redis holds it: the stored JSON, its time to live, and any orphan lock."""
    os.environ["AWS_LAMBDA_FUNCTION_NAME"] = FUNCTION_NAME
    persistence = store(redis_url)
    persistence.configure(config(), key_prefix=KEY_PREFIX)
    event = {"job_id": job_id}  # the key is derived from the job id alone (event_key_jmespath)
    key = _key(persistence, event)
    return {"peer": POWERTOOLS_IDEMPOTENT, "store": "redis", "idempotency_key": key, "job_id": job_id,
            "value": _stored(persistence, event), "ttl_seconds": cast(redis.Redis, persistence.client).ttl(key),
            "lock": persistence.client.get(f"{key}:lock"), "read_at": time.time()}
