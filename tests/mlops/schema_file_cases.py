"""The generator of tests/mlops/test_generated_schema_files.py: schema-file cases, each a document, its
text and what the loader must answer.

A valid declaration is built from the documented rules (:func:`declarations`); :func:`cases` then, most of the
time, breaks it one way (a key dropped, unknown, of the wrong type, nested garbage, a column twice, a key
written twice, a non-mapping root, a raw YAML token where text or a number is declared), knowing beforehand
whether the loader must load it (and with which values) or refuse it naming the key.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import note
from hypothesis import strategies as st

from mlops.data.behaviour import DirectionalTest, InvarianceTest
from mlops.data.card_fields import CardFields
from mlops.data.dataset import label_text
from mlops.data.schema_file import SchemaFile
from mlops.data.slice_spec import SliceSpec
from mlops.vocabulary import NAME_PATTERN

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
