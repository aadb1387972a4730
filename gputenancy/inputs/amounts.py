"""Amounts a cluster would punish: device counts that are not plain whole numbers, and quantities
beyond what Kueue counts (a leaf of the input stage, called by `spec` while it builds
records).

* A device count is a whole number written plainly: a YAML integer (``4``) or a string of digits
  (``"4"``). ``1Gi``, ``1e3``, ``1k``, ``4.0`` or ``"4."`` are refused whatever `overcommit`
  says: a quantity suffix on a GPU count is a typo for a memory size far more often than a request
  for 1,073,741,824 GPUs (`device-count`).
* Kueue counts quotas and requests as signed 64-bit numbers and clamps a larger magnitude at 2^63-1
  (Kueue v0.18.1 reads a `64e30` memory request as 0); the API server caps a binary quantity above
  2^63-1 (``99999999999999999999Ki``) and keeps a decimal one as written, so neither means what was
  reviewed (`quantity-range`).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from gputenancy.inputs import quantity

MAX_STORED = 2**63 - 1
_PLAIN = re.compile(r"[0-9]+")
_BINARY = re.compile(r"([+-]?)([0-9]*\.?[0-9]*)(Ki|Mi|Gi|Ti|Pi|Ei)")
_POWERS = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}

DOCS = {
    "device-count": """Device counts (budgets' `devices`, claim counts, a cluster's device capacity) are
plain whole numbers: digits only, no suffix, exponent or decimal point, whatever `overcommit` says.

Passes: gpu.nvidia.com: 4; gpu.nvidia.com: {nominal: "8", borrowingLimit: 2}.
Fails: gpu.nvidia.com: 1Gi (1,073,741,824 GPUs); gpu.nvidia.com: 1e3; gpu.nvidia.com: 2.0.
""",
    "quantity-range": """A quantity is at most 2^63-1 (9223372036854775807), the most Kueue counts: Kueue
clamps every quota and request at 2^63-1 (v0.18.1 charges a 64e30 memory request as 0), and the API
server caps a binary value above it and keeps a decimal one as written, so the quota Kueue enforces is
not the one reviewed.

Passes: memory: 512Gi; cpu: "96".
Fails: memory: 8Ei (capped to 2^63-1); cpu: 10E (10^19).
""",
    "source-octal": """(warning) An unquoted number with a leading zero is octal in YAML 1.1, the reading
used here (`010` is 8) but decimal in YAML 1.2 readers such as kubectl's (`010` is 10): write the
number without the leading zero, or quote it.

Passes: nominal: 8.
Fails (warning): nominal: 010.
""",
}


def device_count_problem(raw: Any) -> str | None:
    """Why `raw` is not a plain whole device count, or None when it is one."""
    if isinstance(raw, bool):
        return None  # refused as a quantity already
    if isinstance(raw, int) or (isinstance(raw, str) and _PLAIN.fullmatch(raw)):
        return None
    if not isinstance(raw, str | float):
        return None
    return (
        f"device counts are plain whole numbers (digits only: no suffix, exponent or decimal point),"
        f" got {raw!r}"
    )


def range_problem(raw: Any, parsed: quantity.Quantity) -> str | None:
    """Why the quantity written as `raw` cannot be stored by the API server as written, or None."""
    value = abs(parsed.value)
    if isinstance(raw, str):
        binary = _BINARY.fullmatch(raw)
        if binary and binary.group(2) not in ("", "."):
            value = abs(Decimal(binary.group(2)) * (1024 ** _POWERS[binary.group(3)]))
    if value > MAX_STORED:
        shown = raw if not isinstance(raw, str) or len(raw) <= 40 else raw[:37] + "..."
        return (
            f"{shown!r} is more than 2^63-1 = {MAX_STORED}, the most Kueue counts: Kueue clamps every quota "
            "and request at 2^63-1 (and v0.18.1 charges a 64e30 memory request as 0); the API server caps a "
            "binary value such as 99999999999999999999Ki at 2^63-1 and keeps a decimal one as written"
        )
    return None
