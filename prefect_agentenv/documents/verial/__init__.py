"""Verial-style tasks: an instruction, a scenario, entities and typed criteria, compiled to steps.

* ``compile`` — a Verial-style task as steps; ``checks`` — checks that need the whole task.
* ``criteria`` — one observable outcome each, checked by one typed assertion.
* ``entities`` — the records a task is bound to, and their ``<entity.field>`` placeholders.
"""
