"""Summarise ``mutmut results --all true`` per module and function (see benchmarks/MUTATION.md).

Usage: ``python -m benchmarks.mutation_summary benchmarks/.out/mutation-results.txt``
"""

from __future__ import annotations

import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

MUTANT = re.compile(
    r"^\s*(?P<module>[\w.]+)\.x(?:ǁ(?P<cls>\w+)ǁ|_)(?P<function>\w+?)__mutmut_\d+: (?P<status>.+)$"
)


def summarise(lines: list[str]) -> dict[tuple[str, str], Counter[str]]:
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for line in lines:
        match = MUTANT.match(line)
        if match:
            function = f"{match['cls']}.{match['function']}" if match["cls"] else match["function"]
            counts[(match["module"], function)][match["status"].strip()] += 1
    return counts


def main(path: str) -> None:
    counts = summarise(Path(path).read_text(encoding="utf-8").splitlines())
    per_module: dict[str, Counter[str]] = defaultdict(Counter)
    for (module, function), statuses in sorted(counts.items()):
        per_module[module].update(statuses)
        print(f"{module:45} {function:28} {dict(statuses)}")
    print()
    total: Counter[str] = Counter()
    for module, statuses in sorted(per_module.items()):
        total.update(statuses)
        tested = statuses["killed"] + statuses["survived"] + statuses["timeout"]
        print(
            f"{module:45} killed {statuses['killed']:4} / {tested:4} tested; no tests {statuses['no tests']}"
        )
    tested = total["killed"] + total["survived"] + total["timeout"]
    print(f"{'total':45} killed {total['killed']:4} / {tested:4} tested; no tests {total['no tests']}")


if __name__ == "__main__":
    main(sys.argv[1])
