#!/usr/bin/env bash
# Stop what start_node.sh started (by pid): kubelet, scheduler, CoreDNS, kube-proxy, every container, containerd; unmount the
# kubelet's and containerd's mounts under $N and remove the pod bridge. Safe to run twice.
N=${N:-${TMPDIR:-/tmp}/mlops-node}; BRIDGE=${BRIDGE:-cni-mlops0}
stop() { [ -f "$N/$1.pid" ] && kill "$(cat "$N/$1.pid")" 2>/dev/null; rm -f "$N/$1.pid"; }
stop kubelet; stop scheduler; stop coredns; stop kube-proxy
S=$N/containerd/containerd.sock
if [ -f "$N/containerd.pid" ]; then
  for t in $(ctr --address "$S" -n k8s.io tasks ls -q 2>/dev/null); do ctr --address "$S" -n k8s.io tasks kill -s KILL "$t" 2>/dev/null; done
  sleep 1; stop containerd
fi
# The shims outlive containerd: each left its pid in this node's state directory.
for f in "$N"/containerd/state/io.containerd.runtime.v2.task/k8s.io/*/shim.pid; do
  [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null
done
grep " $N/" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
ip link del "$BRIDGE" 2>/dev/null
# kube-proxy's KUBE-* iptables chains and rules go with it.
BIN=${BIN:-${HOME}/.cache/k8s-build/bin}; [ -x "$BIN/kube-proxy" ] && "$BIN/kube-proxy" --cleanup >/dev/null 2>&1
true
