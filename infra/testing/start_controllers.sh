#!/usr/bin/env bash
# Start the real controllers of the cluster path beside a running API server with a node (start_k8s.sh +
# start_node.sh): JobSet, the Kubeflow Trainer v2 controller manager, Kueue and KServe's controller manager,
# the binaries built by build_controllers.sh, each with its release's own CRDs and admission webhooks installed
# first.
# They run as processes of this machine, not as pods: the API server calls their webhook servers at
# https://127.0.0.1:PORT with a CA made here (controller_manifests.py rewrites the releases' Service
# references into those URLs), and their certificate management is off accordingly. Leader election is off
# (one replica each); metrics endpoints are off.
#   KUBECONFIG  admin kubeconfig (required)          N  state directory: configs, certificates, logs, pids
#   JOBSET_PORT TRAINER_PORT KUEUE_PORT KSERVE_PORT  webhook ports, and JOBSET_HEALTH_PORT TRAINER_HEALTH_PORT
#               KUEUE_HEALTH_PORT KSERVE_HEALTH_PORT their readiness probes' ports (all free ports, required)
#   CONTROLLERS_BIN, MANIFESTS  where build_controllers.sh put binaries and manifests
#   PYTHON      a python3 with PyYAML (controller_manifests.py)
# Kueue keeps its release's integrations (TrainJob among them; a shorter list makes its Job webhook panic)
# and, as its default configuration does, manages only jobs that name a LocalQueue (kueue.x-k8s.io/queue-name). KServe's inferenceservice-config is
# the release's, in RawDeployment mode by default and without Ingress objects (there is no ingress controller:
# clients reach a predictor through its Service).
# Prints "controllers ready" on the last line once every controller answers its readiness probe.
set -euo pipefail
: "${KUBECONFIG:?set KUBECONFIG to the admin kubeconfig}" "${N:?set N to a state directory}"
for p in JOBSET_PORT TRAINER_PORT KUEUE_PORT KSERVE_PORT JOBSET_HEALTH_PORT TRAINER_HEALTH_PORT KUEUE_HEALTH_PORT \
         KSERVE_HEALTH_PORT; do
  [ -n "${!p:-}" ] || { echo "set $p to a free port" >&2; exit 1; }
done
export KUBECONFIG
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${CONTROLLERS_BUILD_DIR:-${HOME}/.cache/controllers-build}
BIN=${CONTROLLERS_BIN:-$BUILD/bin}; MANIFESTS=${MANIFESTS:-$BUILD/manifests}; PYTHON=${PYTHON:-python3}
for b in jobset-manager trainer-controller-manager kueue-manager kserve-manager; do
  [ -x "$BIN/$b" ] || { echo "no $b in $BIN: run infra/testing/build_controllers.sh once" >&2; exit 1; }
done
mkdir -p "$N/certs"

# One CA and one serving certificate for 127.0.0.1, shared by the webhook servers.
C=$N/certs
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=mlops-test-webhook-ca" \
  -keyout "$C/ca.key" -out "$C/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$C/tls.key" -out "$C/tls.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$C/ext.cnf"
openssl x509 -req -in "$C/tls.csr" -CA "$C/ca.crt" -CAkey "$C/ca.key" -CAcreateserial -days 2 \
  -extfile "$C/ext.cnf" -out "$C/tls.crt" 2>/dev/null

# name | webhook port | health port | manifest folders (CRDs first)
CONTROLLERS=(
  "jobset-manager|$JOBSET_PORT|$JOBSET_HEALTH_PORT|crd webhook"
  "trainer-controller-manager|$TRAINER_PORT|$TRAINER_HEALTH_PORT|crds webhook"
  "kueue-manager|$KUEUE_PORT|$KUEUE_HEALTH_PORT|crd webhook"
  "kserve-manager|$KSERVE_PORT|$KSERVE_HEALTH_PORT|crd webhook configmap"
)
for ns in kueue-system kserve; do kubectl create namespace "$ns" --dry-run=client -o yaml | kubectl apply -f - >/dev/null; done
for c in "${CONTROLLERS[@]}"; do
  IFS='|' read -r name port _ folders <<<"$c"
  # shellcheck disable=SC2086
  "$PYTHON" "$HERE/controller_manifests.py" "$MANIFESTS/$name" "$name" "$port" "$C/ca.crt" $folders >"$N/$name.objects.yaml" \
    || { echo "rendering $name's manifests failed" >&2; exit 1; }
  kubectl apply --server-side --force-conflicts -f "$N/$name.objects.yaml" >"$N/$name.apply.log" 2>&1 \
    || { echo "installing $name's CRDs and webhooks failed:" >&2; tail -n 20 "$N/$name.apply.log" >&2; exit 1; }
done
kubectl wait --for condition=established --timeout=60s crd --all >/dev/null

# Each controller's configuration: the release's own, moved off the cluster's network (controller_manifests.py).
config() {  # config NAME WEBHOOK_PORT HEALTH_PORT
  local certs="$N/$1/serving-certs"; mkdir -p "$certs"; cp "$C/tls.crt" "$C/tls.key" "$certs/"
  [ "$1" = kserve-manager ] && return 0  # flags only (below); its settings are the inferenceservice-config ConfigMap
  "$PYTHON" "$HERE/controller_manifests.py" config "$MANIFESTS/$1" "$1" "$2" "$3" "$certs"
}
for c in "${CONTROLLERS[@]}"; do
  IFS='|' read -r name port health _ <<<"$c"
  config "$name" "$port" "$health" >"$N/$name.config.yaml"
  # Trainer's configuration has no certDir: controller-runtime's default is $TMPDIR/k8s-webhook-server/serving-certs.
  mkdir -p "$N/$name/tmp/k8s-webhook-server"; ln -sfn "$N/$name/serving-certs" "$N/$name/tmp/k8s-webhook-server/serving-certs"
  flags=(--config="$N/$name.config.yaml")
  if [ "$name" = kueue-manager ]; then
    # Its on-demand visibility API (an aggregated API server with certificates of its own) is not used.
    flags+=(--feature-gates=VisibilityOnDemand=false)
    # With its own certificate management off, Kueue reads its metrics server's certificate from this fixed
    # path of the release (metrics cannot be switched off there): the serving certificate made above.
    mkdir -p /etc/kueue/metrics/certs && cp "$C/tls.crt" "$C/tls.key" /etc/kueue/metrics/certs/
  fi
  [ "$name" != kserve-manager ] || flags=(--webhook-port="$port" --health-probe-addr="127.0.0.1:$health" \
    --metrics-addr=0 --leader-elect=false)
  TMPDIR="$N/$name/tmp" POD_NAMESPACE=kserve setsid "$BIN/$name" "${flags[@]}" >"$N/$name.log" 2>&1 &
  echo $! >"$N/$name.pid"
done
deadline=$((SECONDS + 120))
for c in "${CONTROLLERS[@]}"; do
  IFS='|' read -r name _ health _ <<<"$c"
  until curl -sf --max-time 2 "http://127.0.0.1:$health/readyz" >/dev/null 2>&1; do
    kill -0 "$(cat "$N/$name.pid")" 2>/dev/null || { echo "$name exited; last lines of $N/$name.log:" >&2; tail -n 15 "$N/$name.log" >&2; exit 1; }
    [ $SECONDS -lt $deadline ] || { echo "$name not ready after 120 s; see $N/$name.log" >&2; tail -n 15 "$N/$name.log" >&2; exit 1; }
    sleep 0.3
  done
done
echo "controllers ready"
