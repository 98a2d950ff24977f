#!/usr/bin/env bash
# make demo: a narrated gray release on a local control plane, with real
# commands and their real output. Run from the repository root by the Makefile,
# which has built bin/ and the control-plane binaries first.
#
# DEMO_KEEP=0 tears the cluster down at the end; by default it keeps running.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cluster_dir="${CLUSTER_DIR:-$root/.cluster}"
bin="$root/bin"
began=$(date +%s)

say() { printf '\n\033[1m# %s\033[0m\n' "$*"; }
# run prints a command as a person would type it, then runs it.
run() {
	printf '$ %s\n' "$*"
	"$@"
}
cluster() { (cd "$root/test" && go run ./cmd/cluster "$@"); }

if [[ -e "$cluster_dir/cluster.state" ]]; then
	echo "demo: a cluster is already recorded in $cluster_dir; run 'make cluster-down' first" >&2
	exit 1
fi

say "Start a local control plane (etcd, kube-apiserver, kube-controller-manager without its deployment controller, kube-scheduler, kwok fake nodes)"
CONTROLLERS='*,-deployment-controller' cluster up "$cluster_dir"
export KUBECONFIG="$cluster_dir/admin.kubeconfig"
export PATH="$bin:$PATH"
# kubectl v1.32 warns about skew with a 1.37 server on every call; the demo
# shows the commands' own output.
kubectl() { command kubectl "$@" 2> >(grep -v 'version difference' >&2); }

say "Install gray-controller from manifests/instead (RBAC, ServiceAccount, Deployment)"
run kubectl apply --server-side -k "$root/manifests/instead" >/dev/null
echo "(applied $(command kubectl kustomize "$root/manifests/instead" 2>/dev/null | grep -c '^kind:') objects)"
# kwok's fake nodes run no containers, so the controller runs here as a local
# process with exactly the ServiceAccount's permissions (impersonation).
run kubectl -n gray-system scale deployment gray-controller --replicas=0 >/dev/null
sa_kubeconfig="$cluster_dir/gray-controller.kubeconfig"
cluster impersonate "$cluster_dir" system:serviceaccount:gray-system:gray-controller "$sa_kubeconfig"
health_port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cluster add "$cluster_dir" gray-controller "http://127.0.0.1:$health_port/readyz" "$bin/gray-controller" \
	--kubeconfig="$sa_kubeconfig" --mode=instead --leader-elect-namespace=gray-system \
	--metrics-bind-address=0 --health-probe-bind-address="127.0.0.1:$health_port"

say "A plain 10-replica Deployment, rolled out by gray-controller exactly like upstream"
run kubectl create deployment web --image=nginx:1.25 --replicas=10
run kubectl rollout status deployment/web --timeout=60s

say "Start a gray release: hold at 20%, then 50%, with a new image, in one command"
run kubectl gray set web 20,50 --image nginx=nginx:1.26
run kubectl gray status web --until held --timeout 60s
run kubectl gray status web

say "Scale while held: the share is kept (4 of 20 on the new image)"
run kubectl scale deployment/web --replicas=20
sleep 2
run kubectl gray status web --until held --timeout 60s
run kubectl get rs -l app=web -o custom-columns=NAME:.metadata.name,IMAGE:.spec.template.spec.containers[0].image,REPLICAS:.spec.replicas,AVAILABLE:.status.availableReplicas

say "Looks good: go on to the next hold point (50%)"
run kubectl gray resume web
run kubectl gray status web --until held --timeout 60s
run kubectl gray status web

say "Changed our mind: roll back to the stable revision, even while held"
run kubectl gray undo web
run kubectl gray status web --until complete --timeout 60s

say "Final state"
run kubectl gray status web
run kubectl gray history web

say "Done in $(($(date +%s) - began)) s"
if [[ "${DEMO_KEEP:-1}" == 0 ]]; then
	cluster down "$cluster_dir"
else
	cat <<EOT
The cluster keeps running. Use it with:

  export KUBECONFIG=$KUBECONFIG
  export PATH=$bin:\$PATH
  kubectl gray --help

Stop it with: make cluster-down
EOT
fi
