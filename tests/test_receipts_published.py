"""The published runs' receipts, read through `published_format`: every bundle and journal the two runs carry
verifies and says what was published; one changed character anywhere shows; the library's own verify does not
take the published format for its own; the command a page prints verifies a result file's gate records."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

import published_format
from interlock import verify

ROOT = Path(__file__).resolve().parents[1]
PUBLISHED = ROOT / "results" / "published"
RECEIPT_FIELDS = ("valid", "tamper_evident", "signed", "happened", "happened_once", "authorized_when_fired",
                  "assumptions_held", "refused", "evidence", "rechecked_at_recovery", "problems")


def published() -> list[tuple[str, object, dict]]:
    """(where, bundle, published receipt) for every receipt the two published runs carry."""
    found = []
    calendar = json.loads((PUBLISHED / "calendar.json").read_text())
    for i, cell in enumerate(calendar["cells"]):
        if cell["evidence"]["receipt_bundle"] is None:
            continue
        found.append((f"calendar cells[{i}].evidence.receipt_bundle", cell["evidence"]["receipt_bundle"],
                      cell["receipt"]))
        found.append((f"calendar cells[{i}].evidence.result_file.receipt_bundle",
                      cell["evidence"]["result_file"]["receipt_bundle"], cell["receipt"]))
    gcp = json.loads((PUBLISHED / "gcp_resource.json").read_text())
    for i, cell in enumerate(gcp["cells"]):
        if cell["system"] == "interlock":
            found.append((f"gcp cells[{i}].artifacts.journal.jsonl", cell["artifacts"]["journal.jsonl"],
                          cell["ids"]["receipt"]))
    return found


PUBLISHED_RECEIPTS = published()


def test_the_published_run_has_the_receipts_it_documents():
    assert len(PUBLISHED_RECEIPTS) == 2 * 8 + 3


@pytest.mark.parametrize("where,bundled,receipt", PUBLISHED_RECEIPTS, ids=[w for w, _, _ in PUBLISHED_RECEIPTS])
def test_every_published_receipt_verifies_and_says_what_was_published(where, bundled, receipt):
    result = published_format.verify(bundled)
    assert result["valid"] and result["format"] == "published", result["problems"]
    assert {k: result[k] for k in RECEIPT_FIELDS} == {k: receipt[k] for k in RECEIPT_FIELDS}
    assert published_format.verify_record(bundled) == result


def string_leaves(value, path=()):
    """Every string inside a JSON value, with its path."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_leaves(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_leaves(item, path + (index,))


def changed_one_character(entry: dict, path: tuple) -> dict:
    edited = copy.deepcopy(entry)
    holder = edited
    for step in path[:-1]:
        holder = holder[step]
    text = holder[path[-1]]
    holder[path[-1]] = text[:-1] + ("0" if text[-1:] != "0" else "1")
    return edited


@pytest.mark.parametrize("where,bundled,receipt", PUBLISHED_RECEIPTS, ids=[w for w, _, _ in PUBLISHED_RECEIPTS])
def test_one_changed_character_in_any_published_entry_makes_it_invalid(where, bundled, receipt):
    entries = bundled["entries"] if isinstance(bundled, dict) else bundled
    tried = 0
    for i, entry in enumerate(entries):
        for path in string_leaves(entry):
            damaged = list(entries)
            damaged[i] = changed_one_character(entry, path)
            assert not published_format.verify(damaged)["valid"], (i, path)
            tried += 1
        damaged = list(entries)
        damaged[i] = {**entry, "ts": entry["ts"] + 1e-6}
        assert not published_format.verify(damaged)["valid"], (i, "ts")
    assert tried > 10 * len(entries)


def test_the_librarys_verify_does_not_take_a_published_bundle_for_its_own_format():
    where, bundled, _ = PUBLISHED_RECEIPTS[0]
    result = verify(bundled)
    assert not result["valid"] and result["format"] == "chained"
    assert any("seq" in p for p in result["problems"])


def sealed(entry: dict) -> dict:
    return {**entry, "hash": published_format.entry_hash(entry)}


def test_a_published_kind_this_gate_never_writes_is_known_to_the_published_format_only():
    proposed = sealed({"ts": 0.5, "kind": "PROPOSED", "effect_id": "e", "prev": None})
    escalated = sealed({"ts": 1.0, "kind": "ESCALATED", "effect_id": "e", "prev": proposed["hash"]})
    assert published_format.verify([proposed, escalated])["valid"]
    assert "entries[1].kind: unknown kind 'ESCALATED'" in verify([proposed, escalated])["problems"]


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "published_format", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


def test_the_command_a_page_prints_verifies_every_gate_record_of_a_published_file():
    whole = check("results/published/calendar.json")
    assert whole.returncode == 0, whole.stderr
    assert len(json.loads(whole.stdout)["records"]) == 16
    one = check("results/published/gcp_resource.json", "--cell", "2")
    assert one.returncode == 0, one.stderr
    assert [r["at"] for r in json.loads(one.stdout)["records"]] == ['cells[2].artifacts["journal.jsonl"]']


def test_the_command_names_the_file_and_field_it_cannot_use(tmp_path):
    no_record = check("results/published/gcp_resource.json", "--cell", "0")
    assert no_record.returncode == 2 and no_record.stderr.count("\n") == 1
    assert "gcp_resource.json: cells[0]: no gate record" in no_record.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    broken = check(str(bad))
    assert broken.returncode == 2 and str(bad) in broken.stderr and "Traceback" not in broken.stderr


def test_the_command_exits_1_for_a_damaged_published_record(tmp_path):
    data = json.loads((PUBLISHED / "gcp_resource.json").read_text())
    data["cells"][2]["artifacts"]["journal.jsonl"][1]["lease"] = "INC-0000"
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(data))
    result = check(str(damaged), "--cell", "2")
    assert result.returncode == 1 and json.loads(result.stdout)["valid"] is False
