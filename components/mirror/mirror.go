// Package mirror holds the parts of third-party APIs this project writes or reads whose Go
// packages cannot be linked into it, as structs whose JSON is theirs:
//
//   - Karpenter's karpenter.sh/v1 NodePool and NodeClaim (karpenter.go): Karpenter's package
//     imports all of controller-runtime, about 500 packages and 14 MB of the CLI
//     (docs/design/0017-a-light-cli.md);
//   - KEDA's keda.sh/v1alpha1 ScaledObject (keda.go): KEDA's module does not build with this
//     project's Kubernetes libraries (docs/design/0014-autoscaling.md).
//
// Only the fields this project uses are here. mirror_test.go holds each against the upstream Go
// type where one can be linked in tests (every field must exist upstream with the same JSON name
// and shape, and every object the examples render decodes strictly into it), and tests/conformance
// applies what we render to a real API server with the upstream CRDs installed. Their deep copies
// are generated (zz_generated.deepcopy.go), as the upstream projects generate theirs.
//
// +kubebuilder:object:generate=true
package mirror

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.19.0 object paths=.
