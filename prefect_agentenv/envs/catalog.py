"""The reference envs shipped in the package, used when no AgentEnvironment block names an env id."""

from __future__ import annotations

from prefect_agentenv.runtime.launch.reference import ReferenceServer

ReferenceEnv = ReferenceServer
"""A reference env: started with its own loopback port, ready when its card answers."""


REFERENCE_ENVS: dict[str, ReferenceEnv] = {
    "email": ReferenceEnv("email", "1.0.0", "prefect_agentenv.envs.email",
                          "A mailbox with search, read and send tools, a virtual clock and triggers."),
    "records": ReferenceEnv("records", "1.0.0", "prefect_agentenv.envs.records",
                            "Business records: patients, referrals, requests with statuses, a document inbox."),
}
