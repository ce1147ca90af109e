"""The offline object store, driven only through the real google-cloud-storage client."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from google.api_core.exceptions import PreconditionFailed

from experiments.clients import storage_client
from experiments.services.fake_gcs import fake_gcs

ROOT = Path(__file__).resolve().parents[1]


def _upload(bucket, name: str, body: str, writer: str, **precondition):
    blob = bucket.blob(name)
    blob.metadata = {"writer": writer}
    blob.upload_from_string(body, content_type="application/json", **precondition)
    return blob


def _versions(client, bucket, name: str) -> list:
    """Every generation of one object, oldest first (the stand-in lists them in no fixed order)."""
    return sorted(client.list_blobs(bucket.name, prefix=name, versions="true"), key=lambda blob: blob.generation)


def test_server_stops_with_its_block_and_keeps_its_log():
    with pytest.raises(KeyboardInterrupt), fake_gcs() as server:
        pid, log_path = server.pid, server.log_path
        assert server.endpoint.startswith("http://127.0.0.1:")
        raise KeyboardInterrupt
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert log_path.exists()


def test_server_runs_in_its_own_session_so_a_terminal_ctrl_c_leaves_it_to_the_cleanup(fake_gcs_server):
    assert os.getsid(fake_gcs_server.pid) == fake_gcs_server.pid != os.getsid(0)


def test_versioned_bucket_keeps_every_generation_with_metadata_and_time_created(gcs_client, versioned_bucket):
    first = _upload(versioned_bucket, "config/app.json", '{"version": "v42"}', "human-deploy", if_generation_match=0)
    second = _upload(versioned_bucket, "config/app.json", '{"version": "v41"}', "agent",
                     if_generation_match=first.generation)

    versions = _versions(gcs_client, versioned_bucket, "config/app.json")

    assert gcs_client.get_bucket(versioned_bucket.name).versioning_enabled is True
    assert [(v.generation, v.metadata["writer"]) for v in versions] == [
        (first.generation, "human-deploy"), (second.generation, "agent")]
    assert all(v.time_created is not None for v in versions)
    assert versions[0].time_deleted is not None and versions[1].time_deleted is None
    assert versioned_bucket.get_blob("config/app.json").generation == second.generation


def test_unversioned_bucket_keeps_only_the_live_generation(gcs_client, unversioned_bucket):
    _upload(unversioned_bucket, "config/app.json", '{"version": "v42"}', "human-deploy")
    live = _upload(unversioned_bucket, "config/app.json", '{"version": "v43"}', "human-redeploy")

    versions = _versions(gcs_client, unversioned_bucket, "config/app.json")

    assert [(v.generation, v.metadata) for v in versions] == [(live.generation, {"writer": "human-redeploy"})]


def test_listing_versions_needs_the_string_true(gcs_client, versioned_bucket):
    _upload(versioned_bucket, "o", "1", "human-deploy")
    _upload(versioned_bucket, "o", "2", "agent")

    assert len(list(gcs_client.list_blobs(versioned_bucket.name, versions=True))) == 1
    assert len(list(gcs_client.list_blobs(versioned_bucket.name, versions="true"))) == 2


def test_upload_at_the_read_generation_succeeds_and_a_stale_one_answers_412(versioned_bucket):
    seed = _upload(versioned_bucket, "o", "1", "human-deploy")
    moved = _upload(versioned_bucket, "o", "2", "human-redeploy", if_generation_match=seed.generation)

    with pytest.raises(PreconditionFailed):
        _upload(versioned_bucket, "o", "3", "agent", if_generation_match=seed.generation)

    assert moved.generation > seed.generation
    assert versioned_bucket.get_blob("o").metadata == {"writer": "human-redeploy"}


def test_generation_zero_only_creates(versioned_bucket):
    created = _upload(versioned_bucket, "o", "1", "human-deploy", if_generation_match=0)

    with pytest.raises(PreconditionFailed):
        _upload(versioned_bucket, "o", "2", "agent", if_generation_match=0)

    assert versioned_bucket.get_blob("o").generation == created.generation


def test_deleting_a_noncurrent_generation_by_number_deletes_the_live_object_instead(gcs_client, versioned_bucket):
    old = _upload(versioned_bucket, "o", "1", "human-deploy")
    _upload(versioned_bucket, "o", "2", "agent")

    versioned_bucket.blob("o", generation=old.generation).delete()

    assert versioned_bucket.get_blob("o") is None
    assert len(_versions(gcs_client, versioned_bucket, "o")) == 2


def test_deleting_a_non_empty_bucket_answers_412(gcs_client, unversioned_bucket):
    _upload(unversioned_bucket, "o", "1", "human-deploy")

    with pytest.raises(PreconditionFailed):
        unversioned_bucket.delete()

    unversioned_bucket.delete(force=True)
    assert gcs_client.lookup_bucket(unversioned_bucket.name) is None


_RACER = textwrap.dedent("""
    import sys
    from google.api_core.exceptions import PreconditionFailed
    from experiments.clients import storage_client
    blob = storage_client().bucket(sys.argv[1]).blob(sys.argv[2])
    blob.metadata = {"writer": "agent", "racer": sys.argv[4]}
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        blob.upload_from_string(sys.argv[4], if_generation_match=int(sys.argv[3]), retry=None)
    except PreconditionFailed:
        print("412", flush=True)
    else:
        print("won", blob.generation, flush=True)
""")


def test_racing_processes_at_one_generation_leave_exactly_one_winner(gcs_client, versioned_bucket):
    seed = _upload(versioned_bucket, "race.json", "seed", "human-deploy")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    racers = [
        subprocess.Popen([sys.executable, "-c", _RACER, versioned_bucket.name, "race.json", str(seed.generation), str(i)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        for i in range(5)
    ]
    for racer in racers:
        assert racer.stdout.readline().strip() == "ready"
    for racer in racers:
        racer.stdin.write("go\n")
        racer.stdin.flush()
    answers = [racer.communicate(timeout=60)[0].split() for racer in racers]

    winners = [answer for answer in answers if answer[0] == "won"]
    assert len(winners) == 1, answers
    assert sum(answer == ["412"] for answer in answers) == len(racers) - 1
    versions = _versions(gcs_client, versioned_bucket, "race.json")
    assert [v.generation for v in versions] == [seed.generation, int(winners[0][1])]
    assert versions[-1].metadata["writer"] == "agent"


def test_uploads_above_8_mib_go_resumable_and_ignore_if_generation_match(versioned_bucket):
    seed = _upload(versioned_bucket, "o", "1", "human-deploy")
    _upload(versioned_bucket, "o", "2", "human-redeploy")
    large = b"x" * (8 * 1024 * 1024 + 1)

    versioned_bucket.blob("o").upload_from_string(large, if_generation_match=seed.generation, retry=None)

    assert versioned_bucket.get_blob("o").size == len(large)
