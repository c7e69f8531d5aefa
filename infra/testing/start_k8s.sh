#!/usr/bin/env bash
# Start etcd + a real kube-apiserver (+ kube-controller-manager) on 127.0.0.1, all built by build_k8s.sh
# (Kubernetes 1.34, etcd 3.6). No kubelet or scheduler here: pods stay Pending unless a node is added
# (start_node.sh). CRDs' CEL validation rules run.
# Env: DIR (state, required), PORT, ETCD_PORT, ETCD_PEER_PORT (default ETCD_PORT+1; give a free one: the port
# after a free port may be taken), KCM_PORT (controller manager; default PORT+3814), K8S_BIN (binaries from build_k8s.sh), KCM=1|0.
# Last stdout line: the kubeconfig path (admin, token auth, RBAC on).
# Adapted from ../shared/recipes/start_k8s.sh.
set -euo pipefail
D=${DIR:?set DIR to a state directory}; BIN=${K8S_BIN:-${HOME}/.cache/k8s-build/bin}
PORT=${PORT:-6443}; EP=${ETCD_PORT:-2379}; PP=${ETCD_PEER_PORT:-$((EP+1))}; KCM=${KCM:-1}; KP=${KCM_PORT:-$((PORT+3814))}; TOKEN=${TOKEN:-local-admin-token}
for b in etcd kube-apiserver; do
  [ -x "$BIN/$b" ] || { echo "no $b in $BIN: run infra/testing/build_k8s.sh once"; exit 1; }
done
mkdir -p "$D/etcd-data" "$D/certs"
[ -f "$D/sa.key" ] || { openssl genrsa -out "$D/sa.key" 2048 2>/dev/null; openssl rsa -in "$D/sa.key" -pubout -out "$D/sa.pub" 2>/dev/null; }
echo "$TOKEN,admin,admin-uid,system:masters" > "$D/tokens.csv"
"$BIN/etcd" --name k8s --data-dir "$D/etcd-data" --listen-client-urls "http://127.0.0.1:$EP" --advertise-client-urls "http://127.0.0.1:$EP" \
  --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
  --initial-cluster "k8s=http://127.0.0.1:$PP" > "$D/etcd.log" 2>&1 &
echo $! > "$D/etcd.pid"
until curl -sf "http://127.0.0.1:$EP/health" >/dev/null 2>&1; do
  kill -0 "$(cat "$D/etcd.pid")" 2>/dev/null || { echo "etcd died, see $D/etcd.log"; tail -5 "$D/etcd.log"; exit 1; }; sleep 0.1; done
"$BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$EP" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \
  --secure-port="$PORT" --cert-dir="$D/certs" --token-auth-file="$D/tokens.csv" --authorization-mode=RBAC \
  --service-cluster-ip-range=10.0.0.0/24 --allow-privileged=true \
  --service-account-key-file="$D/sa.pub" --service-account-signing-key-file="$D/sa.key" \
  --service-account-issuer=https://kubernetes.default.svc.cluster.local \
  --disable-admission-plugins=ServiceAccount --enable-priority-and-fairness=false > "$D/apiserver.log" 2>&1 &
echo $! > "$D/apiserver.pid"
until curl -sfk -H "Authorization: Bearer $TOKEN" "https://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; do
  kill -0 "$(cat "$D/apiserver.pid")" 2>/dev/null || { echo "kube-apiserver died, see $D/apiserver.log"; tail -5 "$D/apiserver.log"; exit 1; }; sleep 0.1; done
cat > "$D/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://127.0.0.1:$PORT", certificate-authority: "$D/certs/apiserver.crt"}
users:
- name: admin
  user: {token: "$TOKEN"}
contexts:
- name: local
  context: {cluster: local, user: admin}
current-context: local
KC
if [ "$KCM" = 1 ] && [ -x "$BIN/kube-controller-manager" ]; then
  # nodelifecycle stays on: it clears a new node's not-ready taint (a node added later needs it).
  "$BIN/kube-controller-manager" --kubeconfig="$D/kubeconfig" --authentication-kubeconfig="$D/kubeconfig" \
    --authorization-kubeconfig="$D/kubeconfig" --bind-address=127.0.0.1 --secure-port=$KP \
    --leader-elect=false --service-account-private-key-file="$D/sa.key" --root-ca-file="$D/certs/apiserver.crt" \
    --controllers='*,-nodeipam,-cloud-node-lifecycle,-attachdetach,-persistentvolume-binder,-route,-service' > "$D/kcm.log" 2>&1 &
  echo $! > "$D/kcm.pid"
fi
echo "$D/kubeconfig"
