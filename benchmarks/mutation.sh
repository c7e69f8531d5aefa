#!/usr/bin/env bash
# Mutation testing (mutmut 3; configuration in pyproject.toml [tool.mutmut]). Results: benchmarks/MUTATION.md.
# Not part of ./test.sh: a full run of the gates takes ~15 min on 2 cores.
#
#   benchmarks/mutation.sh                                    # the promotion gates ([tool.mutmut] as committed)
#   MAX_CHILDREN=1 benchmarks/mutation.sh
#   MODULES="mlops/governance/audit.py" benchmarks/mutation.sh  # issue 27's targets, one run per module,
#   MODULES="a.py b.py" benchmarks/mutation.sh                  #   each against the tests that pin it
#   MODULES=all-targets benchmarks/mutation.sh                  #   (benchmarks/mutation_targets.txt)
#
# A per-module run happens in a copy of the tree (benchmarks/.out/mutation-<module>/) whose pyproject.toml
# says only_mutate = [module] and lists that module's tests, so it never runs the whole selection.
# Prints `mutmut results --all true` to benchmarks/.out/mutation-results[-<module>].txt and a per-function summary.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -x .venv/bin/python ]; then export PATH="$PWD/.venv/bin:$PATH"; fi
# mutmut puts mutants/ first on sys.path; an inherited PYTHONPATH to the source tree would shadow it.
unset PYTHONPATH
mutmut --version
mkdir -p benchmarks/.out

run_here() {  # $1: results file
  rm -rf mutants
  mutmut run --max-children "${MAX_CHILDREN:-2}" > /dev/null 2>&1 || true  # its progress bar is one long line
  mutmut results --all true > "$1"
  python -m benchmarks.mutation_summary "$1"
}

targets() {  # the modules to run, one per line
  if [ "$MODULES" = all-targets ]; then
    grep -v '^#' benchmarks/mutation_targets.txt | awk 'NF {print $1}'
  else
    printf '%s\n' $MODULES
  fi
}

if [ -z "${MODULES:-}" ]; then
  run_here benchmarks/.out/mutation-results.txt
  exit 0
fi
for module in $(targets); do
  tests=$(awk -v m="$module" '$1 == m {$1 = ""; print}' benchmarks/mutation_targets.txt)
  if [ -z "$tests" ]; then
    echo "$module is not in benchmarks/mutation_targets.txt: add it with the test files that pin it" >&2
    exit 2
  fi
  slug=$(echo "$module" | tr '/.' '__')
  work="$ROOT/benchmarks/.out/mutation-$slug"
  rm -rf "$work" && mkdir -p "$work"
  # tar, not rsync: rsync is not on every machine (Debian's base images lack it)
  tar -C . --exclude=./.git --exclude=./.venv --exclude=./mutants --exclude=./benchmarks/.out --exclude=./.mlops \
    -cf - . | tar -C "$work" -xf -
  python - "$work/pyproject.toml" "$module" $tests <<'PY'
import re, sys
path, module, tests = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(path).read()
section = (
    "[tool.mutmut]\n"
    'source_paths = ["mlops", "components", "training", "serving", "delivery"]\n'
    f"only_mutate = [{module!r}]\n".replace("'", '"')
    + 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-p", "no:xdist"]\n'
    + "pytest_add_cli_args_test_selection = [" + ", ".join(f'"{t}"' for t in tests) + "]\n\n"
)
text = re.sub(r"\[tool\.mutmut\]\n.*?(?=\n\[)", section.rstrip("\n") + "\n", text, flags=re.S)
open(path, "w").write(text)
PY
  echo "== $module against: $tests (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
  (cd "$work" && run_here "$ROOT/benchmarks/.out/mutation-results-$slug.txt")
done
