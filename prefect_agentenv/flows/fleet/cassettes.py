"""A benchmark run's model calls kept in the artifact store, and given again by a replay.

``bench --record-model-calls`` keeps every call the run's gateways relayed (request by hash, the
answer whole, never a key) as ``model-calls.jsonl`` beside the run's results. ``bench --replay RUN``
runs the benchmark again with its gateways answering from that file instead of any provider: a
grader or a runner change can be checked against the agents' recorded behaviour.
"""

from __future__ import annotations

from prefect_agentenv.artifacts import ArtifactNotFoundError
from prefect_agentenv.exceptions import ConfigurationError
from prefect_agentenv.gateway.cassette import Cassette
from prefect_agentenv.results.store.run_store import ResultsStore
from prefect_agentenv.run_services.model_door import ModelTraffic

CASSETTE_FILE = "model-calls.jsonl"


def model_traffic_of(results: ResultsStore, record: bool, replay: str | None) -> ModelTraffic | None:
    """What the run's gateways do with its calls: record them, answer from a recorded run, or neither.

    Raises:
        ConfigurationError: the run to replay kept no model calls (or does not exist).
    """
    if replay is None:
        return ModelTraffic(recording=Cassette()) if record else None
    recorded = ResultsStore(results.store, results.slug, replay)
    try:
        text = recorded.store.get_object(f"{recorded.folder}/{CASSETTE_FILE}").decode("utf-8")
    except ArtifactNotFoundError:
        raise ConfigurationError(f"--replay: run {replay!r} of {results.slug!r} kept no model calls; run it with "
                                 "--record-model-calls first") from None
    return ModelTraffic(recording=Cassette() if record else None, replay=Cassette.from_jsonl(text))


def keep_model_calls(results: ResultsStore, cassette: Cassette) -> str:
    """Store the run's recorded model calls beside its results; their key."""
    key = f"{results.folder}/{CASSETTE_FILE}"
    results.store.put_object(key, cassette.to_jsonl().encode("utf-8"))
    return key
