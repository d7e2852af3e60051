#!/usr/bin/env python3
"""A personal ledger: python3 ledger.py add DATE AMOUNT CATEGORY [NOTE ...] | report [--month YYYY-MM]"""

import csv
import os
import re
import sys
from datetime import date
from decimal import Decimal

HEADER = ["date", "amount", "category", "note"]


class Refused(Exception):
    pass


def ledger_file():
    return os.environ.get("LEDGER_FILE") or "/app/ledger.csv"


def parse_date(text):
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        raise Refused(f"not a date (YYYY-MM-DD): {text!r}")
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise Refused(f"not a real date: {text!r}") from None


def parse_amount(text):
    if not re.fullmatch(r"[+-]?\d+(\.\d{1,2})?", text):
        raise Refused(f"not an amount with at most two decimals: {text!r}")
    return f"{Decimal(text):.2f}"


def parse_category(text):
    if not re.fullmatch(r"[A-Za-z0-9-]+", text):
        raise Refused(f"not a category (letters, digits, -): {text!r}")
    return text.lower()


def append(rows):
    path = ledger_file()
    new = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.writer(f, lineterminator="\n")
        if new:
            writer.writerow(HEADER)
        writer.writerows(rows)


def cmd_add(args):
    if len(args) < 3:
        raise Refused("usage: ledger.py add DATE AMOUNT CATEGORY [NOTE ...]")
    append([[parse_date(args[0]), parse_amount(args[1]), parse_category(args[2]), " ".join(args[3:])]])
    return 0


def read_rows():
    try:
        with open(ledger_file(), newline="") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        return []
    return [dict(zip(HEADER, r)) for r in rows[1:] if r]


def money(value):
    text = f"{value:.2f}"
    return "0.00" if text == "-0.00" else text


def cmd_report(args):
    month = None
    if args:
        if len(args) != 2 or args[0] != "--month":
            raise Refused("usage: ledger.py report [--month YYYY-MM]")
        if not re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])", args[1]):
            raise Refused(f"not a month (YYYY-MM): {args[1]!r}")
        month = args[1]
    totals = {}
    for row in read_rows():
        if month and not row["date"].startswith(month + "-"):
            continue
        totals[row["category"]] = totals.get(row["category"], Decimal("0")) + Decimal(row["amount"])
    for category in sorted(totals, key=lambda c: c.encode()):
        print(f"{category}\t{money(totals[category])}")
    print(f"TOTAL\t{money(sum(totals.values(), Decimal('0')))}")
    return 0


COMMANDS = {"add": cmd_add, "report": cmd_report}


def main(argv):
    if not argv or argv[0] not in COMMANDS:
        print(f"usage: ledger.py {{{','.join(COMMANDS)}}} ...", file=sys.stderr)
        return 2
    try:
        return COMMANDS[argv[0]](argv[1:])
    except Refused as e:
        print(f"ledger: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
