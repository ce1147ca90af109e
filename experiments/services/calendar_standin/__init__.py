"""The project's own Google Calendar v3 stand-in, reached by the real google-api-python-client.

It covers what the calendar scenario needs from the real service: client-chosen event ids that are never
reused, cancelled events that stay readable, events.list filters and paging, freeBusy, and Google's error bodies.
"""

from experiments.services.calendar_standin.server import NAME, CalendarStandin, calendar_standin
from experiments.services.calendar_standin.store import OWNER, CalendarStore

__all__ = ["NAME", "OWNER", "CalendarStandin", "CalendarStore", "calendar_standin"]
