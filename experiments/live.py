"""One switch between the offline stand-ins (default) and the real services (`--live` or INTERLOCK_LIVE=1).

Offline, `services(False)` starts fake-gcs-server behind the recording proxy and the Calendar stand-in, and the
scripted decider decides. Live, `services(True)` starts nothing: Google Cloud Storage through application default
credentials, Google Calendar through the service-account key file named by INTERLOCK_CALENDAR_KEY_FILE, and
claude-haiku-4-5 through ANTHROPIC_API_KEY. Either way the chosen endpoints are put into this process's
environment for the block, so the harness and the worker processes it spawns build the same clients
(experiments.clients). Secrets stay where the user put them: the environment overlay and the provenance name
endpoints, files' variables and credential kinds, never a credential value.

Each scenario names the roles it uses (object_store, calendar, model); live mode asks only for their credentials,
and offline only their stand-ins start.

`python -m experiments.live [--live]` checks the credentials and prints the provenance of the chosen services.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from experiments import clients
from experiments.deciders import DEFAULT_MODEL, MODEL_ENV, SCRIPTED_MODEL
from experiments.services.calendar_standin import NAME as CALENDAR_STANDIN
from experiments.services.calendar_standin import CalendarStandin, calendar_standin
from experiments.services.fake_gcs import WRAPPER, fake_gcs, server_version, wrapper_version
from experiments.services.gcs_proxy import RecordingProxy, recording_proxy

LIVE_ENV = "INTERLOCK_LIVE"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
ADC_ENV = "GOOGLE_APPLICATION_CREDENTIALS"
OBJECT_STORE, CALENDAR, MODEL = "object_store", "calendar", "model"
ROLES = (OBJECT_STORE, CALENDAR, MODEL)
ROLE_VARIABLES = (clients.STORAGE_EMULATOR_HOST, clients.CALENDAR_URL, clients.MESSAGES_URL, MODEL_ENV)
"""Variables `services()` owns: set or removed for the block, so a stray value cannot pick the wrong service."""


@dataclass
class Services:
    """The chosen services: the environment workers need, what result files embed, and the stand-ins' handles.

    `env` is already applied to os.environ for the block, so worker subprocesses inherit it.
    """

    live: bool
    env: dict[str, str]
    provenance: dict
    work_dir: Path
    gcs_proxy: RecordingProxy | None = None
    calendar: CalendarStandin | None = None


def live_requested(flag: bool = False) -> bool:
    """Live when the `--live` flag was given or INTERLOCK_LIVE=1 is set."""
    return flag or os.environ.get(LIVE_ENV) == "1"


def add_live_flag(parser: argparse.ArgumentParser) -> None:
    """The one `--live` flag every runner takes."""
    parser.add_argument("--live", action="store_true",
                        help=f"use the real Google services and model (or set {LIVE_ENV}=1); default: local stand-ins")


def missing_credentials(roles: Iterable[str] = ROLES) -> list[str]:
    """What live mode lacks for these roles, one phrase per credential, without reading any secret's value."""
    roles = _known_roles(roles)
    missing = []
    if OBJECT_STORE in roles and not _adc_path().is_file():
        missing.append(f"Google application default credentials (set {ADC_ENV} or run "
                       "`gcloud auth application-default login`)")
    key_file = os.environ.get(clients.CALENDAR_KEY_FILE)
    if CALENDAR in roles:
        if not key_file:
            missing.append(f"{clients.CALENDAR_KEY_FILE} (path of the Calendar service-account key file)")
        elif not Path(key_file).is_file():
            missing.append(f"{clients.CALENDAR_KEY_FILE} names {key_file}, which is not a file")
    if MODEL in roles and not os.environ.get(ANTHROPIC_KEY_ENV):
        missing.append(f"{ANTHROPIC_KEY_ENV} (Anthropic API key)")
    return missing


def check_credentials(live: bool, roles: Iterable[str] = ROLES) -> None:
    """Exit 2 with one line on stderr before anything is written when live mode lacks a credential a role needs."""
    if not live:
        return
    missing = missing_credentials(roles)
    if missing:
        print(f"interlock: --live needs {'; '.join(missing)}", file=sys.stderr)
        raise SystemExit(2)


@contextlib.contextmanager
def services(live: bool, work_dir: Path | None = None, roles: Iterable[str] = ROLES) -> Iterator[Services]:
    """Start what the chosen mode needs for these roles, expose it through the environment for the block, and stop
    it after; a work directory made here (none given) is removed with everything in it."""
    roles = _known_roles(roles)
    check_credentials(live, roles)
    with contextlib.ExitStack() as stack:
        if work_dir is None:
            work_dir = Path(tempfile.mkdtemp(prefix="interlock-services-"))
            stack.callback(shutil.rmtree, work_dir, ignore_errors=True)  # runs last, after the stand-ins stopped
        work_dir = Path(work_dir)
        work_dir.mkdir(parents=True, exist_ok=True)
        if live:
            provenance = {role: facts for role, facts in live_provenance().items() if role in roles}
            chosen = Services(live, {MODEL_ENV: DEFAULT_MODEL} if MODEL in roles else {}, provenance, work_dir)
        else:
            provenance = {role: facts for role, facts in offline_provenance().items() if role in roles}
            chosen = Services(live, {}, provenance, work_dir)
            if OBJECT_STORE in roles:
                store = stack.enter_context(fake_gcs(work_dir / "fake-gcs-server.log"))
                chosen.gcs_proxy = stack.enter_context(recording_proxy(store.endpoint, work_dir / "gcs-wire.jsonl"))
                chosen.env[clients.STORAGE_EMULATOR_HOST] = chosen.gcs_proxy.endpoint
            if CALENDAR in roles:
                chosen.calendar = stack.enter_context(calendar_standin(work_dir / "calendar-writes.jsonl"))
                chosen.env[clients.CALENDAR_URL] = chosen.calendar.endpoint
        stack.enter_context(_environment(chosen.env))
        yield chosen


def _known_roles(roles: Iterable[str]) -> frozenset[str]:
    chosen = frozenset(roles)
    unknown = chosen - set(ROLES)
    if unknown:
        raise ValueError(f"unknown service role(s) {', '.join(sorted(unknown))}; known: {', '.join(ROLES)}")
    return chosen


def offline_provenance() -> dict[str, Any]:
    """Which stand-ins run, and which versions, labelled as stand-ins."""
    return {
        "object_store": {"real": False, "name": "fake-gcs-server (stand-in for Google Cloud Storage)",
                         "version": f"{server_version()} ({WRAPPER} {wrapper_version()})",
                         "client": f"google-cloud-storage {version('google-cloud-storage')}",
                         "credentials": "anonymous (stand-in)"},
        "calendar": {"real": False, "name": CALENDAR_STANDIN,
                     "version": f"interlock {_interlock_version()}",
                     "client": f"google-api-python-client {version('google-api-python-client')}",
                     "credentials": "anonymous (stand-in)"},
        "model": {"real": False, "name": f"{SCRIPTED_MODEL} (scripted decider, no model)", "version": SCRIPTED_MODEL,
                  "client": None, "credentials": None},
    }


def live_provenance() -> dict[str, Any]:
    """Which real services are used, naming the credential kinds and never their values."""
    return {
        "object_store": {"real": True, "name": "Google Cloud Storage JSON API", "version": "v1",
                         "client": f"google-cloud-storage {version('google-cloud-storage')}",
                         "credentials": "application default credentials"},
        "calendar": {"real": True, "name": "Google Calendar API", "version": "v3",
                     "client": f"google-api-python-client {version('google-api-python-client')}",
                     "credentials": f"service-account key file named by {clients.CALENDAR_KEY_FILE}"},
        "model": {"real": True, "name": "Anthropic Messages API", "version": DEFAULT_MODEL,
                  "client": f"anthropic {version('anthropic')}", "credentials": ANTHROPIC_KEY_ENV},
    }


_STANDIN_CLEANUP_SECONDS = 5.0


def sandbox_bucket_name() -> str:
    """interlock-sandbox-<10 hex>: the only bucket names the experiments create and delete."""
    return f"interlock-sandbox-{secrets.token_hex(5)}"


@contextlib.contextmanager
def sandbox_bucket(client: Any, versioned: bool = True) -> Iterator[Any]:
    """A fresh sandbox bucket for one run, deleted with every generation afterwards.

    On the stand-in each cleanup call gets one try and a short timeout: a stand-in that is gone took its in-memory
    buckets with it, and the client's default retries would only wait minutes on it. Cloud Storage gets the
    client's default retries, and a bucket it fails to delete is reported by the exception.
    """
    from google.api_core.exceptions import NotFound
    from requests.exceptions import ConnectionError as Unreachable
    from requests.exceptions import Timeout

    bucket = client.bucket(sandbox_bucket_name())
    bucket.versioning_enabled = versioned
    bucket = client.create_bucket(bucket)
    standin = bool(os.environ.get(clients.STORAGE_EMULATOR_HOST))
    bounded = {"retry": None, "timeout": _STANDIN_CLEANUP_SECONDS} if standin else {}
    try:
        yield bucket
    finally:
        with contextlib.suppress(Unreachable, Timeout) if standin else contextlib.nullcontext():
            for blob in client.list_blobs(bucket.name, versions="true", **bounded):
                with contextlib.suppress(NotFound):  # fake-gcs-server drops noncurrent generations with the live one
                    bucket.delete_blob(blob.name, generation=blob.generation, **bounded)
            bucket.delete(**bounded)


@contextlib.contextmanager
def _environment(overlay: dict[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in ROLE_VARIABLES + tuple(overlay)}
    for name in ROLE_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(overlay)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _adc_path() -> Path:
    if os.environ.get(ADC_ENV):
        return Path(os.environ[ADC_ENV])
    config = os.environ.get("CLOUDSDK_CONFIG") or str(Path.home() / ".config" / "gcloud")
    return Path(config) / "application_default_credentials.json"


def _interlock_version() -> str:
    try:
        return version("interlock")
    except PackageNotFoundError:
        return "source tree (not installed)"


def main(argv: list[str] | None = None) -> int:
    """Check the chosen mode's credentials and print the provenance its result files would embed."""
    parser = argparse.ArgumentParser(prog="python -m experiments.live", description=__doc__.splitlines()[0])
    add_live_flag(parser)
    live = live_requested(parser.parse_args(argv).live)
    check_credentials(live)
    print(json.dumps(live_provenance() if live else offline_provenance(), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
