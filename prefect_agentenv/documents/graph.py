"""The step graph: resolved dependencies, cycles, ancestors and descendants."""

from __future__ import annotations

from collections.abc import Sequence


def resolve_dependencies(ids: Sequence[str], declared: Sequence[list[str] | None]) -> dict[str, list[str]]:
    """Each step's dependency ids; ``None`` (omitted) means every earlier step."""
    deps: dict[str, list[str]] = {}
    for i, (step_id, dep) in enumerate(zip(ids, declared, strict=True)):
        deps[step_id] = list(ids[:i]) if dep is None else list(dict.fromkeys(dep))
    return deps


def find_cycle(deps: dict[str, list[str]]) -> list[str] | None:
    """A dependency cycle as a list of ids (first id repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in deps.get(node, []):
            if dep not in deps:
                continue
            if state.get(dep) == 1:
                return stack[stack.index(dep):] + [dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in deps:
        if node not in state and (found := visit(node)):
            return found
    return None


def ancestors(deps: dict[str, list[str]]) -> dict[str, set[str]]:
    """Every step's transitive dependencies (the graph must be acyclic)."""
    memo: dict[str, set[str]] = {}

    def of(node: str) -> set[str]:
        if node not in memo:
            found: set[str] = set()
            for dep in deps.get(node, []):
                if dep in deps:
                    found.add(dep)
                    found |= of(dep)
            memo[node] = found
        return memo[node]

    for node in deps:
        of(node)
    return memo


def topological_order(deps: dict[str, list[str]]) -> list[str]:
    """Ids ordered so every step comes after its dependencies (stable w.r.t. document order)."""
    done: set[str] = set()
    order: list[str] = []

    def visit(node: str) -> None:
        if node in done:
            return
        done.add(node)
        for dep in deps[node]:
            visit(dep)
        order.append(node)

    for node in deps:
        visit(node)
    return order


def retry_span(deps: dict[str, list[str]], start: str, failing: str) -> list[str]:
    """Steps re-run when ``failing`` retries from ``start``: start, failing, and every step between."""
    anc = ancestors(deps)
    span = {start, failing} | {s for s in anc[failing] if start in anc[s]}
    return [s for s in topological_order(deps) if s in span]
