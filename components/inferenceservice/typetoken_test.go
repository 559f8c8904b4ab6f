// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/kubeprovider"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

// TestTypeTokensAsTheProviderParsesThem: pulumi-kubernetes takes a resource's group, version and
// kind from its type token, never from its inputs (kubeprovider.GVKFromURN). For every child of
// every example manifest's services, and of those services with their replicas and node counts
// changed at random, the URN's type, parsed with the provider's rules, names the object's own
// apiVersion and kind; a rollout is the provider's Patch resource of its LWS.
func TestTypeTokensAsTheProviderParsesThem(t *testing.T) {
	files, err := filepath.Glob("../../examples/manifests/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	rng := rand.New(rand.NewPCG(7, 11))
	kinds, patches, built := map[schema.GroupVersionKind]bool{}, 0, 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(t, err)
		for variant := range 4 {
			docs, errs := api.Decode(data)
			require.Empty(t, errs, file)
			var services []*api.InferenceService
			for _, doc := range docs {
				if variant > 0 {
					resize(rng, doc.Service)
				}
				if len(api.Validate(doc.Service)) == 0 { // a resize may break another rule
					services = append(services, doc.Service)
				}
			}
			built += len(services)
			monitor := &pulumimock.Monitor{}
			require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
				for _, svc := range services {
					if _, err := NewFromService(ctx, svc.Name, svc, nil); err != nil {
						return err
					}
				}
				return nil
			}), "%s variant %d", file, variant)
			for _, r := range monitor.Resources() {
				if !r.Custom || r.Type == typeBarrier { // a barrier is the engine's, no provider's
					continue
				}
				apiVersion, kind := r.Inputs["apiVersion"].StringValue(), r.Inputs["kind"].StringValue()
				urn := resource.URN(r.URN())
				gvk, err := kubeprovider.ObjectGVK(urn, kind)
				require.NoError(t, err, "%s: the provider refuses %s", r.Name, r.Type)
				assert.Equal(t, schema.FromAPIVersionAndKind(apiVersion, kind), gvk, "%s (%s)", r.Name, r.Type)
				if kubeprovider.IsPatchResource(urn, kind) {
					patches++
				}
				kinds[gvk] = true
			}
		}
	}
	assert.Greater(t, built, 2*len(files), "most variants are valid services")
	assert.Greater(t, patches, 0, "the rollouts are Patch resources")
	assert.GreaterOrEqual(t, len(kinds), 15, "the examples cover the kinds the core builds: %v", kinds)
}

// resize gives every role of a service 1 to 5 replicas and, for a multi-node role, 2 to 4 nodes.
func resize(rng *rand.Rand, svc *api.InferenceService) {
	for i := range svc.Spec.Roles {
		role := &svc.Spec.Roles[i]
		if role.Replicas != nil {
			n := 1 + rng.IntN(5)
			role.Replicas = &n
		}
		if role.Multinode != nil && role.Multinode.NodeCount > 1 {
			role.Multinode.NodeCount = 2 + rng.IntN(3)
		}
	}
}

// TestTheOldRolloutTokenIsRefused: the token the rollouts had, which the real provider refused at
// the first `pulumi up`, is refused by the mirrored rule too, so the test above can fail.
func TestTheOldRolloutTokenIsRefused(t *testing.T) {
	urn := resource.NewURN("stack", "project", TypeToken, "kubernetes:apiextensions.k8s.io:CustomResourcePatch", "svc-decode-0-rollout")
	_, err := kubeprovider.ObjectGVK(urn, "LeaderWorkerSet")
	assert.EqualError(t, err, `apiVersion does not have both a group and a version: "apiextensions.k8s.io"`)
}
