"""The gcp_resource scenario: an agent's config rollback on an object store against a human's redeploy.

`case` holds the incident and the configs, `faults` what each row does and wants, `baselines` and `gated` the
systems under test, `worker` their process entry point, `scoring` fills a cell's scored columns through the
pipeline's own judge. The runner is `experiments.scenario_gcp_resource`. Modules import only what a worker needs,
so worker start-up stays light.
"""
