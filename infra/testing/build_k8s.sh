#!/usr/bin/env bash
# Build a current single-node Kubernetes from its Go modules, once per machine: kube-apiserver,
# kube-controller-manager, kube-scheduler, kubelet and kube-proxy (k8s.io/kubernetes $K8S_VERSION) and
# etcd (go.etcd.io/etcd/server/v3 $ETCD_VERSION). Binaries are cached in $K8S_BIN (default
# ~/.cache/k8s-build/bin) and the script returns at once when they are there at the pinned versions.
# Only the Go module proxy is contacted (through `go`, as configured on the machine).
#
# Why not `go install MODULE@VERSION`: both modules carry `replace` directives, which `go install` refuses.
#   - k8s.io/kubernetes replaces its 31 `k8s.io/*` staging modules with `./staging/src/k8s.io/*`, and the
#     published module zip leaves `staging/` out (each is a module of its own). We download the module,
#     lay each staging module's published release (k8s.io/X v0.<minor>.<patch>, the same tree cut from
#     the same tag) into `staging/src/k8s.io/X`, and build in the module's own workspace (its go.work).
#   - go.etcd.io/etcd/server/v3 replaces its sibling modules (api, client, pkg) with `../X`. We download
#     it and build with those replace lines dropped: its require lines already name the siblings at the
#     same release, which the proxy serves.
# Versions are set in the build's ldflags as Kubernetes' own build does (kube-apiserver --version).
#
# Pins:
#   K8S_VERSION v1.34.4: the newest 1.34 patch the module proxy serves here; 1.34 still runs on cgroup v1
#     (this VM's /sys/fs/cgroup), which kubelet 1.35+ refuses by default, and on Debian's containerd 1.6.
#   ETCD_VERSION v3.6.8: a 3.6 release (the line Kubernetes 1.34 is tested with) that the proxy serves.
set -euo pipefail
K8S_VERSION=${K8S_VERSION:-v1.34.4}
ETCD_VERSION=${ETCD_VERSION:-v3.6.8}
W=${K8S_BUILD_DIR:-${HOME}/.cache/k8s-build}; OUT=${K8S_BIN:-$W/bin}
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
# Only the Go toolchain and python3 are needed here (no apt: it runs beside install_node.sh in ./test.sh).
command -v go >/dev/null || { echo "no 'go' on PATH: the Go toolchain is needed to build Kubernetes" >&2; exit 1; }

have() {  # have BINARY EXPECTED-VERSION-SUBSTRING
  local v; [ -x "$OUT/$1" ] && v=$("$OUT/$1" --version 2>/dev/null) && [[ "$v" == *"$2"* ]]
}
cached=1
for b in "${BINARIES[@]}"; do have "$b" "$K8S_VERSION" || cached=0; done
have etcd "${ETCD_VERSION#v}" || cached=0
if [ $cached = 1 ]; then
  echo "kubernetes binaries: cached in $OUT ($("$OUT/kube-apiserver" --version), etcd ${ETCD_VERSION})"
  exit 0
fi
echo "kubernetes binaries: building $K8S_VERSION and etcd $ETCD_VERSION into $OUT (once per machine)"
t0=$(date +%s)
mkdir -p "$W" "$OUT"
export GOFLAGS=-buildvcs=false CGO_ENABLED=0
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}  # the machine's Go (>= the modules' `go` lines); never a download
source "$(dirname "$0")/go_caches.sh"  # GOMODCACHE/GOCACHE of this build, drop_go_caches
# Run outside any module or workspace: inside the kubernetes tree its go.work would be consulted.
mod_dir() { (cd / && GOWORK=off GOFLAGS=-mod=mod go mod download -json "$1") | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error")))'; }

# --- etcd ---
if ! have etcd "${ETCD_VERSION#v}"; then
  src=$(mod_dir "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
  rm -rf "$W/etcd"; cp -r "$src" "$W/etcd"; chmod -R u+w "$W/etcd"; cd "$W/etcd"
  # Drop the `X => ../Y` lines (sibling modules of the repository, absent from the module zip; an emptied
  # `replace ( )` block is valid); the FORBIDDEN_DEPENDENCY guards stay.
  sed -i '/=> \.\.\//d' go.mod
  go mod download >"$W/etcd-build.log" 2>&1 || { tail -30 "$W/etcd-build.log" >&2; exit 1; }
  go build -mod=mod -trimpath -ldflags "-s -w" -o "$OUT/etcd" . >>"$W/etcd-build.log" 2>&1 \
    || { echo "etcd build failed (go build in $W/etcd):" >&2; tail -30 "$W/etcd-build.log" >&2; exit 1; }
  cd "$W"; rm -rf "$W/etcd"
  etcd_version=$("$OUT/etcd" --version | sed -n 1p)  # sed reads it all: head would close the pipe (SIGPIPE, exit 141 under pipefail)
  echo "etcd: built ($etcd_version) at $(( $(date +%s) - t0 )) s"
fi

# --- kubernetes ---
src=$(mod_dir "k8s.io/kubernetes@$K8S_VERSION")
K=$W/kubernetes-$K8S_VERSION
rm -rf "$K"; cp -r "$src" "$K"; chmod -R u+w "$K"; cd "$K"
rm -rf vendor  # the zip keeps only vendor/OWNERS; with an empty vendor/ the go command would insist on it
STAGING_VERSION=v0.${K8S_VERSION#v1.}
for m in $(sed -n 's|^\s*\./staging/src/\(k8s.io/[^ ]*\)$|\1|p' go.work); do
  mkdir -p "staging/src/$(dirname "$m")"
  if d=$(mod_dir "$m@$STAGING_VERSION" 2>/dev/null); then cp -r "$d" "staging/src/$m"; continue; fi
  # The sample-* modules (sample-apiserver, sample-controller, sample-cli-plugin) are examples that no
  # binary imports, and the proxy does not serve every release of them; the go command still reads the
  # go.mod of each module the main go.mod replaces, so an unserved one gets an empty module of its name.
  case "$m" in
    k8s.io/sample-*) mkdir -p "staging/src/$m"; printf 'module %s\n\ngo 1.24.0\n' "$m" >"staging/src/$m/go.mod" ;;
    *) echo "staging module $m@$STAGING_VERSION is not served by the module proxy" >&2; exit 1 ;;
  esac
done
chmod -R u+w staging
IFS=. read -r MAJOR MINOR _ <<<"${K8S_VERSION#v}"
pkg=k8s.io/component-base/version
LDFLAGS="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$MAJOR -X $pkg.gitMinor=$MINOR \
  -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ) \
  -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X k8s.io/client-go/pkg/version.gitMajor=$MAJOR \
  -X k8s.io/client-go/pkg/version.gitMinor=$MINOR"
go mod download >"$W/make.log" 2>&1 || true  # warm the module cache; errors surface in the build below
for b in "${BINARIES[@]}"; do
  go build -trimpath -ldflags "$LDFLAGS" -o "$OUT/$b" "./cmd/$b" >>"$W/make.log" 2>&1 \
    || { echo "building $b failed (go build ./cmd/$b in $K):" >&2; tail -30 "$W/make.log" >&2; exit 1; }
  echo "  $b built at $(( $(date +%s) - t0 )) s"
done
cd "$W"; rm -rf "$K"  # sources and the build's objects live in the Go caches; the tree goes
drop_go_caches
k8s_version=$("$OUT/kube-apiserver" --version); etcd_version=$("$OUT/etcd" --version | sed -n 1p)  # sed reads it all: head would close the pipe (SIGPIPE, exit 141 under pipefail)
echo "kubernetes binaries: built in $(( $(date +%s) - t0 )) s ($k8s_version, $etcd_version)"
