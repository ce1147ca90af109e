"""Rendering judged runs into the site's Markdown: templates, escaping, charts and raw cell files."""

from .inert import inert
from .site import render_site

__all__ = ["inert", "render_site"]
