"""Print the stock report: one CSV line per SKU and day, a few megabytes in all."""

import sys

DAYS = 30
SKUS = 4000


def main() -> None:
    out = sys.stdout
    out.write("sku,day,on_hand,reserved,incoming\n")
    for sku in range(1, SKUS + 1):
        for day in range(1, DAYS + 1):
            out.write(f"SKU-{sku:05d},2024-06-{day:02d},{(sku * 7 + day * 3) % 97},{(sku + day) % 11},{(sku * day) % 13}\n")


if __name__ == "__main__":
    main()
