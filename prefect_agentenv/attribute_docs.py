"""Field descriptions from the docstring under each attribute, read when a JSON Schema is built.

Pydantic's ``use_attribute_docstrings`` reads them while each model class is created: it walks
the call stack and tokenizes the class's source, 1–2 ms a class. The classes a run imports cost
~0.2 s of CPU that way, on every start, for descriptions that only a JSON Schema shows (the
``schema`` command, the flows' parameter forms, an editor). A model configured with
``json_schema_extra=attribute_docstrings`` gives its JSON Schema the same descriptions, read from
the source once per module when a schema first asks. (Blocks keep pydantic's option: Prefect
has its own ``json_schema_extra`` for them, and they are imported only when used.)

The rule is pydantic's: a field's docstring is the string statement right after its annotated
assignment, in the class that last annotates the field; a ``Field(description=...)`` wins. A
class whose source cannot be read (no file, defined in a function) gets no descriptions.
"""

from __future__ import annotations

import ast
import functools
import inspect
import sys
from typing import Any

from pydantic import BaseModel


def attribute_docstrings(schema: dict[str, Any], cls: type[BaseModel]) -> None:
    """``json_schema_extra`` hook: each property with no description gets its field's docstring."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return
    for name, field in cls.model_fields.items():
        if field.description is not None:
            continue
        doc = _docstring(cls, name)
        if doc is None:
            continue
        for key in (field.alias, name):
            prop = properties.get(key) if key else None
            if isinstance(prop, dict):
                prop["description"] = doc
                break


def _docstring(cls: type, field: str) -> str | None:
    """The docstring of ``field`` in the nearest class of ``cls``'s MRO that annotates it."""
    for klass in cls.__mro__:
        if field in klass.__dict__.get("__annotations__", {}):
            return _class_docstrings(klass).get(field)
    return None


def _class_docstrings(cls: type) -> dict[str, str]:
    module = sys.modules.get(cls.__module__)
    filename = getattr(module, "__file__", None)
    if not filename or "<locals>" in cls.__qualname__:
        return {}
    return _module_docstrings(filename).get(cls.__qualname__, {})


@functools.cache
def _module_docstrings(filename: str) -> dict[str, dict[str, str]]:
    """Every class of the file, by qualified name: its fields' docstrings."""
    try:
        with open(filename, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(prefix + node.name, _field_docs(node.body))
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return found


def _field_docs(body: list[ast.stmt]) -> dict[str, str]:
    """``name: T [= value]`` followed directly by a string statement: that string, cleaned."""
    docs: dict[str, str] = {}
    for before, node in zip(body, body[1:]):
        if (isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name)
                and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)):
            docs[before.target.id] = inspect.cleandoc(node.value.value)
    return docs
