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
// applies what we render to a real API server with the upstream CRDs installed.
package mirror

import "encoding/json"

// deepCopyJSON deep-copies an object whose every field JSON carries, by a JSON round trip.
func deepCopyJSON[T any](in *T) *T {
	data, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(data, out); err != nil {
		panic(err)
	}
	return out
}
