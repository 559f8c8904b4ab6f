// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/specfill"
)

// TestEveryFieldThroughTheManifest: a manifest carries every field of the input model to the
// spec the core builds from (the CLI's front door). The Go component's and the provider's doors
// have the same test (components/inferenceservice, provider).
func TestEveryFieldThroughTheManifest(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		svc := specfill.Filled(seed)
		require.Empty(t, specfill.Unset(&svc.Spec), "specfill leaves no field unset")
		data, err := yaml.Marshal(svc)
		require.NoError(t, err)
		docs, errs := api.Decode(data)
		require.Empty(t, errs)
		require.Len(t, docs, 1)
		assert.True(t, equality.Semantic.DeepEqual(svc, docs[0].Service), "seed %d: the manifest lost a field", seed)
	}
}
