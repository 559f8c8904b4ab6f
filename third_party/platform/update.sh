#!/bin/sh
# Rewrites the upstream manifests the Platform component embeds, from the Go modules that ship
# them (the module cache; `go mod download` with an explicit version) and kubectl's kustomize,
# as each project builds its release manifest. Run from the repository root:
#   sh third_party/platform/update.sh
# The versions are the ones tests/cluster runs (tests/cluster/binaries.go).
set -eu
LWS=v0.9.0
VOLCANO=v1.14.1
KEDA=v2.21.0
GIE=v1.2.0
# the router CRDs of the Endpoint Pickers that read them (GIE v1.5.0, llm-d-router v0.10.0):
# v1.5.0 renamed an InferenceModelRewrite rule's "split" to "targets", which v1.2.0's CRD prunes
GIE_ROUTER_CRDS=v1.5.0
PROMETHEUS_OPERATOR=v0.88.0
# the Gateway API's standard channel: the version of this module's sigs.k8s.io/gateway-api, whose
# HTTPRoute type the render uses (GIE v1.5.0 tests with v1.3.0 and later: hack/verify-manifests.sh)
GATEWAY_API=v1.5.1

out=third_party/platform
dir() { go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p'; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# LeaderWorkerSet: its release's artifacts/manifests.yaml is `kustomize build config/default`
# with the controller image set (LWS's Makefile, target artifacts).
src=$(dir sigs.k8s.io/lws $LWS)
cp -r "$src/config" "$tmp/lws" && chmod -R u+w "$tmp/lws"
sed -i -e "s|newName: .*|newName: registry.k8s.io/lws/lws|" -e "s|newTag: .*|newTag: $LWS|" "$tmp/lws/manager/kustomization.yaml"
kubectl kustomize "$tmp/lws/default" >"$out/lws.yaml"

# Volcano: its release manifest, installer/volcano-development.yaml (the Helm chart rendered),
# with its images at the version the e2e runs (the file of the v1.14.1 tag names v1.14.0).
src=$(dir volcano.sh/volcano $VOLCANO)
sed "s|\(docker.io/volcanosh/vc-[a-z-]*\):v1.14.0|\1:$VOLCANO|" "$src/installer/volcano-development.yaml" >"$out/volcano.yaml"

# KEDA: its release manifest is `kustomize build config/default` with the images set.
src=$(dir github.com/kedacore/keda/v2 $KEDA)
cp -r "$src/config" "$tmp/keda" && chmod -R u+w "$tmp/keda"
kubectl kustomize "$tmp/keda/default" | sed "s|\(ghcr.io/kedacore/keda[a-z-]*\):main|\1:${KEDA#v}|" >"$out/keda.yaml"

# The InferencePool (inference.networking.k8s.io/v1, and v1alpha2 for poolApiVersion: v1alpha2 on
# release gie-v1.2.0) and the router CRDs (InferenceObjective, InferenceModelRewrite:
# inference.networking.x-k8s.io/v1alpha2), from GIE's module; and the same two in llm-d.ai, the
# group llm-d-router v0.10.0 watches first (its chart installs them): its
# config/crd/bases/llm-d.ai_*.yaml are GIE v1.5.0's with the group renamed (and priority's
# "format: int32", which the render's int32 field keeps anyway). llm-d-router's module is not on
# the proxy, so they are made from GIE's here.
src=$(dir sigs.k8s.io/gateway-api-inference-extension $GIE)
routersrc=$(dir sigs.k8s.io/gateway-api-inference-extension $GIE_ROUTER_CRDS)
{
	for f in inference.networking.k8s.io_inferencepools inference.networking.x-k8s.io_inferencepools; do
		printf -- '---\n' && cat "$src/config/crd/bases/$f.yaml"
	done
	for f in inference.networking.x-k8s.io_inferenceobjectives inference.networking.x-k8s.io_inferencemodelrewrites; do
		printf -- '---\n' && cat "$routersrc/config/crd/bases/$f.yaml"
	done
	for f in inference.networking.x-k8s.io_inferenceobjectives inference.networking.x-k8s.io_inferencemodelrewrites; do
		printf -- '---\n' && sed 's/inference\.networking\.x-k8s\.io/llm-d.ai/g' "$routersrc/config/crd/bases/$f.yaml"
	done
} >"$out/inference-extension.yaml"

# prometheus-operator: the PodMonitor CRD, the one kind the project emits.
src=$(dir github.com/prometheus-operator/prometheus-operator $PROMETHEUS_OPERATOR)
cat "$src/example/prometheus-operator-crd/monitoring.coreos.com_podmonitors.yaml" >"$out/prometheus-operator.yaml"

# The Gateway API: its release's standard-install.yaml is `kustomize build config/crd`.
src=$(dir sigs.k8s.io/gateway-api $GATEWAY_API)
kubectl kustomize "$src/config/crd" >"$out/gateway-api.yaml"

# Compressed, so the CLI that embeds them stays light (cmd/fusioninfer/weight_test.go): gzip -n
# writes no name or time, so the same manifest is the same file.
for f in lws volcano keda inference-extension gateway-api prometheus-operator; do
	gzip -n -9 -f "$out/$f.yaml"
done

for m in sigs.k8s.io/lws@$LWS volcano.sh/volcano@$VOLCANO github.com/kedacore/keda/v2@$KEDA \
	sigs.k8s.io/gateway-api-inference-extension@$GIE sigs.k8s.io/gateway-api-inference-extension@$GIE_ROUTER_CRDS \
	sigs.k8s.io/gateway-api@$GATEWAY_API github.com/prometheus-operator/prometheus-operator@$PROMETHEUS_OPERATOR; do
	echo "$m"
done >"$out/versions.txt"
