"""Client builders shared by the harness and its worker processes, configured only by environment variables.

Worker subprocesses inherit the environment, so the harness points them at a stand-in or at the real service
by setting these variables and nothing else. They name endpoints and key-file paths, never secret values.

| variable | when set | when unset |
|---|---|---|
| `STORAGE_EMULATOR_HOST` | object store at this URL (e.g. `http://127.0.0.1:PORT`), anonymous credentials, project `interlock-offline` | Google Cloud Storage with application default credentials |
| `INTERLOCK_CALENDAR_URL` | Calendar v3 at this API root (e.g. `http://127.0.0.1:PORT/calendar/v3/`), anonymous credentials | Google Calendar with the service-account key file named by `INTERLOCK_CALENDAR_KEY_FILE` |
| `INTERLOCK_CALENDAR_KEY_FILE` | path of the service-account JSON key for live Calendar | required when `INTERLOCK_CALENDAR_URL` is unset |
| `INTERLOCK_MESSAGES_URL` | Messages API at this base URL (the local stub), with a placeholder key | api.anthropic.com with `ANTHROPIC_API_KEY` |

Each builder imports its own client library when called: a GCS worker process never loads the anthropic or
Calendar clients, which would take seconds of its start-up.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import anthropic
    from google.cloud import storage

STORAGE_EMULATOR_HOST = "STORAGE_EMULATOR_HOST"
CALENDAR_URL = "INTERLOCK_CALENDAR_URL"
CALENDAR_KEY_FILE = "INTERLOCK_CALENDAR_KEY_FILE"
MESSAGES_URL = "INTERLOCK_MESSAGES_URL"

OFFLINE_PROJECT = "interlock-offline"
CALENDAR_SCOPES = ["https://www.googleapis.com/auth/calendar"]
# The stub checks nothing; the SDK only insists on some key being configured.
STUB_API_KEY = "offline-stub-key"


def storage_client() -> storage.Client:
    """The real google-cloud-storage client, at the stand-in when STORAGE_EMULATOR_HOST says so."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage

    if os.environ.get(STORAGE_EMULATOR_HOST):
        return storage.Client(project=OFFLINE_PROJECT, credentials=AnonymousCredentials())
    return storage.Client()


def calendar_service() -> Any:
    """The real google-api-python-client Calendar v3 service, built from its shipped discovery document."""
    from google.auth.credentials import AnonymousCredentials
    from google.oauth2 import service_account
    from googleapiclient import discovery

    url = os.environ.get(CALENDAR_URL)
    if url:
        return discovery.build(
            "calendar", "v3", static_discovery=True, cache_discovery=False,
            credentials=AnonymousCredentials(), client_options={"api_endpoint": url},
        )
    key_file = os.environ[CALENDAR_KEY_FILE]
    credentials = service_account.Credentials.from_service_account_file(key_file, scopes=CALENDAR_SCOPES)
    return discovery.build("calendar", "v3", static_discovery=True, cache_discovery=False, credentials=credentials)


def anthropic_client() -> anthropic.Anthropic:
    """The real anthropic SDK client, at the local Messages stub when INTERLOCK_MESSAGES_URL says so."""
    import anthropic

    url = os.environ.get(MESSAGES_URL)
    if url:
        return anthropic.Anthropic(base_url=url, api_key=STUB_API_KEY, max_retries=0)
    return anthropic.Anthropic()
