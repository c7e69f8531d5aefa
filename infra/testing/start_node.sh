#!/usr/bin/env bash
# Add a real node to a running API server (start_k8s.sh, with the controller manager): containerd + runc +
# a CNI bridge + kube-scheduler + kubelet, from Debian packages and the binaries of build_k8s.sh. Pods really
# run; images come from OCI archives imported here (imagePullPolicy: Never), no registry.
#   KUBECONFIG  admin kubeconfig of the API server (required)
#   N           state directory (pids, logs, containerd root)         BIN  the built binaries
#   IMAGES      OCI archives to import ("a.oci.tar b.oci.tar"); the pause archive of build_node_images.sh
#               must be among them                                      KPORT kubelet port (10250)
#   SCHED_PORT, HEALTHZ_PORT, PROXY_PORT  kube-scheduler's, the kubelet's and kube-proxy's health ports
#               (KPORT+9, KPORT-2, KPORT+6): pass free ports; a taken one makes that process exit, which this
#               script reports (exit 1); kube-proxy's metrics are on PROXY_METRICS_PORT (default PROXY_PORT+1)
#   BRIDGE, SUBNET  the pod network (cni-mlops0, 10.244.0.0/24): pods reach this machine at the subnet's .1
#   CONTAINERD_ROOT images and their unpacked layers (~/.cache/mlops-node/containerd): kept between runs, so
#               an image already imported is not unpacked again; one node at a time uses it
# Cluster DNS: CoreDNS on the bridge's address (COREDNS, from build_controllers.sh).
# Node Ready in about 30 s. Prints the node's name on the last line. Needs install_node.sh.
# This VM's quirks: containerd's restrict_oom_score_adj (no CAP_SYS_RESOURCE, else runc fails with "can't
# get final child's PID from pipe"); no --node-ip=127.0.0.1 (refused); the hostname resolves to this machine.
set -euo pipefail
: "${KUBECONFIG:?set KUBECONFIG to the admin kubeconfig of the API server}" "${IMAGES:?set IMAGES to the OCI archives to import}"
N=${N:-${TMPDIR:-/tmp}/mlops-node}; BIN=${BIN:-${HOME}/.cache/k8s-build/bin}; KPORT=${KPORT:-10250}
SCHED_PORT=${SCHED_PORT:-$((KPORT + 9))}; HEALTHZ_PORT=${HEALTHZ_PORT:-$((KPORT - 2))}; PROXY_PORT=${PROXY_PORT:-$((KPORT + 6))}
PROXY_METRICS_PORT=${PROXY_METRICS_PORT:-$((PROXY_PORT + 1))}
BRIDGE=${BRIDGE:-cni-mlops0}; SUBNET=${SUBNET:-10.244.0.0/24}
CONTAINERD_ROOT=${CONTAINERD_ROOT:-${HOME}/.cache/mlops-node/containerd}
export KUBECONFIG
"$(dirname "$0")/stop_node.sh" >/dev/null 2>&1 || true
mkdir -p "$N/containerd/cni" "$N/kubelet/root" "$N/kubelet/pki"
S=$N/containerd/containerd.sock
containerd config default | sed -e "s|^root = .*|root = \"$CONTAINERD_ROOT\"|" -e "s|^state = .*|state = \"$N/containerd/state\"|" \
  -e "s|^  address = \"/run/containerd/containerd.sock\"|  address = \"$S\"|" -e "s|path = \"/opt/containerd\"|path = \"$N/containerd/opt\"|" \
  -e 's|restrict_oom_score_adj = false|restrict_oom_score_adj = true|' -e 's|sandbox_image = .*|sandbox_image = "localhost/pause:v1"|' \
  -e 's|bin_dir = "/opt/cni/bin"|bin_dir = "/usr/lib/cni"|' -e "s|conf_dir = \"/etc/cni/net.d\"|conf_dir = \"$N/containerd/cni\"|" \
  >"$N/containerd/config.toml"
cat >"$N/containerd/cni/10-podnet.conflist" <<CNI
{"cniVersion": "0.4.0", "name": "mlops-podnet", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": true, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$N/cni-ipam", "ranges": [[{"subnet": "$SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}}, {"type": "loopback"}]}
CNI
# The bridge and its gateway address now, not at the first pod (the CNI plugin adopts it): this machine's
# services are reachable at the gateway from the start, by pods and by a process here alike.
GATEWAY=$(python3 -c "import ipaddress, sys; n = ipaddress.ip_network(sys.argv[1]); print(f'{next(n.hosts())}/{n.prefixlen}')" "$SUBNET")
ip link show "$BRIDGE" >/dev/null 2>&1 || ip link add "$BRIDGE" type bridge
ip addr replace "$GATEWAY" dev "$BRIDGE"
ip link set "$BRIDGE" up
setsid containerd --config "$N/containerd/config.toml" >"$N/containerd.log" 2>&1 & echo $! >"$N/containerd.pid"
until ctr --address "$S" version >/dev/null 2>&1; do
  kill -0 "$(cat "$N/containerd.pid")" 2>/dev/null || { echo "containerd died; last lines of $N/containerd.log:" >&2; tail -n 10 "$N/containerd.log" >&2; exit 1; }
  sleep 0.2
done
# The names an OCI archive holds (index.json's ref names), read from the tar's headers without reading its layers.
archive_names() {
  python3 - "$1" <<'PY'
import json, sys, tarfile
with tarfile.open(sys.argv[1]) as tar:
    for member in tar:
        if member.name in ("index.json", "./index.json"):
            for m in json.load(tar.extractfile(member)).get("manifests", []):
                print(m.get("annotations", {}).get("org.opencontainers.image.ref.name", ""))
            break
PY
}
# Once unpacked, an image's layer blobs are a second copy of it (GBs for the platform image) that running pods
# never read: the snapshots are what containers start from. They are deleted, as containerd 1.7's
# `--discard-unpacked-layers` does; the manifest and config stay, so the image is still listed and resolvable.
discard_layer_blobs() {
  local manifest
  for manifest in $(ctr --address "$S" -n k8s.io images ls | awk -v n="$1" '$1 == n {print $3}'); do
    discard_blobs_below "$manifest"
  done
}
# A manifest's layer blobs, or an index's manifests' ones (followed down, one level per call).
discard_blobs_below() {
  ctr --address "$S" -n k8s.io content get "$1" | python3 -c '
import json, sys
doc = json.load(sys.stdin)
for m in doc.get("manifests", []):
    print("manifest", m["digest"])
for layer in doc.get("layers", []):
    print("layer", layer["digest"])' | while read -r kind digest; do
    if [ "$kind" = layer ]; then ctr --address "$S" -n k8s.io content rm "$digest" >/dev/null 2>&1 || true
    else discard_blobs_below "$digest"
    fi
  done
}
imported=()
for i in $IMAGES; do
  names=$(archive_names "$i"); present=$(ctr --address "$S" -n k8s.io images ls -q)
  missing=0; for name in $names; do grep -qxF "$name" <<<"$present" || missing=1; done
  if [ -n "$names" ] && [ "$missing" = 0 ]; then  # imported by an earlier start: its snapshots are there
    for name in $names; do imported+=("$name"); done; continue
  fi
  names=$(ctr --address "$S" -n k8s.io images import "$i" | sed -n 's/^unpacking \([^ ]*\) .*/\1/p')
  for name in $names; do imported+=("$name"); discard_layer_blobs "$name"; done
done
# Earlier builds of the same images: removed (containerd's GC then drops their layers).
[ ${#imported[@]} -gt 0 ] || { echo "ctr import named no image in $IMAGES" >&2; exit 1; }
for old in $(ctr --address "$S" -n k8s.io images ls -q | grep -v '^sha256:'); do
  keep=0; for name in "${imported[@]}"; do [ "$old" = "$name" ] && keep=1; done
  [ $keep = 1 ] || ctr --address "$S" -n k8s.io images rm "$old" >/dev/null
done
# Cluster DNS: CoreDNS (build_controllers.sh) on the bridge's address, answering for Services and the pods
# of headless Services (JobSet names its pods there: torchrun's master address) from the API server, and
# forwarding every other name to this machine's resolver. The kubelet gives pods this server (clusterDNS).
COREDNS=${COREDNS:-${HOME}/.cache/controllers-build/bin/coredns}
[ -x "$COREDNS" ] || { echo "no CoreDNS at $COREDNS: run infra/testing/build_controllers.sh once" >&2; exit 1; }
DNS_IP=${GATEWAY%/*}
cat >"$N/Corefile" <<CF
.:53 {
    bind $DNS_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $KUBECONFIG
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . /etc/resolv.conf
    cache 5
}
CF
setsid "$COREDNS" -conf "$N/Corefile" >"$N/coredns.log" 2>&1 & echo $! >"$N/coredns.pid"
setsid "$BIN/kube-scheduler" --kubeconfig="$KUBECONFIG" --authentication-kubeconfig="$KUBECONFIG" --authorization-kubeconfig="$KUBECONFIG" \
  --bind-address=127.0.0.1 --secure-port=$SCHED_PORT --leader-elect=false >"$N/scheduler.log" 2>&1 & echo $! >"$N/scheduler.pid"
cat >"$N/kubelet/config.yaml" <<KC
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $KPORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $HEALTHZ_PORT
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
failSwapOn: false
clusterDomain: cluster.local
clusterDNS: ["$DNS_IP"]
resolvConf: /etc/resolv.conf
evictionHard: {}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# This VM mounts cgroup v1 (/sys/fs/cgroup is a tmpfs of v1 hierarchies): 1.34 still runs there when asked.
failCgroupV1: false
KC
NODE=$(hostname)
setsid "$BIN/kubelet" --config="$N/kubelet/config.yaml" --kubeconfig="$KUBECONFIG" --root-dir="$N/kubelet/root" --cert-dir="$N/kubelet/pki" \
  --container-runtime-endpoint="unix://$S" --image-service-endpoint="unix://$S" --hostname-override="$NODE" >"$N/kubelet.log" 2>&1 & echo $! >"$N/kubelet.pid"
deadline=$((SECONDS + 120))
until kubectl get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True; do
  kill -0 "$(cat "$N/kubelet.pid")" 2>/dev/null || { echo "kubelet died; last lines of $N/kubelet.log:" >&2; tail -n 10 "$N/kubelet.log" >&2; exit 1; }
  # A scheduler that could not bind its port exits at once: no pod would ever be placed on the node.
  kill -0 "$(cat "$N/scheduler.pid")" 2>/dev/null || { echo "kube-scheduler died; last lines of $N/scheduler.log:" >&2; tail -n 10 "$N/scheduler.log" >&2; exit 1; }
  [ $SECONDS -lt $deadline ] || { echo "node $NODE not Ready after 120 s; see $N/kubelet.log" >&2; exit 1; }
  sleep 0.5
done
# Services: kube-proxy in iptables mode programs each Service's cluster IP on this machine (pods and this
# machine reach a Service at its cluster IP or DNS name); it waits for its Node object, so it starts now.
# --conntrack-max-per-core=0 leaves the machine's conntrack sysctls alone; stop_node.sh removes its rules.
setsid "$BIN/kube-proxy" --kubeconfig="$KUBECONFIG" --proxy-mode=iptables --cluster-cidr="$SUBNET" \
  --hostname-override="$NODE" --healthz-bind-address="127.0.0.1:$PROXY_PORT" \
  --metrics-bind-address="127.0.0.1:$PROXY_METRICS_PORT" --conntrack-max-per-core=0 >"$N/kube-proxy.log" 2>&1 &
echo $! >"$N/kube-proxy.pid"
until curl -sf --max-time 2 "http://127.0.0.1:$PROXY_PORT/healthz" >/dev/null 2>&1; do
  kill -0 "$(cat "$N/kube-proxy.pid")" 2>/dev/null || { echo "kube-proxy died; last lines of $N/kube-proxy.log:" >&2; tail -n 10 "$N/kube-proxy.log" >&2; exit 1; }
  [ $SECONDS -lt $deadline ] || { echo "kube-proxy not healthy on port $PROXY_PORT after 120 s; see $N/kube-proxy.log" >&2; exit 1; }
  sleep 0.5
done
# The scheduler must still be serving once the node is Ready (it dies within a second of a taken port).
until curl -sk --max-time 2 "https://127.0.0.1:$SCHED_PORT/healthz" 2>/dev/null | grep -q ok; do
  kill -0 "$(cat "$N/scheduler.pid")" 2>/dev/null || { echo "kube-scheduler died; last lines of $N/scheduler.log:" >&2; tail -n 10 "$N/scheduler.log" >&2; exit 1; }
  [ $SECONDS -lt $deadline ] || { echo "kube-scheduler not healthy on port $SCHED_PORT after 120 s; see $N/scheduler.log" >&2; exit 1; }
  sleep 0.5
done
echo "$NODE"
