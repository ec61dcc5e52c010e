"""A verify script shared by the scoring-placement tests (the Python API's and the flows').

Each attempt leaves a file in ``$ATTEMPT_DIR`` (so a test counts attempts and sees which env each
one scored), the first attempt fails when ``FAIL_FIRST=1``, and the rows check the scoring env's
late-read template value and its network policy.
"""

VERIFY = '''
import os, pathlib

async def verify(mcp_url, run=None):
    folder = pathlib.Path(os.environ["ATTEMPT_DIR"])
    n = len(list(folder.glob("attempt-*")))
    (folder / f"attempt-{n}").write_text(mcp_url)
    if n == 0 and os.environ.get("FAIL_FIRST") == "1":
        raise RuntimeError("the first attempt fails")
    token = os.environ.get("SCORING_TOKEN")
    return [{"id": "token", "result": token == "late-value", "justification": f"saw {token}"},
            {"id": "proxy", "result": os.environ.get("HTTPS_PROXY") == "http://127.0.0.1:9"}]
'''
