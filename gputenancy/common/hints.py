"""Did-you-mean suggestions for mistyped names and keys (a leaf module).

A suggestion is made only when the word is a likely typo of it, never for a name that merely looks
alike: a wrong hint sends the author to fix the wrong thing (`mig.nvidia.com` is not a misspelt
`gpu.nvidia.com`; a new cluster `gpu-east` is not a misspelt `gpu-west`). A typo

- differs in one part of a dotted or dashed name (`gpu.nvidia.co`), the other parts equal;
- within that part by few edits for its length: Damerau-Levenshtein distance (a transposition is one
  edit: `prdo`) at most a quarter of the longer part, and at least one; never the whole part;
- and not in its numbers alone, unless one number is the other with a digit dropped or doubled
  (`h10` for `h100`): `lab2` beside `lab`, `worker-2` beside `worker-1`, `h300` beside `h100` are
  distinct names.

A difference of letter case alone is always a typo (`repoUrl`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

_PARTS = re.compile(r"[./_-]")
_DIGITS = re.compile(r"[0-9]+")


def distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (optimal string alignment): insertions, deletions,
    substitutions and transpositions of adjacent characters, each one edit."""
    rows = [list(range(len(b) + 1))]
    for i in range(1, len(a) + 1):
        row = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            row[j] = min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def _numbers_typo(a: str, b: str) -> bool | None:
    """For two parts whose letters agree: whether their numbers differ as a typo does (one digit
    dropped or doubled); None when the letters differ (not a question of numbers)."""
    if _DIGITS.sub("", a) != _DIGITS.sub("", b):
        return None
    na, nb = _DIGITS.findall(a), _DIGITS.findall(b)
    if len(na) != len(nb):
        return False  # a number added or removed: a numbered sibling
    changed = [(x, y) for x, y in zip(na, nb, strict=True) if x != y]
    if len(changed) != 1:
        return False
    x, y = changed[0]
    short, long = sorted((x, y), key=len)
    return len(long) == len(short) + 1 and any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def likely(word: str, candidate: str) -> bool:
    """Whether `word` is a likely typo of `candidate` (the module's rules)."""
    if word.lower() == candidate.lower():
        return True
    a, b = word.lower(), candidate.lower()
    pa, pb = _PARTS.split(a), _PARTS.split(b)
    if len(pa) == len(pb):
        differing = [(x, y) for x, y in zip(pa, pb, strict=True) if x != y]
        if len(differing) != 1:
            return False
        a, b = differing[0]
    numbers = _numbers_typo(a, b)
    if numbers is not None:
        return numbers
    edits = distance(a, b)
    return edits <= max(1, max(len(a), len(b)) // 4) and edits < min(len(a), len(b))


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The candidate `word` most likely mistypes: among the likely typos (`likely`), the closest by
    difflib's ratio if it reaches `cutoff`; a difference of case alone always."""
    known = [c for c in dict.fromkeys(candidates) if c != word]
    lowered = {c.lower(): c for c in known}
    if word.lower() in lowered:
        return lowered[word.lower()]
    typos = [c for c in known if likely(word, c)]
    match = difflib.get_close_matches(word, typos, n=1, cutoff=cutoff)
    return match[0] if match else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """'; did you mean 'x'?' when `word` is a likely typo of a candidate, else ''."""
    match = closest(word, candidates)
    return f"; did you mean {match!r}?" if match else ""
