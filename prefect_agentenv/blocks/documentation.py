"""Where a block's "documentation" link in the Prefect UI points.

The README, as published with the package, documents every block (fields, code examples, how
runs find them); the project metadata's Documentation URL names the same page.
"""

from pydantic import HttpUrl

DOCUMENTATION_URL = HttpUrl("https://pypi.org/project/prefect-agentenv/#description")
