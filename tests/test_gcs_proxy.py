"""The recording proxy: its write log and its connection cut, seen through the real google-cloud-storage client."""

from __future__ import annotations

import http.client
import urllib.request

import pytest
import requests
from google.api_core.exceptions import PreconditionFailed

from experiments.services import recording_proxy
from experiments.services._serving import free_port


def _agent_upload(entry: dict) -> bool:
    return entry["method"] == "POST" and (entry["metadata"] or {}).get("writer") == "agent"


def _upload(bucket, writer: str, body: str, **options):
    blob = bucket.blob("config/app.json")
    blob.metadata = {"writer": writer}
    blob.upload_from_string(body, content_type="application/json", **options)
    return blob


def test_write_log_holds_each_upload_with_its_generation_and_metadata(recorded_bucket, gcs_proxy):
    seed = _upload(recorded_bucket, "human-deploy", '{"version": "v42"}', if_generation_match=0)
    rollback = _upload(recorded_bucket, "agent", '{"version": "v41"}', if_generation_match=seed.generation)

    uploads = [e for e in gcs_proxy.write_log() if e["path"].startswith("/upload/")]

    assert [(e["object"], e["generation"], e["metadata"], e["status"], e["cut"]) for e in uploads] == [
        ("config/app.json", str(seed.generation), {"writer": "human-deploy"}, 200, False),
        ("config/app.json", str(rollback.generation), {"writer": "agent"}, 200, False),
    ]
    assert uploads[1]["query"]["ifGenerationMatch"] == str(seed.generation)
    seqs = [e["seq"] for e in gcs_proxy.write_log()]
    assert seqs == list(range(1, len(seqs) + 1))


def test_write_log_records_a_refused_upload_without_a_generation(recorded_bucket, gcs_proxy):
    seed = _upload(recorded_bucket, "human-deploy", "1")
    _upload(recorded_bucket, "human-redeploy", "2")

    with pytest.raises(PreconditionFailed):
        _upload(recorded_bucket, "agent", "3", if_generation_match=seed.generation, retry=None)

    last = gcs_proxy.write_log()[-1]
    assert (last["status"], last["generation"], last["cut"]) == (412, None, False)


def test_a_refused_multipart_upload_is_logged_under_its_object_name(recorded_bucket, gcs_proxy):
    seed = _upload(recorded_bucket, "human-deploy", "1")
    _upload(recorded_bucket, "human-redeploy", "2")

    with pytest.raises(PreconditionFailed):
        _upload(recorded_bucket, "agent", "3", if_generation_match=seed.generation, retry=None)

    last = gcs_proxy.write_log()[-1]
    assert (last["query"]["uploadType"], last["status"], last["object"]) == ("multipart", 412, "config/app.json")


def test_a_failed_exchange_goes_to_the_error_log_not_stderr(tmp_path, capfd):
    gone = f"http://127.0.0.1:{free_port()}"

    with recording_proxy(gone, tmp_path / "gcs-wire.jsonl") as proxy:
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):
            urllib.request.urlopen(f"{proxy.endpoint}/storage/v1/b/any/o", timeout=10)

    assert "ConnectionRefusedError" in (tmp_path / "gcs-wire.errors.log").read_text()
    assert capfd.readouterr().err == ""


def test_cut_upload_raises_a_connection_error_while_the_write_is_committed(recorded_bucket, gcs_proxy):
    seed = _upload(recorded_bucket, "human-deploy", "1")
    gcs_proxy.cut_next(_agent_upload)

    with pytest.raises(requests.exceptions.ConnectionError):
        _upload(recorded_bucket, "agent", "2", if_generation_match=seed.generation, retry=None)

    cut = [e for e in gcs_proxy.write_log() if e["cut"]]
    assert len(cut) == 1 and cut[0]["metadata"] == {"writer": "agent"}
    live = recorded_bucket.get_blob("config/app.json")
    assert (str(live.generation), live.metadata) == (cut[0]["generation"], {"writer": "agent"})


def test_default_retry_resends_a_cut_conditional_upload_into_its_own_412(recorded_bucket, gcs_proxy):
    seed = _upload(recorded_bucket, "human-deploy", "1")
    gcs_proxy.cut_next(_agent_upload)

    with pytest.raises(PreconditionFailed):
        _upload(recorded_bucket, "agent", "2", if_generation_match=seed.generation)

    uploads = [e for e in gcs_proxy.write_log() if e["method"] == "POST" and e["path"].startswith("/upload/")]
    assert [(e["status"], e["cut"]) for e in uploads[-2:]] == [(200, True), (412, False)]
    assert recorded_bucket.get_blob("config/app.json").metadata == {"writer": "agent"}


def test_a_cut_fires_once(recorded_bucket, gcs_proxy):
    gcs_proxy.cut_next(_agent_upload)
    with pytest.raises(requests.exceptions.ConnectionError):
        _upload(recorded_bucket, "agent", "1", retry=None)

    _upload(recorded_bucket, "agent", "2", retry=None)

    assert [e["cut"] for e in gcs_proxy.write_log() if e["path"].startswith("/upload/")] == [True, False]
