// SPDX-License-Identifier: Apache-2.0

// Package karpenter holds the parts of Karpenter's API this project writes or reads, as structs
// whose JSON is Karpenter's: the karpenter.sh/v1 NodePool and NodeClaim (karpenter.go), and
// Karpenter's rule for the labels of a NodePool's nodes (karpenterlabels.go). Karpenter's own
// package imports all of controller-runtime, about 500 packages and 14 MB of the CLI
// (docs/design/0017-a-light-cli.md).
//
// Only the fields this project uses are here. karpenter_test.go holds each against Karpenter's Go
// type (every field must exist upstream with the same JSON name and shape, and every NodePool the
// examples render decodes strictly into it), and tests/conformance applies what we render to a
// real API server with the upstream CRDs installed. The deep copies are generated
// (zz_generated.deepcopy.go), as Karpenter generates its own.
//
// +kubebuilder:object:generate=true
package karpenter

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0 object paths=.
