#!/usr/bin/env bash
# Build the cluster's controllers from their Go modules, once per machine: JobSet, the Kubeflow Trainer v2
# controller manager, Kueue, the KServe controller manager and CoreDNS. Binaries land in $CONTROLLERS_BIN
# (default ~/.cache/controllers-build/bin); each one's module and version is written beside it in a stamp
# file, and the script returns at once when every binary is there at its pinned version. Each module's
# manifest folder (CRDs, webhook configurations, default configs) is copied to $W/manifests/<name>: the
# cluster's start script installs CRDs and webhooks from there, so objects and controller come from one release.
# Only the Go module proxy is contacted (through `go`, as configured on the machine).
#
# Pins (each the newest release the module proxy serves here that builds with the machine's Go 1.26):
#   JOBSET_VERSION v0.12.0: the JobSet release Trainer v2.3.0's go.mod requires.
#   TRAINER_VERSION v2.3.0: its CRDs match the published ones in ../shared/crds up to descriptions.
#   KUEUE_VERSION v0.17.0: the newest Kueue the proxy lists; it knows TrainJob (trainer v2.2 API, same v1alpha1).
#   KSERVE_VERSION v0.20.0: its InferenceService CRD is byte-identical to the published one.
#   COREDNS_VERSION v1.14.7: cluster DNS, so that pods find each other by the names JobSet's headless Service
#     gives them (torchrun's master address) and reach Services by name, as on any cluster.
set -euo pipefail
JOBSET_VERSION=${JOBSET_VERSION:-v0.12.0}
TRAINER_VERSION=${TRAINER_VERSION:-v2.3.0}
KUEUE_VERSION=${KUEUE_VERSION:-v0.17.0}
KSERVE_VERSION=${KSERVE_VERSION:-v0.20.0}
COREDNS_VERSION=${COREDNS_VERSION:-v1.14.7}
COREDNS_PLUGINS="bind|ready|health|errors|log|loadbalance|cache|kubernetes|loop|forward|reload"
W=${CONTROLLERS_BUILD_DIR:-${HOME}/.cache/controllers-build}; OUT=${CONTROLLERS_BIN:-$W/bin}
command -v go >/dev/null || { echo "no 'go' on PATH: the Go toolchain is needed to build the controllers" >&2; exit 1; }
export GOFLAGS=-buildvcs=false CGO_ENABLED=0
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}  # the machine's Go (>= the modules' `go` lines); never a download
source "$(dirname "$0")/go_caches.sh"  # GOMODCACHE/GOCACHE of this build, drop_go_caches

# name | module@version | package inside the module | the module's manifest folder, copied to $W/manifests/<name>
TARGETS=(
  "jobset-manager|sigs.k8s.io/jobset@$JOBSET_VERSION|.|config/components"
  "trainer-controller-manager|github.com/kubeflow/trainer/v2@$TRAINER_VERSION|./cmd/trainer-controller-manager|manifests/base"
  "kueue-manager|sigs.k8s.io/kueue@$KUEUE_VERSION|./cmd/kueue|config/components"
  "kserve-manager|github.com/kserve/kserve@$KSERVE_VERSION|./cmd/manager|config"
  "coredns|github.com/coredns/coredns@$COREDNS_VERSION|.|"
)
stamp_of() { echo "$OUT/$1.version"; }
MANIFESTS=$W/manifests
stamp() { if [ "$1" = coredns ]; then echo "$2 plugins=$COREDNS_PLUGINS"; else echo "$2"; fi; }  # NAME MODULE
have() { [ -x "$OUT/$1" ] && [ "$(cat "$(stamp_of "$1")" 2>/dev/null)" = "$(stamp "$1" "$2")" ]; }
have_manifests() { [ -z "$2" ] || [ "$(cat "$MANIFESTS/$1/.version" 2>/dev/null)" = "$3" ]; }  # NAME FOLDER MODULE

cached=1
for t in "${TARGETS[@]}"; do
  IFS='|' read -r name mod _ manifests <<<"$t"
  { have "$name" "$mod" && have_manifests "$name" "$manifests" "$mod"; } || cached=0
done
if [ $cached = 1 ]; then
  echo "controllers: cached in $OUT ($(for t in "${TARGETS[@]}"; do IFS='|' read -r _ m _ <<<"$t"; printf '%s ' "$m"; done))"
  exit 0
fi
mkdir -p "$W" "$OUT"
module_dir() { (cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1") | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error")))'; }
t0=$(date +%s)
for t in "${TARGETS[@]}"; do
  IFS='|' read -r name mod pkg manifests <<<"$t"
  { have "$name" "$mod" && have_manifests "$name" "$manifests" "$mod"; } && continue
  src=$(module_dir "$mod")
  if ! have "$name" "$mod"; then
    echo "  building $name from $mod"
    log="$W/$name.log"
    # Built in a copy of the module (so `go build` may complete its go.sum), never by `go install MODULE@VERSION`:
    # that refuses a module with `replace` lines (KServe's) and asks the proxy for the module's version list,
    # which it does not serve for JobSet or KServe (each exact version is served).
    rm -rf "$W/src-$name"; cp -r "$src" "$W/src-$name"; chmod -R u+w "$W/src-$name"
    if [ "$name" = coredns ]; then
      # CoreDNS's compile-time plugin selection (its plugin.cfg, then `go generate`'s directives step), as its
      # docs describe: only the plugins a cluster DNS uses, instead of every cloud and DNSSEC plugin.
      (cd "$W/src-$name" && grep -E "^($COREDNS_PLUGINS):" plugin.cfg >plugin.cfg.kept && mv plugin.cfg.kept plugin.cfg \
        && GOWORK=off go run -mod=mod directives_generate.go) >"$log" 2>&1 \
        || { echo "selecting CoreDNS's plugins failed:" >&2; tail -30 "$log" >&2; exit 1; }
    fi
    (cd "$W/src-$name" && GOWORK=off go build -mod=mod -trimpath -ldflags "-s -w" -o "$OUT/$name" "$pkg") >"$log" 2>&1 \
      || { echo "building $name failed (go build $pkg in $W/src-$name):" >&2; tail -30 "$log" >&2; exit 1; }
    rm -rf "$W/src-$name"
    stamp "$name" "$mod" >"$(stamp_of "$name")"
    echo "  $name built at $(( $(date +%s) - t0 )) s"
  fi
  if [ -n "$manifests" ]; then
    rm -rf "$MANIFESTS/$name"; mkdir -p "$MANIFESTS/$name"
    cp -r "$src/$manifests/." "$MANIFESTS/$name/"; chmod -R u+w "$MANIFESTS/$name"
    echo "$mod" >"$MANIFESTS/$name/.version"
  fi
done
drop_go_caches
echo "controllers: built in $(( $(date +%s) - t0 )) s into $OUT"
