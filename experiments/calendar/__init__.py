"""The calendar scenario: double booking on Google Calendar.

`request` holds booking requests, their lease and the events, `faults` the rows, `systems` the systems under
test, `job` and `worker` the worker process, `raced` the unforced raced trials, `scenario` what the one runner
(experiments.runner) needs. Run it with `python -m experiments.calendar`. Every process builds its Calendar
client with experiments.clients.calendar_service from the environment the runner set up.
"""
