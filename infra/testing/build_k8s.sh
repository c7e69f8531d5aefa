#!/usr/bin/env bash
# Build a real kube-apiserver, kube-controller-manager, kube-scheduler and kubelet (v1.20.2) from
# Debian's `kubernetes` source package with Debian's Go, once per machine: the binaries are cached
# in $K8S_BIN (default ~/.cache/k8s-build/bin) and the script returns at once when they are there.
# From scratch it takes 7-12 minutes on 2 cores. Only the machine's own Debian mirror (its apt sources) is contacted.
# Adapted from ../shared/recipes/build_k8s_from_debian.sh (facts in ../shared/README.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${K8S_BUILD_DIR:-${HOME}/.cache/k8s-build}; OUT=${K8S_BIN:-$W/bin}
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubelet)
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! command -v etcd >/dev/null || ! command -v kubectl >/dev/null; then
  $SUDO apt-get update -qq
  command -v etcd >/dev/null || $SUDO apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
  # kubectl: Debian ships it in the `kubernetes-client` package
  command -v kubectl >/dev/null || $SUDO apt-get install -y -qq --no-install-recommends kubernetes-client >/dev/null
fi
cached=1
for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || cached=0; done
if [ $cached = 1 ] && "$OUT/kube-apiserver" --version >/dev/null 2>&1; then
  echo "kubernetes binaries: cached in $OUT ($("$OUT/kube-apiserver" --version))"
  exit 0
fi
echo "kubernetes binaries: building into $OUT (7-12 min, once per machine)"
t0=$(date +%s)
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends golang-go rsync jq make curl etcd-server \
  golang-github-modern-go-reflect2-dev >/dev/null
mkdir -p "$W" "$OUT"; cd "$W"
V=1.20.5+really1.20.2
ORIG=kubernetes_${V}.orig.tar.gz
[ -f "$ORIG" ] || curl -fsS -o "$ORIG" "$(bash "$HERE/debian_mirror.sh")/pool/main/k/kubernetes/$ORIG"
echo "b83c0780efb182d928dc63d46488a847f161f04e40a94b96bf5247dd671ecdfc  $ORIG" | sha256sum -c - >/dev/null
rm -rf kubernetes-1.20.2; tar xzf "$ORIG"; cd kubernetes-1.20.2
# The vendored modern-go/reflect2 v1.0.1 segfaults (map iteration) when built with Go >= 1.18:
# swap in Debian's v1.0.2 (the fix upstream backported).
R=vendor/github.com/modern-go/reflect2; rm -f $R/*.go $R/*.s
cp /usr/share/gocode/src/github.com/modern-go/reflect2/*.go /usr/share/gocode/src/github.com/modern-go/reflect2/*.s $R/
# Built with Go >= 1.16, kube-openapi treats "", 0 and false as null (kubernetes#99804, fixed upstream in
# kube-openapi#230): CRDs and objects with such values (canaryTrafficPercent: 0) would be refused.
T=vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go
sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' $T
grep -q 'if data == nil {' $T
export HOME=$W/home CGO_ENABLED=0; mkdir -p "$HOME"
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubelet" >"$W/make.log" 2>&1 \
  || { tail -30 "$W/make.log"; exit 1; }
for b in "${BINARIES[@]}"; do cp "_output/bin/$b" "$OUT/"; done
cd "$W"; rm -rf kubernetes-1.20.2  # 1.5 GB of sources and objects; the tarball stays for a rebuild
echo "kubernetes binaries: built in $(( $(date +%s) - t0 )) s ($("$OUT/kube-apiserver" --version))"
