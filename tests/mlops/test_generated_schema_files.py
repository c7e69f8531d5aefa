"""Generated schema files at the schema-file door: every one loads right or is refused clearly.

The door is :func:`mlops.data.schema_file.parse_schema_file`, which every reader of a user's
schema file goes through (``load_schema_file``: validate-data, ``mlops card``, the model choice).
A generator builds a valid declaration from the documented rules (distinct columns in their
roles, at least one feature, two label values, slices on declared columns with strictly
increasing finite bins for numeric ones, behavioural tests on features, a registered-model
name matching the name pattern), writes it as YAML or JSON with any unicode in the names, and
then, most of the time, breaks it one way, knowing beforehand what the loader must answer:

- a required key dropped, an unknown key (top level or nested), a value of the wrong type,
  nested garbage, a column declared twice, a key written twice in the text, a non-mapping
  root: refused, with a :class:`~mlops.data.dataset.DatasetError` naming the key;
- a raw YAML token in place of a text or a number (``yes``, ``~``, ``.nan``, ``0x1F``, ``12:30``,
  dates, tags, aliases, broken syntax): a YAML error is a ``DatasetError`` saying so; a token
  YAML reads as anything but text where text is declared is refused naming the key; a
  non-finite number where a number is declared is refused naming the key; otherwise it loads
  with exactly the value YAML reads.

A declaration that loads must hold exactly the values written, and must come back equal through
both ways it travels: ``to_yaml`` (``mlops data init`` writes it) and the JSON a Dataset's metadata
carries. Nothing else may ever escape the loader (no TypeError, KeyError, yaml internals).

``MLOPS_FUZZ_EXAMPLES`` sets the examples per test (CI: 300, ~5 s). The issue's 10,000 is a hand run:
``MLOPS_FUZZ_EXAMPLES=10000 pytest -p no:xdist --timeout=0 -q tests/mlops/test_generated_schema_files.py``.

Figures (by hand, the shared 2-core machine, beside other jobs): 10,000 examples, 0 failures, 478 s.
On the way (3,000-example runs) the generator found, each fixed in the loader or its models:

- a key written twice (``label: a`` then ``label: b``) loaded with the last one silently: now a YAML
  error naming the key (``found the key 'label' twice``);
- a key YAML reads as no text (``False: x``, ``1: x``) was refused as ``0: Keys should be strings``,
  naming neither key nor value: now ``the key False is not text … quote it``;
- an integer of 5,000 digits leaked Python's ``ValueError`` (4300-digit limit) out of the YAML reader:
  now a DatasetError saying the file is no valid YAML;
- ``delta: .nan`` / ``shift: .nan`` / ``.inf`` loaded into a behavioural test, and a slice's bins
  ``[.nan, 1]`` passed the increasing-edges check (NaN compares false): now refused as non-finite;
- a JSON file as Python's ``json.dump`` writes it (``"\\ud83d\\ude00"`` for an emoji) loaded two halves of
  a surrogate pair, a column name no data has: now joined into the character (a lone half is refused);
- a column name holding a NEL (U+0085) came back from ``to_yaml`` as a space: now written escaped.

Left as they are: pydantic's lax mode reads YAML ``true`` as 1.0 where a number is declared and
``!!binary`` bytes as their text; a raw NEL inside a JSON string is a YAML line break (PyYAML reads
JSON as YAML), so such a file loads a space there; a ``!!set`` of columns loads in hash order.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.card_fields import CardFields
from mlops.data.dataset import DatasetError, label_text
from mlops.data.schema_file import SchemaFile, parse_schema_file
from mlops.data.slice_spec import SliceSpec
from mlops.vocabulary import NAME_PATTERN

EXAMPLES = int(os.environ.get("MLOPS_FUZZ_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    database=None,
)
URI = "generated/schema.yaml"
SENTINEL = "ZQXSENTINELZQX"

KNOWN_KEYS = {
    name
    for model in (SchemaFile, CardFields, SliceSpec, InvarianceTest, DirectionalTest)
    for name in model.model_fields
}
TEXT_FIELDS = ("label", "positive_label", "split_key", "expectation_suite")
LIST_FIELDS = ("numeric_features", "categorical_features", "protected_attributes", "ignored_columns")
ROLE_FIELDS = ("label", *LIST_FIELDS)

# Any unicode but surrogates (which UTF-8 text, hence a file, cannot hold).
TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
NAMES = st.text(st.characters(codec="utf-8"), min_size=1, max_size=10)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64) | st.integers(-(10**6), 10**6)


@dataclass
class Case:
    """A document, its text, and what the loader must answer."""

    document: Any
    text: str = ""
    refuse: bool = False
    """True: a DatasetError naming one of ``names`` is the only right answer."""
    names: tuple[str, ...] = ()
    either: bool = False
    """True: loading or refusing are both right (the value's own validity is not the generator's to say)."""
    check: dict[Any, Any] = field(default_factory=dict)
    """Dotted path → the exact value a loaded declaration must hold there."""
    finite_at: str | tuple[str, ...] = ""
    """A number's path: when it loads, it must be finite."""


# ---------------------------------------------------------------------------------------------
# Valid declarations, from the documented rules


@st.composite
def declarations(draw: st.DrawFn) -> dict[str, Any]:
    columns = draw(st.lists(NAMES, min_size=2, max_size=9, unique=True))
    label, rest = columns[0], columns[1:]
    roles = [draw(st.sampled_from(LIST_FIELDS)) for _ in rest]
    grouped: dict[str, list[str]] = {name: [] for name in LIST_FIELDS}
    for column, role in zip(rest, roles, strict=True):
        grouped[role].append(column)
    if not grouped["numeric_features"] and not grouped["categorical_features"]:
        grouped["numeric_features"].append(grouped[roles[0]].pop(0))
    positive, negative = draw(
        st.sampled_from([("1", "0"), ("yes", "no"), ("default", "paid")])
        | st.tuples(TEXT, TEXT).filter(lambda pair: label_text(pair[0]) != label_text(pair[1]))
    )
    document: dict[str, Any] = {
        "label": label,
        "positive_label": positive,
        "negative_label": negative,
        "numeric_features": grouped["numeric_features"],
    }
    for name in ("categorical_features", "protected_attributes", "ignored_columns"):
        if draw(st.booleans()) or grouped[name]:
            document[name] = grouped[name]
    if draw(st.booleans()):
        document["favourable_class"] = draw(st.sampled_from(["positive", "negative"]))
    if draw(st.booleans()):
        document["missing_values"] = draw(st.lists(TEXT, max_size=3))
    document.update(draw(optional_parts(grouped)))
    return document


def edges(min_size: int) -> st.SearchStrategy[list[float]]:
    return st.lists(FINITE, min_size=min_size, max_size=5, unique_by=float).map(
        lambda xs: sorted(xs, key=float)
    )


@st.composite
def optional_parts(draw: st.DrawFn, grouped: dict[str, list[str]]) -> dict[str, Any]:
    parts: dict[str, Any] = {}
    numeric, categorical = grouped["numeric_features"], grouped["categorical_features"]
    protected = grouped["protected_attributes"]
    sliceable = numeric + categorical + protected
    if draw(st.booleans()) and sliceable:
        slices = []
        for _ in range(draw(st.integers(1, 2))):
            chosen = draw(st.lists(st.sampled_from(sliceable), min_size=1, max_size=3, unique=True))
            spec: dict[str, Any] = {"columns": chosen}
            bins = {c: draw(edges(2)) for c in chosen if c in numeric and c not in protected}
            if bins:
                spec["bins"] = bins
            slices.append(spec)
        parts["slices"] = slices
    if draw(st.booleans()) and protected:
        parts["protected_bins"] = {
            c: draw(edges(1)) for c in draw(st.lists(st.sampled_from(protected), unique=True))
        }
    if draw(st.booleans()):
        parts["split_key"] = draw(TEXT)
    if draw(st.booleans()):
        parts["expectation_suite"] = draw(TEXT)
    features = numeric + categorical
    if draw(st.booleans()):
        parts["invariance"] = [
            {"feature": draw(st.sampled_from(features)), "perturbation": "permute"}
            for _ in range(draw(st.integers(0, 2)))
        ]
    if draw(st.booleans()) and numeric:
        parts["directional"] = [
            {
                "feature": draw(st.sampled_from(numeric)),
                "delta": draw(FINITE.filter(lambda x: x != 0)),
                "expectation": draw(st.sampled_from(["non_decreasing", "non_increasing"])),
                "tolerance": draw(st.floats(0, 1)),
            }
            for _ in range(draw(st.integers(0, 2)))
        ]
    if draw(st.booleans()):
        parts["card"] = {"overview": draw(TEXT), "owners": draw(st.lists(TEXT, max_size=2))}
    if draw(st.booleans()):
        parts["model_name"] = draw(
            st.from_regex(NAME_PATTERN, fullmatch=True).filter(lambda s: len(s) < 40) | st.just("")
        )
    return parts


# ---------------------------------------------------------------------------------------------
# Ways to break one


def render(document: Any, as_json: str | bool) -> str:
    """YAML, or JSON (``as_json``): "ascii" as Python's json.dump writes it, \\u escapes (surrogate pairs
    beyond the BMP) for every other character; "raw" with them as they are, but a NEL, which YAML reads
    as a line break (left, see above)."""
    if as_json:
        text = json.dumps(document, ensure_ascii=False)
        return json.dumps(document) if as_json == "ascii" or "\x85" in text else text
    text = yaml.safe_dump(document, allow_unicode=True, sort_keys=False)
    if "\x85" in text:  # PyYAML writes a NEL raw in single quotes and reads it back as a space: escape all
        text = yaml.safe_dump(document, allow_unicode=False, sort_keys=False)
    return text


def printable(text: str) -> bool:
    """False when ``text`` holds a character the YAML spec does not allow raw in a file (e.g. DEL, which
    JSON allows): such a file is refused as no YAML, a DatasetError like every other."""
    return not yaml.reader.Reader.NON_PRINTABLE.search(text)


def scalars() -> st.SearchStrategy[Any]:
    return st.none() | st.booleans() | st.integers() | st.floats() | TEXT


def garbage() -> st.SearchStrategy[Any]:
    """Nested junk that no field accepts: a list whose first item is a mapping of unknown keys."""
    inner = st.recursive(
        scalars(), lambda kids: st.lists(kids, max_size=3) | st.dictionaries(TEXT, kids, max_size=3)
    )
    return st.dictionaries(TEXT.map(lambda k: "x_" + k), inner, min_size=1, max_size=3).map(lambda d: [d])


WRONG_FOR = {
    "text": st.none() | st.booleans() | st.integers() | st.floats() | st.lists(TEXT, max_size=2),
    "list": st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | TEXT
    | st.dictionaries(NAMES, TEXT, min_size=1, max_size=2),
    "mapping": st.booleans()
    | st.integers()
    | st.floats()
    | TEXT.filter(lambda t: t.strip() != "")
    | st.lists(TEXT, min_size=1, max_size=2),
    "choice": TEXT.filter(lambda t: t not in ("positive", "negative")) | st.integers() | st.none(),
}
KIND_OF = {
    **dict.fromkeys(TEXT_FIELDS + ("negative_label", "model_name"), "text"),
    **dict.fromkeys(LIST_FIELDS + ("missing_values", "slices", "invariance", "directional"), "list"),
    **dict.fromkeys(("protected_bins", "card"), "mapping"),
    "favourable_class": "choice",
}

YAML_TOKENS = [
    "yes", "no", "on", "off", "true", "False", "~", "null", "Null", "", ".nan", ".NaN", ".inf", "-.inf",
    "0x1F", "0o17", "017", "1_000", "12:30", "1:20:30", "2001-12-14", "2001-12-14t21:59:43.10-05:00",
    "1e3", "1.0e+400", "-1.0e+400", "3.25", "-0", "+12", "'quoted'", '"dq\\u00e9"', "!!binary aGk=",
    "!!str 12", "!!int '7'", "!!float '1'", "!!python/name:os.system", "!!python/object:object {}",
    "!custom x", "*undefined", "&anchor value", "[a, b", "{a: 1", '"unterminated', "'it''s'", "- dash",
    "? complex", "%TAG", "@at", "`tick", "a: b", "|", ">", "#comment", "x #y", "\t", "[]", "{}",
    "!!set {a, b}", "!!omap [a: 1]", "<<: {a: 1}", "1" * 5000, "1." + "1" * 5000, "[" * 200,
]  # fmt: skip


def yaml_value(token: str) -> tuple[bool, Any]:
    """(True, the value) YAML reads for ``token`` as a mapping's value, or (False, None) when it is no YAML."""
    try:
        loaded = yaml.safe_load(f"k: {token}\n")
    except (yaml.YAMLError, ValueError):  # ValueError: an integer beyond Python's 4300 digits
        return False, None
    if not isinstance(loaded, dict) or set(loaded) != {"k"}:
        return False, None
    return True, loaded["k"]


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    document = draw(declarations())
    as_json = draw(st.sampled_from(["", "raw", "ascii"]))  # "": YAML
    how = draw(
        st.sampled_from(
            [
                "valid",
                "drop",
                "unknown",
                "wrong_type",
                "garbage",
                "duplicate",
                "twice",
                "root",
                "token",
                "number",
            ]
        )
    )
    note(f"mutation: {how}")
    if how == "valid":
        return Case(document, render(document, as_json), check={k: v for k, v in document.items()})
    key: Any
    if how == "drop":
        key = draw(st.sampled_from(["label", "numeric_features"]))
        del document[key]
        return Case(document, render(document, as_json), refuse=True, names=(key,))
    if how == "unknown":
        key = draw(NAMES.filter(lambda k: k not in KNOWN_KEYS) | st.integers() | st.booleans())
        where = draw(st.sampled_from(["top", "card", "slices", "invariance"]))
        value = draw(scalars())
        if where == "top":
            document[key] = value
        elif where == "card":
            document.setdefault("card", {})[key] = value
        else:
            item = {"columns": [document["label"]]} if where == "slices" else {"feature": document["label"]}
            document[where] = [*document.get(where, []), {**item, key: value}]
        shown = str(json.loads(json.dumps({key: 0})).popitem()[0]) if as_json else str(key)
        return Case(document, render(document, as_json), refuse=True, names=(shown,))
    if how in ("wrong_type", "garbage"):
        key = draw(st.sampled_from(sorted(KIND_OF)))
        value = draw(WRONG_FOR[KIND_OF[key]] if how == "wrong_type" else garbage())
        if as_json and isinstance(value, float) and not math.isfinite(value):
            value = 1.5  # JSON has no NaN/Infinity: a float is still the wrong type everywhere below
        document[key] = value
        return Case(document, render(document, as_json), refuse=True, names=(key,))
    if how == "duplicate":
        declared = [
            (role, c)
            for role in ROLE_FIELDS
            for c in ([document[role]] if role == "label" else document.get(role, []))
        ]
        _, column = draw(st.sampled_from(declared))
        role = draw(st.sampled_from(LIST_FIELDS))
        document[role] = [*document.get(role, []), column]
        return Case(document, render(document, as_json), refuse=True, names=(repr(column), column))
    if how == "twice":
        key = draw(st.sampled_from(["label", "numeric_features", "positive_label"]))
        text = render(document, as_json=False) + yaml.safe_dump(
            {key: document.get(key, "x")}, allow_unicode=True
        )
        return Case(document, text, refuse=True, names=(key,))
    if how == "root":
        root = draw(st.lists(scalars(), max_size=3) | scalars() | st.just([document]))
        text = draw(st.sampled_from([render(root, as_json), "", "---\n...\n", "# only a comment\n"]))
        return Case(root, text, refuse=True, names=("must be a mapping",))
    # A raw YAML token where text is declared ("token") or where a number is ("number").
    token = draw(st.sampled_from(YAML_TOKENS) | st.integers().map(str) | st.floats().map(repr))
    ok, value = yaml_value(token)
    path: str | tuple[str, ...]
    if how == "token":
        key = draw(st.sampled_from(["label", "split_key", "expectation_suite", "numeric_features", "card"]))
        if key == "numeric_features":
            document[key] = [*document[key], SENTINEL]
            path, names = f"{key}.{len(document[key]) - 1}", (key,)
        elif key == "card":
            document["card"] = {**document.get("card", {}), "overview": SENTINEL}
            path, names = "card.overview", ("card.overview",)
        else:
            document[key] = SENTINEL
            path, names = key, (key,)
        text = render(document, as_json=False)
        text = text.replace(SENTINEL, token, 1)
        if not ok:
            return Case(document, text, refuse=True, names=("not valid YAML", "must be a mapping", key))
        if isinstance(value, str | bytes):  # !!binary: pydantic reads UTF-8 bytes as their text
            return Case(
                document, text, either=True, check={path: value if isinstance(value, str) else value.decode()}
            )
        return Case(document, text, refuse=True, names=names)
    feature = (document["numeric_features"] or [document["label"]])[0]
    where = draw(st.sampled_from(["delta", "shift", "bins"]))
    if where == "delta":
        document["directional"] = [{"feature": feature, "delta": SENTINEL, "expectation": "non_decreasing"}]
        path = "directional.0.delta"
    elif where == "shift":
        document["invariance"] = [{"feature": feature, "perturbation": "shift", "shift": SENTINEL}]
        path = "invariance.0.shift"
    else:  # a numeric column's slice: its first bin edge below a top edge no float exceeds
        document["slices"] = [{"columns": [feature], "bins": {feature: [SENTINEL, 1.7e308]}}]
        path = ("slices", "0", "bins", feature, "0")  # a tuple: a column's name may hold a dot
    key = path[0] if isinstance(path, tuple) else path.split(".")[0]
    text = render(document, as_json=False).replace(repr(SENTINEL), token).replace(SENTINEL, token)
    if not ok:
        return Case(document, text, refuse=True, names=("not valid YAML", "must be a mapping", key))
    if isinstance(value, float) and not math.isfinite(value):
        return Case(document, text, refuse=True, names=(key,))
    # A number loads as exactly what YAML read (or is refused on its own merits: a delta of 0, a bin
    # edge not below the top one); text that is no number is refused. Loaded, it is finite.
    check = {path: value} if is_number(value) else {}
    return Case(document, text, either=True, check=check, finite_at=path, names=(key,))


# ---------------------------------------------------------------------------------------------
# The door


def at(loaded: SchemaFile, path: str | tuple[str, ...]) -> Any:
    value: Any = loaded
    for part in path if isinstance(path, tuple) else path.split("."):
        if isinstance(value, dict):
            value = value[part]
        else:
            value = value[int(part)] if part.isdigit() else getattr(value, part)
    return value


def plain(value: Any) -> Any:
    """A loaded value as the document wrote it: tuples as lists, models as their given keys."""
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return plain(value.model_dump())
    return value


def holds(loaded: Any, written: Any) -> bool:
    """Every key and item written is in the loaded value, equal (numbers as numbers)."""
    if isinstance(written, dict):
        return isinstance(loaded, dict) and all(
            k in loaded and holds(loaded[k], v) for k, v in written.items()
        )
    if isinstance(written, list):
        return isinstance(loaded, list) and len(loaded) == len(written) and all(map(holds, loaded, written))
    if is_number(written):
        return is_number(loaded) and float(loaded) == float(written)
    return type(loaded) is type(written) and loaded == written


def answer(case: Case) -> SchemaFile | DatasetError:
    try:
        return parse_schema_file(case.text, URI)
    except DatasetError as exc:
        return exc
    except Exception as exc:  # the finding: anything but the loader's own error escaped
        pytest.fail(f"{type(exc).__name__} escaped the loader: {exc}\n--- schema file ---\n{case.text}")


@SETTINGS
@given(case=cases())
def test_every_generated_schema_file_loads_exactly_or_is_refused_naming_the_key(case: Case) -> None:
    note(case.text)
    if not printable(case.text):
        case = Case(case.document, case.text, refuse=True, names=("not valid YAML",))
    result = answer(case)
    if isinstance(result, DatasetError):
        message = str(result)
        assert case.refuse or case.either or case.check, f"a valid declaration was refused: {message}"
        assert URI in message, message
        if case.names:
            assert any(name in message for name in case.names), f"{message!r} names none of {case.names}"
        return
    assert not case.refuse, (
        f"accepted a declaration that must be refused (names: {case.names}): {plain(result)}"
    )
    for path, value in case.check.items():
        assert holds(plain(at(result, path)), plain(value)), (
            f"{path}: wrote {value!r}, loaded {at(result, path)!r}"
        )
    if case.finite_at:
        assert math.isfinite(at(result, case.finite_at)), (
            f"{case.finite_at} loaded as {at(result, case.finite_at)}"
        )
    again = parse_schema_file(result.to_yaml(header="written back"), URI)
    assert again == result, f"to_yaml does not round-trip: {plain(again)} != {plain(result)}"
    carried = json.loads(json.dumps(result.model_dump(mode="json"), allow_nan=False))
    assert SchemaFile.model_validate(carried) == result, "the JSON a Dataset carries does not round-trip"
