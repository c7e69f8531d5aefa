#!/usr/bin/env bash
# Stop what start_k8s.sh started in $DIR.
D=${DIR:?set DIR to the state directory given to start_k8s.sh}
for n in kcm apiserver etcd; do
  if [ -f "$D/$n.pid" ]; then kill "$(cat "$D/$n.pid")" 2>/dev/null; rm -f "$D/$n.pid"; sleep 0.3; fi
done
true
