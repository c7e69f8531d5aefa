#!/usr/bin/env bash
# Mutation testing of the promotion gates (mutmut 3; configuration in pyproject.toml [tool.mutmut]).
# Not part of ./test.sh: a full run takes ~15 min on 2 cores. Results and survivors: benchmarks/MUTATION.md.
#
#   benchmarks/mutation.sh            # fresh run: removes mutants/ and mutates every gate module again
#   MAX_CHILDREN=1 benchmarks/mutation.sh
#
# Prints `mutmut results --all true` to benchmarks/.out/mutation-results.txt and a per-function summary.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .venv/bin/python ]; then export PATH="$PWD/.venv/bin:$PATH"; fi
# mutmut puts mutants/ first on sys.path; an inherited PYTHONPATH to the source tree would shadow it.
unset PYTHONPATH
mutmut --version
rm -rf mutants
mutmut run --max-children "${MAX_CHILDREN:-2}" > /dev/null 2>&1 || true  # its progress bar is one long line
mkdir -p benchmarks/.out
mutmut results --all true > benchmarks/.out/mutation-results.txt
python -m benchmarks.mutation_summary benchmarks/.out/mutation-results.txt
