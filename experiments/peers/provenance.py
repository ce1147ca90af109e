"""What a result file says about the peers: library and backend versions, how each is configured, and the
documentation sections that configuration follows. Read without importing either library."""

from __future__ import annotations

import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from experiments.peers.job import DBOS_STEP, POWERTOOLS_IDEMPOTENT

DBOS_DOCS = [
    {"section": "Python tutorials: Idempotency (SetWorkflowID)",
     "url": "https://docs.dbos.dev/python/tutorials/idempotency-tutorial"},
    {"section": "Python tutorials: Steps (a step per call to an external service; retries off unless configured)",
     "url": "https://docs.dbos.dev/python/tutorials/step-tutorial"},
    {"section": "Python tutorials: Database connection (SQLite by default, Postgres for production)",
     "url": "https://docs.dbos.dev/python/tutorials/database-connection"},
    {"section": "Self-hosting: recovery of PENDING workflows on restart, per executor id",
     "url": "https://docs.dbos.dev/self-hosting"},
    {"section": "Production: workflow recovery (executor_id in the DBOS config; a restart recovers its own PENDING "
                "workflows)",
     "url": "https://docs.dbos.dev/production/self-hosting/workflow-recovery"},
    {"section": "Explanations: concurrent executions (steps at least once, workflow outcomes exactly once)",
     "url": "https://docs.dbos.dev/explanations/concurrent-executions"},
    {"section": "Python reference: Configuration (system_database_url, executor_id, serializer)",
     "url": "https://docs.dbos.dev/python/reference/configuration"},
]
POWERTOOLS_DOCS = [
    {"section": "Idempotency: idempotent_function decorator, Lambda timeouts (register_lambda_context)",
     "url": "https://docs.aws.amazon.com/powertools/python/latest/utilities/idempotency/"},
    {"section": "Idempotency: payload validation (payload_validation_jmespath), expiring records "
                "(expires_after_seconds)",
     "url": "https://docs.aws.amazon.com/powertools/python/latest/utilities/idempotency/"},
    {"section": "API: RedisCachePersistenceLayer",
     "url": "https://docs.aws.amazon.com/powertools/python/latest/api/utilities/idempotency/persistence/redis.html"},
]


def peers_provenance() -> dict[str, Any]:
    """The peers' half of a result file's provenance."""
    return {
        DBOS_STEP: {
            "library": {"dbos": _version("dbos"), "sqlalchemy": _version("sqlalchemy")},
            "configuration": "the scenario's write as one @DBOS.step in a @DBOS.workflow; workflow id = the job id "
                             "(SetWorkflowID); step retries off (the default); system database SQLite in the cell, "
                             "or the run's PostgreSQL journal database; one executor id per cell; the restart is a "
                             "new process whose DBOS.launch() recovers the PENDING workflow; portable JSON "
                             "serializer so the saved rows read without DBOS",
            "record": "workflow_status, workflow_input, workflow_output and operation_outputs rows of the job, as "
                      "each worker found and left them and as the harness read them after the last worker exited",
            "docs": DBOS_DOCS,
        },
        POWERTOOLS_IDEMPOTENT: {
            "library": {"aws-lambda-powertools": _version("aws-lambda-powertools"), "redis": _version("redis")},
            "backend": {"redis-server": redis_server_version()},
            "configuration": "the scenario's write as an @idempotent_function called from a Lambda handler; "
                             "event_key_jmespath job_id, payload_validation_jmespath request, "
                             "raise_on_no_idempotency_key, expires_after_seconds 3600 (default), "
                             "register_lambda_context with a stand-in context of the Lambda default 3 s timeout; "
                             "RedisCachePersistenceLayer on a local redis-server without persistence; a restart "
                             "that finds the record INPROGRESS invokes once more after its in-progress expiry",
            "stand_ins": "no Lambda runtime: the context object is a stand-in with the runtime's fields",
            "record": "the job's idempotency record in Redis (stored JSON, TTL, orphan lock), as each worker found "
                      "and left it and as the harness read it after the last worker exited",
            "docs": POWERTOOLS_DOCS,
        },
        "temporal": {"measured": False,
                     "why": "its test server is a separate binary downloaded when a test starts, and the "
                            "project's runs fetch nothing beyond the package registries"},
    }


def _version(package: str) -> str | None:
    try:
        return version(package)
    except PackageNotFoundError:
        return None


def redis_server_version() -> str | None:
    """The installed redis-server's version, as `redis-server --version` prints it."""
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    done = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    words = [w for w in done.stdout.split() if w.startswith("v=")]
    return words[0][2:] if words else done.stdout.strip() or None
