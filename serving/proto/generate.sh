#!/usr/bin/env bash
# Regenerate the Python modules of the Open Inference Protocol's gRPC service from
# grpc_predict_v2.proto (run from anywhere; needs grpcio-tools, a dev dependency).
# The generated files are checked in, so serving needs only grpcio and protobuf at
# run time; tests/serving/test_grpc_stubs.py fails when they drift from the .proto.
set -euo pipefail
cd "$(dirname "$0")/../.."
python -m grpc_tools.protoc -I. --python_out=. --pyi_out=. --grpc_python_out=. \
  serving/proto/grpc_predict_v2.proto
