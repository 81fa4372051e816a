"""The shapes of the Kubernetes objects we read, enforced once where parsed documents enter.

A paste is edited by hand and a fuzzer writes `conditions: .nan`; rather than an isinstance check
at every read, each object is conformed to its declared shape first. A value of the wrong type is
dropped with a warning naming its path, so a parser only ever sees what it expects and a dropped
section reads as absent (unknown), never as empty.

>>> problems = []
>>> conform({"spec": {"containers": True, "nodeName": "gpu-1"}}, POD, problems)
{'spec': {'nodeName': 'gpu-1'}}
>>> problems
['spec.containers: expected a list, got bool; ignored']
>>> conform({"metadata": {"labels": {"a": 1, "b": [2]}}}, NODE, [])
{'metadata': {'labels': {'a': '1'}}}
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


class Text:
    """A scalar read as text: strings, and the numbers and booleans YAML makes of unquoted text."""


class Flag:
    """A boolean."""


class Anything:
    """Passed through as it is (free-form sections nobody indexes into)."""


@dataclass(frozen=True)
class MapOf:
    """A mapping with free keys (labels, capacity): keys become text, values have one shape."""

    value: Shape


@dataclass(frozen=True)
class ListOf:
    """A list whose items all have one shape."""

    item: Shape


Shape = type[Text] | type[Flag] | type[Anything] | MapOf | ListOf | dict[str, "Shape"]
_DROP = object()


def conform(value: Any, shape: Shape, problems: list[str], path: str = "") -> Any:
    """`value` reduced to `shape`: undeclared keys dropped, wrong types dropped with a problem
    each (the whole value is dropped when its top level is wrong: it is returned as None)."""
    out = _conform(value, shape, problems, path)
    return None if out is _DROP else out


def _conform(value: Any, shape: Shape, problems: list[str], path: str) -> Any:
    if shape is Anything:
        return value
    if shape is Text:
        if isinstance(value, str):
            return value
        if value is None:  # `key:` with nothing after it
            return ""
        if isinstance(value, bool | int) or (isinstance(value, float) and math.isfinite(value)):
            return str(value).lower() if isinstance(value, bool) else _number(value)
        return _wrong(value, "a text value", problems, path)
    if shape is Flag:
        return value if isinstance(value, bool) else _wrong(value, "true/false", problems, path)
    if isinstance(shape, ListOf):
        if not isinstance(value, list):
            return _wrong(value, "a list", problems, path)
        items = (_conform(v, shape.item, problems, f"{path}[{i}]") for i, v in enumerate(value))
        return [v for v in items if v is not _DROP]
    if not isinstance(value, dict):
        return _wrong(value, "a mapping", problems, path)
    if isinstance(shape, MapOf):
        pairs = (
            (str(k), _conform(v, shape.value, problems, _join(path, k))) for k, v in value.items()
        )
        return {k: v for k, v in pairs if v is not _DROP}
    if isinstance(shape, type):  # a leaf class without its branch above
        raise TypeError(f"no conformance for the shape {shape.__name__}")
    out = {}
    for key, sub in shape.items():
        if key in value and value[key] is not None:
            v = _conform(value[key], sub, problems, _join(path, key))
            if v is not _DROP:
                out[key] = v
    return out


def _number(value: int | float) -> str:
    try:
        return str(value)
    except ValueError:  # an integer longer than Python converts to text
        return "<number too long>"


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _wrong(value: Any, expected: str, problems: list[str], path: str) -> Any:
    problems.append(
        f"{path or 'document'}: expected {expected}, got {type(value).__name__}; ignored"
    )
    return _DROP


_TEXT_MAP = MapOf(Text)
_METADATA: dict[str, Shape] = {
    "name": Text,
    "namespace": Text,
    "creationTimestamp": Text,
    "labels": _TEXT_MAP,
    "annotations": _TEXT_MAP,
    "managedFields": ListOf(
        {"manager": Text, "fieldsV1": {"f:metadata": {"f:labels": MapOf(Anything)}}}
    ),
}
NODE: dict[str, Shape] = {
    "apiVersion": Text,
    "kind": Text,
    "metadata": _METADATA,
    "spec": {"unschedulable": Flag, "taints": ListOf(_TEXT_MAP)},
    "status": {
        "capacity": _TEXT_MAP,
        "allocatable": _TEXT_MAP,
        "conditions": ListOf(_TEXT_MAP),
        "images": ListOf({"names": ListOf(Text)}),
        "nodeInfo": _TEXT_MAP,
    },
}
_CONTAINER_STATUS: dict[str, Shape] = {
    "name": Text,
    "state": MapOf({"reason": Text, "message": Text}),
    "lastState": MapOf({"reason": Text, "message": Text}),
}
POD: dict[str, Shape] = {
    "apiVersion": Text,
    "kind": Text,
    "metadata": _METADATA,
    "spec": {
        "nodeName": Text,
        "schedulerName": Text,
        "runtimeClassName": Text,
        "containers": ListOf(
            {
                "name": Text,
                "resources": {"limits": _TEXT_MAP, "requests": _TEXT_MAP},
                "securityContext": {"privileged": Flag},
                "env": ListOf({"name": Text, "value": Text}),
            }
        ),
    },
    "status": {"phase": Text, "containerStatuses": ListOf(_CONTAINER_STATUS)},
}
