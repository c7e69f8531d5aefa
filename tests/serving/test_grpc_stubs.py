"""The checked-in gRPC stubs are what serving/proto/generate.sh makes from the .proto today."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

PROTO = Path(__file__).resolve().parents[2] / "serving" / "proto"
GENERATED = ("grpc_predict_v2_pb2.py", "grpc_predict_v2_pb2.pyi", "grpc_predict_v2_pb2_grpc.py")


def test_generated_stubs_match_the_proto(tmp_path: Path) -> None:
    target = tmp_path / "serving" / "proto"
    target.mkdir(parents=True)
    shutil.copy(PROTO / "grpc_predict_v2.proto", target)
    command = [sys.executable, "-m", "grpc_tools.protoc", "-I.", "--python_out=.", "--pyi_out=.",
               "--grpc_python_out=.", "serving/proto/grpc_predict_v2.proto"]  # fmt: skip
    subprocess.run(command, cwd=tmp_path, check=True)
    for name in GENERATED:
        assert (target / name).read_text() == (PROTO / name).read_text(), (
            f"serving/proto/{name} is stale; run serving/proto/generate.sh"
        )
