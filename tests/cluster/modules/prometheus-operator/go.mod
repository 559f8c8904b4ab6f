// Module prometheus-operator holds prometheus-operator's CRDs (example/prometheus-operator-crd), which
// conformance and e2e install for the PodMonitors the core emits. Nothing is built from it.
module github.com/fusioninfer/pulumi-fusioninfer/tests/cluster/modules/prometheus-operator

go 1.26.0

require github.com/prometheus-operator/prometheus-operator v0.88.0
