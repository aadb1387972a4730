"""What every admission rule builds on: `Problem` (a field path and a message), `Rule` (an entry of a
rule table), the accessors that tolerate malformed input (`get_in`, `mapping_items`, `string_items`)
and `label_problems`. Every rule tolerates wrong types and missing fields: schema validation reports
those."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from gputenancy.common.findings import Severity
from gputenancy.common.names import label_errors
from gputenancy.common.objects import FieldPath


class Problem(NamedTuple):
    """One violation at a field path inside an object body."""

    path: FieldPath
    message: str
    severity: Severity = Severity.ERROR


Check = Callable[[Mapping[str, Any]], Iterator[Problem]]


@dataclasses.dataclass(frozen=True)
class Rule:
    """A rule applies to objects whose apiVersion is in `api_versions` and whose kind is in `kinds`.

    `also_in_crd` marks a rule that repeats an `x-kubernetes-validations` rule of the Kueue CRD; it runs
    only when no CRD schema was applied, so one mistake yields one finding.
    """

    id: str
    api_versions: frozenset[str]
    kinds: frozenset[str]
    check: Check
    also_in_crd: bool = False

    @property
    def doc(self) -> str:
        return (self.check.__doc__ or "").strip()


MAPPING = (dict, Mapping)


def get_in(body: Any, *keys: str) -> Any:
    """body[key1][key2]..., or None where a level is missing or not a mapping."""
    for key in keys:
        if not isinstance(body, MAPPING):
            return None
        body = body.get(key)
    return body


def mapping_items(value: Any) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """(index, item) for every mapping in a list; nothing when `value` is not a list."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, MAPPING):
                yield i, item


def string_items(value: Any) -> Iterator[tuple[int, str]]:
    """(index, item) for every string in a list; nothing when `value` is not a list."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                yield i, item


def label_problems(labels: Any, path: FieldPath) -> Iterator[Problem]:
    """ValidateLabels: every key a qualified name, every value a label value."""
    for at, message in label_errors(labels, path):
        yield Problem(at, message)
