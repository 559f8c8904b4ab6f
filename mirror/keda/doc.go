// SPDX-License-Identifier: Apache-2.0

// Package keda holds the part of KEDA's API this project writes, as structs whose JSON is KEDA's:
// the keda.sh/v1alpha1 ScaledObject (keda.go). KEDA's module does not build with this project's
// Kubernetes libraries (docs/design/0014-autoscaling.md), so no test links KEDA's type:
// tests/conformance applies every ScaledObject we render to a real API server with KEDA's CRD
// installed. The deep copies are generated (zz_generated.deepcopy.go), as KEDA generates its own.
//
// +kubebuilder:object:generate=true
package keda

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0 object paths=.
