"""The gcp_resource scenario: an agent's config rollback on an object store against a human's redeploy.

`case` holds the incident, the configs and the case files, `faults` the rows, `baselines` and `gated` the systems
under test, `worker` their process entry point, `scenario` what the one runner (experiments.runner) needs.
Run it with `python -m experiments.gcp_resource`. Modules import only what a worker needs, so worker start-up
stays light.
"""
