"""Which file of a downloaded registry version is its model: model.onnx first, else the first .onnx."""

from __future__ import annotations

from pathlib import Path

from mlops.model.onnx_model import onnx_file


def test_model_onnx_wins_then_the_first_onnx_file_then_none(tmp_path: Path) -> None:
    assert onnx_file(tmp_path) is None
    (tmp_path / "README.md").write_text("no model")
    assert onnx_file(tmp_path) is None
    (tmp_path / "b.onnx").write_bytes(b"")
    (tmp_path / "a.onnx").write_bytes(b"")
    assert onnx_file(tmp_path) == tmp_path / "a.onnx"
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "model.onnx").write_bytes(b"")
    assert onnx_file(tmp_path) == tmp_path / "model" / "model.onnx"
