# Every target runs inside a project-local virtual environment that it creates on first use.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: results typecheck test bench experiments explore rerun-stale serve clean

$(STAMP): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

results: $(STAMP)
	$(PY) -m pipeline build

typecheck: $(STAMP)
	$(PY) -m mypy

test: $(STAMP) typecheck
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench

experiments: $(STAMP)
	$(PY) -m experiments.gcp_resource
	$(PY) -m experiments.calendar

# The committed explorations: every file-journal hazard on every scenario (1000 schedules for the gate, 300 for the
# baselines), then the shared-journal hazards on every scenario (500 for the gate), then the file-journal hazards
# that also run on the shared journal (300 for the gate there), then the hazards whose every schedule waits seconds
# (300 for every system on both journals, 8 at once).
JSONL_HAZARDS = crash slow_service sigstop journal_cut send_raises
PG_HAZARDS = concurrent_recovery session_terminated server_restart paused_past_ttl slow_send_past_ttl
PG_ALSO_HAZARDS = crash slow_service send_raises
WAITING_HAZARDS = late_request

# A run that finds the gate breaking a rule exits 1; the others still run, and make fails at the end.
explore: $(STAMP)
	status=0; \
	for hazard in $(JSONL_HAZARDS); do \
	  $(PY) -m experiments.explore --hazard $$hazard --journal jsonl --schedules 1000 --baseline-schedules 300 \
	    || status=1; \
	done; \
	for hazard in $(PG_HAZARDS); do \
	  $(PY) -m experiments.explore --hazard $$hazard --journal postgresql --schedules 500 --jobs 8 || status=1; \
	done; \
	for hazard in $(PG_ALSO_HAZARDS); do \
	  $(PY) -m experiments.explore --hazard $$hazard --journal postgresql --schedules 300 --jobs 8 || status=1; \
	done; \
	for hazard in $(WAITING_HAZARDS); do \
	  $(PY) -m experiments.explore --hazard $$hazard --journal jsonl --schedules 300 --jobs 8 || status=1; \
	done; \
	for hazard in $(WAITING_HAZARDS); do \
	  $(PY) -m experiments.explore --hazard $$hazard --journal postgresql --schedules 300 --jobs 8 || status=1; \
	done; \
	exit $$status

# Every result file whose code moved since its run (`python -m experiments.explore --stale`), run again as that
# listing says it was run, JOBS at a time (each command writes only its own files); make fails at the end if any did.
# First the files only the counting code moved for are counted again from their stored histories (seconds).
JOBS ?= 1
rerun-stale: $(STAMP)
	$(PY) -m experiments.explore --stale | sed -n 's|^count again: python |$(PY) |p' | sh -e
	$(PY) -m experiments.explore --stale | sed -n 's|^run again: python |$(PY) |p' | xargs -r -P $(JOBS) -I {} sh -c '{}'

serve: $(STAMP)
	$(PY) -m http.server --bind 127.0.0.1 --directory build/site 8000

clean:
	rm -rf build $(VENV)
