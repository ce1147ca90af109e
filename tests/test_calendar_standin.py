"""The Calendar v3 stand-in, driven only through the real google-api-python-client."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from googleapiclient.errors import HttpError

from experiments.clients import calendar_service

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT.parent / "shared" / "reference" / "calendar.json"
DAY = "2026-10-13"


def _at(hhmm: str) -> str:
    return f"{DAY}T{hhmm}:00Z"


def _event(event_id: str | None, start: str, end: str, **fields) -> dict:
    body = {"summary": "Dana - Onboarding Call", "start": {"dateTime": _at(start), "timeZone": "UTC"},
            "end": {"dateTime": _at(end), "timeZone": "UTC"}, **fields}
    if event_id is not None:
        body["id"] = event_id
    return body


def _insert(api, body: dict) -> dict:
    return api.events().insert(calendarId="primary", body=body).execute()


def _ids(answer: dict) -> list[str]:
    return [event["id"] for event in answer["items"]]


def _error(caught: pytest.ExceptionInfo) -> dict:
    return json.loads(caught.value.content)["error"]


def test_inserted_event_carries_the_fields_of_a_real_calendar_event(calendar_api):
    private = {"system": "no_check", "booking_request": "168303c48700"}
    event = _insert(calendar_api, _event("bk1a1707f280f13bb8edd342df99", "22:53", "23:23",
                                         extendedProperties={"private": private}))

    assert event["kind"] == "calendar#event" and event["status"] == "confirmed"
    assert event["iCalUID"] == "bk1a1707f280f13bb8edd342df99@google.com" and event["sequence"] == 0
    assert event["creator"]["self"] is True and event["organizer"] == event["creator"]
    assert event["start"] == {"dateTime": _at("22:53"), "timeZone": "UTC"}
    assert event["extendedProperties"] == {"private": private}
    assert event["created"].endswith(".000Z") and event["updated"].endswith("Z")
    assert event["etag"].startswith('"') and event["reminders"] == {"useDefault": True}
    if REFERENCE.exists():
        real = json.loads(REFERENCE.read_text())["cells"][0]["ground_truth"]["events_list"][0]
        assert list(event) == list(real)


@pytest.mark.parametrize("event_id", ["abcde", "0123456789abcdefghijklmnopqrstuv", "v" * 1024])
def test_client_chosen_base32hex_ids_are_kept(calendar_api, event_id):
    assert _insert(calendar_api, _event(event_id, "10:00", "10:30"))["id"] == event_id


@pytest.mark.parametrize("event_id", ["abcd", "v" * 1025, "wxyz0", "ABCDE", "ab_cd", "ab-cd"])
def test_ids_outside_base32hex_5_to_1024_answer_400_invalid(calendar_api, event_id):
    with pytest.raises(HttpError) as caught:
        _insert(calendar_api, _event(event_id, "10:00", "10:30"))

    assert caught.value.resp.status == 400
    assert _error(caught)["errors"][0]["reason"] == "invalid"


def test_an_event_without_an_id_gets_a_base32hex_one(calendar_api):
    event_id = _insert(calendar_api, _event(None, "10:00", "10:30"))["id"]

    assert len(event_id) >= 5 and set(event_id) <= set("0123456789abcdefghijklmnopqrstuv")


def test_reinserting_an_id_answers_409_duplicate_in_googles_error_shape(calendar_api):
    _insert(calendar_api, _event("bkdup00001", "10:00", "10:30"))

    with pytest.raises(HttpError) as caught:
        _insert(calendar_api, _event("bkdup00001", "11:00", "11:30"))

    assert caught.value.resp.status == 409
    assert caught.value.reason == "The requested identifier already exists."
    assert _error(caught) == {
        "code": 409, "message": "The requested identifier already exists.", "status": "ALREADY_EXISTS",
        "errors": [{"domain": "global", "reason": "duplicate", "message": "The requested identifier already exists."}],
    }


def test_an_id_stays_taken_after_its_event_is_deleted(calendar_api):
    _insert(calendar_api, _event("bkgone0001", "10:00", "10:30"))
    calendar_api.events().delete(calendarId="primary", eventId="bkgone0001").execute()

    with pytest.raises(HttpError) as caught:
        _insert(calendar_api, _event("bkgone0001", "10:00", "10:30"))

    assert caught.value.resp.status == 409


def test_delete_answers_204_then_410_on_a_second_delete(calendar_api, calendar_server):
    _insert(calendar_api, _event("bkdel00001", "10:00", "10:30"))

    assert calendar_api.events().delete(calendarId="primary", eventId="bkdel00001").execute() == ""
    with pytest.raises(HttpError) as caught:
        calendar_api.events().delete(calendarId="primary", eventId="bkdel00001").execute()

    assert caught.value.resp.status == 410 and _error(caught)["errors"][0]["reason"] == "deleted"
    assert [e["status"] for e in calendar_server.write_log() if e["method"] == "delete"] == [204, 410]


def test_get_returns_a_deleted_event_as_cancelled(calendar_api):
    _insert(calendar_api, _event("bkcan00001", "10:00", "10:30"))
    calendar_api.events().delete(calendarId="primary", eventId="bkcan00001").execute()

    event = calendar_api.events().get(calendarId="primary", eventId="bkcan00001").execute()

    assert (event["id"], event["status"]) == ("bkcan00001", "cancelled")


def test_get_of_an_unknown_id_answers_404(calendar_api):
    with pytest.raises(HttpError) as caught:
        calendar_api.events().get(calendarId="primary", eventId="bknever001").execute()

    assert caught.value.resp.status == 404


def test_list_returns_exactly_the_events_overlapping_the_window(calendar_api):
    for event_id, start, end in [("bkbefore01", "10:00", "10:30"), ("bkinside01", "10:30", "11:00"),
                                 ("bkafter001", "11:00", "11:30"), ("bkaround01", "09:00", "12:00")]:
        _insert(calendar_api, _event(event_id, start, end))

    answer = calendar_api.events().list(calendarId="primary", timeMin=_at("10:30"), timeMax=_at("11:00")).execute()

    assert answer["kind"] == "calendar#events"
    assert sorted(_ids(answer)) == ["bkaround01", "bkinside01"]


def test_list_keeps_only_events_matching_every_private_extended_property(calendar_api):
    for event_id, system, request in [("bkaa000001", "hand_check", "r1"), ("bkab000001", "no_check", "r1"),
                                      ("bkac000001", "hand_check", "r2")]:
        _insert(calendar_api, _event(event_id, "10:00", "10:30",
                                     extendedProperties={"private": {"system": system, "booking_request": request}}))
    _insert(calendar_api, _event("bkcustomer", "10:00", "10:30"))

    both = calendar_api.events().list(calendarId="primary",
                                      privateExtendedProperty=["system=hand_check", "booking_request=r1"]).execute()
    one = calendar_api.events().list(calendarId="primary", privateExtendedProperty="booking_request=r1").execute()

    assert _ids(both) == ["bkaa000001"]
    assert sorted(_ids(one)) == ["bkaa000001", "bkab000001"]


def test_list_hides_cancelled_events_unless_show_deleted(calendar_api):
    _insert(calendar_api, _event("bklive0001", "10:00", "10:30"))
    _insert(calendar_api, _event("bkdead0001", "10:00", "10:30"))
    calendar_api.events().delete(calendarId="primary", eventId="bkdead0001").execute()

    hidden = calendar_api.events().list(calendarId="primary").execute()
    shown = calendar_api.events().list(calendarId="primary", showDeleted=True).execute()

    assert _ids(hidden) == ["bklive0001"]
    assert {e["id"]: e["status"] for e in shown["items"]} == {"bklive0001": "confirmed", "bkdead0001": "cancelled"}


def test_order_by_start_time_sorts_single_events_and_is_refused_without_them(calendar_api):
    _insert(calendar_api, _event("bklate0001", "15:00", "15:30"))
    _insert(calendar_api, _event("bksoon0001", "09:00", "09:30"))

    unordered = calendar_api.events().list(calendarId="primary").execute()
    ordered = calendar_api.events().list(calendarId="primary", singleEvents=True, orderBy="startTime").execute()
    with pytest.raises(HttpError) as caught:
        calendar_api.events().list(calendarId="primary", orderBy="startTime").execute()

    assert _ids(unordered) == ["bklate0001", "bksoon0001"]
    assert _ids(ordered) == ["bksoon0001", "bklate0001"]
    assert caught.value.resp.status == 400


def test_list_pages_with_max_results_and_page_token(calendar_api):
    inserted = [f"bkpage{i:04d}" for i in range(5)]
    for event_id in inserted:
        _insert(calendar_api, _event(event_id, "10:00", "10:30"))

    pages, request = [], calendar_api.events().list(calendarId="primary", maxResults=2)
    while request is not None:
        answer = request.execute()
        pages.append(_ids(answer))
        request = calendar_api.events().list_next(request, answer)

    assert pages == [inserted[0:2], inserted[2:4], inserted[4:5]]


def test_free_busy_merges_live_opaque_events_only(calendar_api):
    _insert(calendar_api, _event("bkfb000001", "10:00", "10:30"))
    _insert(calendar_api, _event("bkfb000002", "10:15", "11:00"))
    _insert(calendar_api, _event("bkfb000003", "12:00", "12:30", transparency="transparent"))
    _insert(calendar_api, _event("bkfb000004", "13:00", "13:30"))
    calendar_api.events().delete(calendarId="primary", eventId="bkfb000004").execute()

    answer = calendar_api.freebusy().query(body={"timeMin": _at("08:00"), "timeMax": _at("18:00"),
                                                 "items": [{"id": "primary"}]}).execute()

    assert answer["kind"] == "calendar#freeBusy"
    assert answer["calendars"]["primary"]["busy"] == [{"start": _at("10:00"), "end": _at("11:00")}]


def test_patch_replaces_the_given_fields(calendar_api):
    _insert(calendar_api, _event("bkpatch001", "10:00", "10:30"))

    patched = calendar_api.events().patch(calendarId="primary", eventId="bkpatch001",
                                          body={"summary": "Dana: moved"}).execute()

    assert (patched["summary"], patched["start"]["dateTime"]) == ("Dana: moved", _at("10:00"))
    assert calendar_api.events().get(calendarId="primary", eventId="bkpatch001").execute()["summary"] == "Dana: moved"


def test_write_log_holds_every_insert_delete_and_patch_with_its_status(calendar_api, calendar_server, tmp_path):
    _insert(calendar_api, _event("bklog00001", "10:00", "10:30"))
    with pytest.raises(HttpError):
        _insert(calendar_api, _event("bklog00001", "10:00", "10:30"))
    calendar_api.events().patch(calendarId="primary", eventId="bklog00001", body={"summary": "x"}).execute()
    calendar_api.events().delete(calendarId="primary", eventId="bklog00001").execute()
    calendar_api.events().list(calendarId="primary").execute()

    log = calendar_server.write_log()

    assert [(e["seq"], e["method"], e["calendar_id"], e["event_id"], e["status"], e["cut"]) for e in log] == [
        (1, "insert", "primary", "bklog00001", 200, False), (2, "insert", "primary", "bklog00001", 409, False),
        (3, "patch", "primary", "bklog00001", 200, False), (4, "delete", "primary", "bklog00001", 204, False)]
    assert all(isinstance(e["ts"], float) for e in log)
    on_disk = [json.loads(line) for line in (tmp_path / "calendar-writes.jsonl").read_text().splitlines()]
    assert on_disk == log


def test_a_cut_insert_is_stored_while_the_client_gets_a_connection_reset(calendar_api, calendar_server):
    calendar_server.cut_next(lambda entry: entry["method"] == "insert" and entry["event_id"] == "bkcut00001")

    with pytest.raises(ConnectionResetError):
        _insert(calendar_api, _event("bkcut00001", "10:00", "10:30"))

    assert calendar_api.events().get(calendarId="primary", eventId="bkcut00001").execute()["status"] == "confirmed"
    assert [(e["event_id"], e["status"], e["cut"]) for e in calendar_server.write_log()] == [("bkcut00001", 200, True)]
    with pytest.raises(HttpError) as caught:
        _insert(calendar_api, _event("bkcut00001", "10:00", "10:30"))
    assert caught.value.resp.status == 409


def test_racing_inserts_of_one_id_leave_one_event(calendar_server):
    statuses, barrier = [], threading.Barrier(8)

    def insert() -> None:
        api = calendar_service()
        barrier.wait()
        try:
            _insert(api, _event("bkrace0001", "10:00", "10:30"))
            statuses.append(200)
        except HttpError as error:
            statuses.append(error.resp.status)

    threads = [threading.Thread(target=insert) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(statuses) == [200] + [409] * 7


def test_a_worker_process_reaches_the_standin_hosted_by_this_process(calendar_api):
    code = ("from experiments.clients import calendar_service\n"
            "calendar_service().events().insert(calendarId='primary', body={'id': 'bkjob00001', "
            "'start': {'dateTime': '2026-10-13T10:00:00Z'}, 'end': {'dateTime': '2026-10-13T10:30:00Z'}}).execute()\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60, cwd=ROOT,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})

    assert calendar_api.events().get(calendarId="primary", eventId="bkjob00001").execute()["status"] == "confirmed"


def test_a_client_reset_mid_request_goes_to_the_error_log_not_stderr(calendar_server, tmp_path, capfd):
    host, port = calendar_server.endpoint.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port))) as client:
        client.sendall(b"POST /calendar/v3/calendars/primary/events HTTP/1.1\r\nHost: x\r\n"
                       b"Content-Length: 100\r\n\r\n{")
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    error_log = tmp_path / "calendar-writes.errors.log"
    deadline = time.monotonic() + 10
    while "ConnectionResetError" not in (error_log.read_text() if error_log.exists() else ""):
        assert time.monotonic() < deadline, f"{error_log} never named the reset"
        time.sleep(0.02)

    assert capfd.readouterr().err == ""
    assert calendar_server.write_log() == []
