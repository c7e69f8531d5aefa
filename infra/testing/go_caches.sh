# Sourced by build_k8s.sh and build_controllers.sh after they set W (their cache folder).
# The build's own Go caches (modules ~6 GB, objects ~8 GB for Kubernetes and the controllers together), removed
# once every binary is built: the binaries are what is kept, and CI's disk is shared with the images and the tests.
# A failed build keeps them, so a retry resumes. KEEP_GO_CACHES=1 keeps them (e.g. while changing a pin).
export GOMODCACHE=${GOMODCACHE_DIR:-$W/go-mod} GOCACHE=${GOCACHE_DIR:-$W/go-build}
drop_go_caches() {
  [ "${KEEP_GO_CACHES:-0}" = 1 ] && return 0
  chmod -R u+w "$GOMODCACHE" 2>/dev/null || true  # the module cache is read-only by design
  rm -rf "$GOMODCACHE" "$GOCACHE"
}
