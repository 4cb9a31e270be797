#!/usr/bin/env python3
"""Whether two RocksDB databases ran with the same options: their newest OPTIONS files (the DB
options, and one column family's options and table options each) and their LOGs' block-cache
options. Prints each difference and exits 1 on any but the ones ALLOWED names.

Usage: same-rocksdb-options.py DIR_A FAMILY_A DIR_B FAMILY_B
  FAMILY as the OPTIONS file names it (Gadget's column family `0:usertable` is `0\\:usertable`).
"""
import pathlib
import re
import sys

# Differences that do not touch a put-and-get workload, each with why.
ALLOWED = {
    "create_missing_column_families": "Gadget creates its column families itself",
    "listeners": "db_bench's own error-handler listener",
    "merge_operator": "Flink's merge operator, which no put or get reaches",
}


def newest_options(folder):
    files = sorted(folder.glob("OPTIONS-*"), key=lambda p: int(p.name.split("-")[1]))
    if not files:
        sys.exit(f"{folder}: no OPTIONS file")
    return files[-1]


def sections(path):
    out, current = {}, None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'\[([\w/]+)(?: "(.*)")?\]', line)
        if m:
            current = out.setdefault((m.group(1), m.group(2)), {})
        elif current is not None:
            key, _, value = line.partition("=")
            current[key] = value
    return out


def cache_options(folder):
    log = (folder / "LOG").read_text(errors="replace")
    start = log.find("block_cache_options:")
    if start < 0:
        sys.exit(f"{folder}/LOG: no block_cache_options")
    lines = log[start:].splitlines()[1:7]
    return {k.strip(): v.strip() for k, _, v in (l.replace(" :", ":").partition(":") for l in lines)}


def differences(a, family_a, b, family_b):
    """The options that differ between databases `a` and `b` (folders), their column families
    named as the OPTIONS files name them: (what, option, a's value, b's value, why allowed or
    None), in order."""
    sa, sb = sections(newest_options(a)), sections(newest_options(b))
    pairs = [
        ("DBOptions", sa.get(("DBOptions", None)), sb.get(("DBOptions", None))),
        ("CFOptions", sa.get(("CFOptions", family_a)), sb.get(("CFOptions", family_b))),
        (
            "TableOptions/BlockBasedTable",
            sa.get(("TableOptions/BlockBasedTable", family_a)),
            sb.get(("TableOptions/BlockBasedTable", family_b)),
        ),
        ("block cache", cache_options(a), cache_options(b)),
    ]
    found = []
    for kind, x, y in pairs:
        if x is None or y is None:
            sys.exit(f"{kind}: no such section in {a if x is None else b} for the column family given")
        for key in sorted(set(x) | set(y)):
            if x.get(key) != y.get(key):
                found.append((kind, key, x.get(key), y.get(key), ALLOWED.get(key)))
    return found


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    a, fa, b, fb = pathlib.Path(sys.argv[1]), sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
    differ = 0
    for kind, key, x, y, why in differences(a, fa, b, fb):
        print(f"{'allowed' if why else 'DIFFERENT'}: {kind} {key}: {a}={x} {b}={y}"
              f"{f' ({why})' if why else ''}")
        differ += why is None
    if differ:
        sys.exit(f"{differ} options differ between {a} and {b}: the two did not run the same store")
    print(f"same options: {a} and {b} (but the allowed differences above)")


if __name__ == "__main__":
    main()
