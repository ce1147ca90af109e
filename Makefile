# Every target runs inside a project-local virtual environment that it creates on first use.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: results test bench experiments explore serve clean

$(STAMP): pyproject.toml requirements.lock
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

results: $(STAMP)
	$(PY) -m pipeline build

test: $(STAMP)
	$(PY) -m pytest

bench: $(STAMP)
	$(PY) -m bench

experiments: $(STAMP)
	$(PY) -m experiments.gcp_resource
	$(PY) -m experiments.calendar

explore: $(STAMP)
	$(PY) -m experiments.explore --hazard all --schedules 1000 --pg-schedules 500

serve: $(STAMP)
	$(PY) -m http.server --bind 127.0.0.1 --directory build/site 8000

clean:
	rm -rf build $(VENV)
