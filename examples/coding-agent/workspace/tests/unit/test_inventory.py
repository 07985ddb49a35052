from inventory import Item, low_stock, needs_reorder


def test_item_below_the_reorder_level_needs_reorder() -> None:
    assert needs_reorder(Item("SKU-1", "Desk lamp", on_hand=2, reorder_level=5))


def test_item_at_the_reorder_level_needs_reorder() -> None:
    assert needs_reorder(Item("SKU-2", "Stapler", on_hand=5, reorder_level=5))


def test_low_stock_lists_the_skus_to_reorder() -> None:
    items = [Item("SKU-1", "Desk lamp", 2, 5), Item("SKU-3", "Chair", 40, 10)]
    assert low_stock(items) == ["SKU-1"]
