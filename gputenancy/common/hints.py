"""Did-you-mean suggestions for mistyped names and keys (a leaf module)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def closest(word: str, candidates: Iterable[str], cutoff: float = 0.75) -> str | None:
    """The candidate `word` most likely mistypes, if any is close enough (difflib's ratio >= cutoff:
    'prdo' is 0.75 from 'prod'; 'gpu.example.com' only 0.62 from 'gpu.nvidia.com', a different name)."""
    known = [c for c in dict.fromkeys(candidates) if c != word]
    match = difflib.get_close_matches(word, known, n=1, cutoff=cutoff)
    if not match:
        lowered = {c.lower(): c for c in known}
        match = [lowered[word.lower()]] if word.lower() in lowered else []
    return match[0] if match else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """'; did you mean 'x'?' when a candidate is close to `word`, else ''."""
    match = closest(word, candidates)
    return f"; did you mean {match!r}?" if match else ""
