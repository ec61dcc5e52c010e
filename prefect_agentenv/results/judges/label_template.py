"""What can be labelled in a run: ``prefect-agentenv calibrate RUN --template`` writes it as a label file.

One JSON line per judged criterion of the run (its shown scoring version), in run-key order, with
the criterion's text from the task document the run froze, ``label``, ``note`` and ``reviewer``
left empty for the reviewer to fill, and the judge's verdict left out so it cannot sway them. A
line whose ``label`` is still empty is skipped when the file is imported, so a half-filled
template imports what was filled.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from prefect_agentenv.artifacts import ArtifactBackend, ArtifactError
from prefect_agentenv.results.judges.calibration import JudgedCriterion
from prefect_agentenv.results.rows import RunKey
from prefect_agentenv.results.store.run_store import ResultsStore, task_key

__all__ = ["criteria_texts", "label_template", "valid_items"]


def criteria_texts(store: ArtifactBackend, slug: str, run_id: str, task_id: str,
                   seed_index: int) -> dict[tuple[str, str], str]:
    """Each ``(verifier id, criterion id)``'s text in the task document the run froze (empty when unreadable)."""
    try:
        document = ResultsStore(store, slug, run_id).read_snapshot(task_key(task_id, seed_index))
    except (ArtifactError, ValueError):
        return {}
    steps = document.get("steps", []) if isinstance(document, dict) else []
    return {(str(step.get("verifier_id") or step.get("id")), str(c.get("id"))): str(c.get("criterion", ""))
            for step in steps if isinstance(step, dict) and step.get("type") == "rubrics_verifier"
            for c in step.get("criteria") or [] if isinstance(c, dict)}


def label_template(store: ArtifactBackend, slug: str, run_id: str, judged: Sequence[JudgedCriterion]) -> str:
    """The label file to fill: one line per judged criterion, without the judge's verdict."""
    texts: dict[tuple[str, int], dict[tuple[str, str], str]] = {}
    lines = []
    for criterion in sorted(judged, key=lambda c: (RunKey.sort_key(c.item[0]), c.verifier_id)):
        where = (criterion.task_id, criterion.seed_index)
        if where not in texts:
            texts[where] = criteria_texts(store, slug, run_id, *where)
        row: dict[str, object] = {"task_id": criterion.task_id, "seed_index": criterion.seed_index,
                                  "epoch": criterion.epoch}
        if criterion.cell is not None:
            row["cell"] = criterion.cell
        row |= {"verifier_id": criterion.verifier_id, "criterion_id": criterion.criterion_id,
                "criterion": texts[where].get((criterion.verifier_id, criterion.criterion_id), ""),
                "label": "", "note": "", "reviewer": ""}
        lines.append(json.dumps(row, ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def valid_items(judged: Sequence[JudgedCriterion], *, limit: int = 12) -> str:
    """The run's task runs and criteria a label may name, for an error message (shortened past ``limit``)."""
    runs = sorted({c.item[0] for c in judged}, key=RunKey.sort_key)
    named = [f"{k.task_id} (seed {k.seed_index}, epoch {k.epoch}{f', cell {k.cell}' if k.cell else ''})" for k in runs]
    shown = ", ".join(named[:limit]) + (f" and {len(named) - limit} more" if len(named) > limit else "")
    criteria = sorted({f"{c.verifier_id}/{c.criterion_id}" for c in judged})
    return f"task runs: {shown or 'none'}; criteria: {', '.join(criteria) or 'none'}"
