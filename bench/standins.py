"""Per-request latency of the offline stand-ins through the real clients, so experiment timings can be read.

The services are the ones offline experiments get (experiments.live.services(False)): GCS requests go through
the recording proxy in front of fake-gcs-server, Calendar requests to the stand-in served in this process.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from experiments import clients
from experiments.live import services

from ._scratch import scratch

REQUESTS = 100
WARMUP = 5


def _median_ms(call: Callable[[int], object]) -> float:
    for i in range(WARMUP):
        call(-1 - i)
    samples = []
    for i in range(REQUESTS):
        started = time.perf_counter()
        call(i)
        samples.append(time.perf_counter() - started)
    return round(statistics.median(samples) * 1000, 2)


def _gcs() -> dict[str, float]:
    bucket = clients.storage_client().bucket("bench")
    bucket.versioning_enabled = True
    bucket = clients.storage_client().create_bucket(bucket)
    client = clients.storage_client()
    live = {"generation": 0}

    def upload(i: int) -> None:
        blob = bucket.blob("config/app.json")
        blob.metadata = {"writer": "agent"}
        blob.upload_from_string(f'{{"version": "v{i}"}}', content_type="application/json",
                                if_generation_match=live["generation"], retry=None)
        live["generation"] = blob.generation

    upload_ms = _median_ms(upload)
    list_ms = _median_ms(lambda i: list(client.list_blobs("bench", prefix="config/app.json", versions="true")))
    return {"gcs_upload_ms": upload_ms, "gcs_list_versions_ms": list_ms,
            "gcs_versions_listed": len(list(client.list_blobs("bench", versions="true")))}


def _calendar() -> dict[str, float]:
    api = clients.calendar_service()

    def insert(i: int) -> None:
        api.events().insert(calendarId="primary", body={
            "id": f"bkbench{i + WARMUP:06d}", "summary": "Dana - Onboarding Call",
            "start": {"dateTime": "2026-10-13T22:53:00Z"}, "end": {"dateTime": "2026-10-13T23:23:00Z"},
            "extendedProperties": {"private": {"system": "interlock", "booking_request": f"r{i % 10}"}},
        }).execute()

    insert_ms = _median_ms(insert)
    list_ms = _median_ms(lambda i: api.events().list(
        calendarId="primary", timeMin="2026-10-13T22:53:00Z", timeMax="2026-10-13T23:23:00Z",
        privateExtendedProperty=["system=interlock", "booking_request=r3"], singleEvents=True,
        orderBy="startTime").execute())
    return {"calendar_insert_ms": insert_ms, "calendar_list_events_ms": list_ms}


def run() -> dict[str, Any]:
    """Median milliseconds per request: GCS upload and version listing, Calendar insert and events.list."""
    with scratch("bench-standins-") as work_dir, services(live=False, work_dir=work_dir):
        numbers = {**_gcs(), **_calendar()}
    return {**numbers, "requests_per_measure": REQUESTS, "clients": "google-cloud-storage, google-api-python-client"}
