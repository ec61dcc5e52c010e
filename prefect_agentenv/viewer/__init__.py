"""The static HTML report of a benchmark run or a task run: pages, inline-SVG charts, a local server.

It renders a :class:`~prefect_agentenv.viewer.models.ReportView` and reads nothing else.
"""

from prefect_agentenv.viewer.models import ReportView
from prefect_agentenv.viewer.pages import render, render_pages, write, write_files

__all__ = ["ReportView", "render", "render_pages", "write", "write_files"]
