"""The quota amount record (nominal, borrowingLimit, lendingLimit), shared by the tenant records and the
HAMi records (a module of its own so both can hold it without importing each other)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from decimal import Decimal

from gputenancy.common.findings import Origin
from gputenancy.inputs import quantity


@dataclasses.dataclass(frozen=True)
class Amount:
    nominal: quantity.Quantity
    borrowing: quantity.Quantity | None
    lending: quantity.Quantity | None
    origin: Origin
    field_origins: Mapping[str, Origin] = dataclasses.field(default_factory=dict)

    def origin_of(self, field: str) -> Origin:
        return self.field_origins.get(field, self.origin)

    def values(self) -> tuple[Decimal, Decimal | None, Decimal | None]:
        """(nominal, borrowingLimit, lendingLimit) as exact numbers (None: unset)."""
        return (
            self.nominal.value,
            self.borrowing.value if self.borrowing is not None else None,
            self.lending.value if self.lending is not None else None,
        )
