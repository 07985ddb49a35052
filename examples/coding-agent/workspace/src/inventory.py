"""Stock levels and the reorder check."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Item:
    sku: str
    name: str
    on_hand: int
    reorder_level: int


def needs_reorder(item: Item) -> bool:
    """True when the stock has fallen to the reorder level or below."""
    return item.on_hand < item.reorder_level


def low_stock(items: list[Item]) -> list[str]:
    """The SKUs to reorder, in the order given."""
    return [item.sku for item in items if needs_reorder(item)]
