"""No pickle-based loading on the serving or monitoring path: a model or reference file can run no code when read."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATHS = ("serving", "mlops", "monitoring", "components/monitoring", "components/drift")
"""Packages that load artifacts to serve or monitor (those not present yet are checked once they exist)."""
UNSAFE = re.compile(
    r"\bimport (?:c?pickle|cloudpickle|dill|joblib|shelve)\b|\bfrom (?:c?pickle|cloudpickle|dill|joblib|shelve) import"
    r"|\btorch\.load\(|\bread_pickle\(|allow_pickle\s*=\s*True|\bpyfunc\.load_model\(|\bsklearn\.load_model\("
)


def sources() -> list[Path]:
    return sorted(p for base in PATHS if (ROOT / base).is_dir() for p in (ROOT / base).rglob("*.py"))


def test_the_scan_would_catch_pickle_loading() -> None:
    for bad in (
        "import pickle",
        "from joblib import load",
        "torch.load(f)",
        "pd.read_pickle(p)",
        "np.load(p, allow_pickle=True)",
    ):
        assert UNSAFE.search(bad), bad


def test_no_pickle_loading_on_the_serving_and_monitoring_path() -> None:
    files = sources()
    assert any(p.parts[-2] == "serving" for p in files)
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if UNSAFE.search(line)
    ]
    assert offenders == []
