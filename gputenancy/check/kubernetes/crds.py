"""The Kueue CRDs of a schema directory by (group, kind), each file parsed when one of its kinds is first asked for."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from gputenancy.check.kubernetes import schemafiles


@dataclasses.dataclass(frozen=True)
class CrdVersion:
    served: bool
    deprecated: bool
    warning: str
    schema: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Crd:
    source: str
    namespaced: bool
    versions: Mapping[str, CrdVersion]


_CRD_GROUP = re.compile(r"^  group: ['\"]?([A-Za-z0-9.-]+)['\"]?$", re.M)
_CRD_NAMES = re.compile(r"^  names:\n((?:    .*\n|[ ]*\n)*)", re.M)
_CRD_KIND = re.compile(r"^    kind: ['\"]?([A-Za-z0-9]+)['\"]?$", re.M)
_GROUP_LINE = re.compile(r"  group: ['\"]?([A-Za-z0-9.-]+)['\"]?")


def read_crds(file: Path) -> dict[tuple[str, str], Crd]:
    found: dict[tuple[str, str], Crd] = {}
    for doc in schemafiles.load_all(file):
        if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
            continue
        spec = doc.get("spec") or {}
        versions = {
            str(v["name"]): CrdVersion(
                bool(v.get("served")),
                bool(v.get("deprecated")),
                str(v.get("deprecationWarning") or ""),
                ((v.get("schema") or {}).get("openAPIV3Schema") or {}),
            )
            for v in spec.get("versions") or ()
        }
        key = (str(spec.get("group")), str((spec.get("names") or {}).get("kind")))
        found[key] = Crd(file.name, spec.get("scope") == "Namespaced", versions)
    return found


def guess_kind(text: str) -> tuple[str, str] | None:
    """(group, kind) of a file holding one CRD as controller-gen writes it, from its text alone."""
    if (
        text.count("\nkind: CustomResourceDefinition") + text.startswith("kind: CustomResourceDefinition")
        != 1
    ):
        return None
    group, names = _groups(text), _names(text)
    kinds = _CRD_KIND.findall(names[0]) if len(names) == 1 else []
    return (group[0], kinds[0]) if len(group) == 1 and len(kinds) == 1 else None


def _lines_starting(text: str, prefix: str) -> Iterator[int]:
    """Where each line of `text` that starts with `prefix` starts (`str.find`, not a regex over 1.4 MB)."""
    if text.startswith(prefix):
        yield 0
    at = text.find("\n" + prefix)
    while at != -1:
        yield at + 1
        at = text.find("\n" + prefix, at + 1)


def _groups(text: str) -> list[str]:
    """`_CRD_GROUP.findall(text)`: the lines `  group: <name>`."""
    out = []
    for start in _lines_starting(text, "  group: "):
        end = text.find("\n", start)
        found = _GROUP_LINE.fullmatch(text, start, len(text) if end == -1 else end)
        if found:
            out.append(found.group(1))
    return out


def _names(text: str) -> list[str]:
    """`_CRD_NAMES.findall(text)`: after each line `  names:`, the lines indented by four spaces or blank."""
    out = []
    for start in _lines_starting(text, "  names:\n"):
        begin = at = start + len("  names:\n")
        end = text.find("\n", at)
        while end != -1 and (text.startswith("    ", at) or not text[at:end].strip(" ")):
            at = end + 1
            end = text.find("\n", at)
        out.append(text[begin:at])
    return out


class CrdDirectory(Mapping[tuple[str, str], Crd]):
    """The CRDs of a directory by (group, kind). A file is parsed when one of its kinds is first asked
    for: the directory holds the Workload CRD (1.4 MB of the 1.6 MB), which the pipeline never
    validates. Which file holds which kind is read off the text (`guess_kind`); when a file does not
    look like one CRD written by controller-gen, or what it holds is not what its text said, every
    file is parsed."""

    def __init__(self, directory: Path) -> None:
        self._files = sorted([*directory.glob("*.yaml"), *directory.glob("*.yml")])
        self._where: dict[tuple[str, str], Path] | None = {}
        self._loaded: dict[tuple[str, str], Crd] = {}
        self._parsed: set[Path] = set()
        for file in self._files:
            guess = guess_kind(schemafiles.read_text(file))
            if guess is None or guess in self._where:
                self._where = None
                break
            self._where[guess] = file
        if self._where is None:
            self._load_all()

    def _load_all(self) -> None:
        self._where = None
        self._loaded = {}
        for file in self._files:
            self._loaded.update(read_crds(file))
        self._parsed = set(self._files)

    def _find(self, key: tuple[str, str]) -> Crd | None:
        if key in self._loaded or self._where is None:
            return self._loaded.get(key)
        file = self._where.get(key)
        if file is None or file in self._parsed:
            return None
        found = read_crds(file)
        self._parsed.add(file)
        if set(found) != {key}:
            self._load_all()
            return self._loaded.get(key)
        self._loaded.update(found)
        return found[key]

    def __getitem__(self, key: tuple[str, str]) -> Crd:
        found = self._find(key)
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, str]]:
        if self._where is not None:
            self._load_all()
        return iter(dict(self._loaded))

    def __len__(self) -> int:
        return len(self._where) if self._where is not None else len(self._loaded)


@functools.cache
def load(directory: Path) -> Mapping[tuple[str, str], Crd]:
    """CRDs of a directory by (group, kind), read once per resolved path (each file when first needed)."""
    return CrdDirectory(directory)
