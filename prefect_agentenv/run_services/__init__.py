"""The services of one run that steps share: clients, agents, sandboxes, the model door.

None of these modules is a step type; steps, the session, the flows and the Python API reach the
run's services through them.

* ``clients`` — the run's shared clients (HTTP client, launchers, artifact store) on first use.
* ``agents`` — deploying and reaching agents in their sandboxes.
* ``agent_configuration`` — giving an agent envs, skills and config through its card's extensions.
* ``skill`` — a skill a document gives an agent (the deploy step's and the configuration's).
* ``sandboxes`` — reaching a sandbox by agent name or sandbox name.
* ``pooling`` — deploys served from a benchmark's warm pool.
* ``lookahead`` — what a run starts before its steps ask (its agent, its mock model).
* ``concurrency_slots`` — global concurrency limits per env and agent id.
* ``review_input`` — the review step's resume form.
* ``usage`` — a prompt's tokens and cost, from the agent or its trajectory, priced from the model block.
"""
