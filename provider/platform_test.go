// SPDX-License-Identifier: Apache-2.0

package provider_test

import (
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/frontdoor"
)

// TestConstructPlatformEqualsTheCore: a TypeScript, Python or YAML program's Platform registers
// one child per object of the core, with the object as its inputs.
func TestConstructPlatformEqualsTheCore(t *testing.T) {
	inputs := property.NewMap(map[string]property.Value{
		"keda":        property.New(property.NewMap(map[string]property.Value{"install": property.New(false)})),
		"controllers": property.New(false),
	})
	registered, err := frontdoor.ConstructedPlatform(t, "cluster", inputs)
	require.NoError(t, err)
	off := false
	objects, err := platform.Render(&platform.Spec{KEDA: &platform.Part{Install: &off}, Controllers: &off})
	require.NoError(t, err)
	require.Len(t, registered, len(objects)+1, "the component and its children")
	for _, o := range objects {
		name := "cluster-" + strings.NewReplacer("/", "-", ":", "-").Replace(strings.ToLower(o.Key()))
		child, ok := registered[name]
		require.True(t, ok, name)
		want := o.Object.DeepCopy().Object
		delete(want, "status")
		require.Equal(t, want, resource.ToResourcePropertyValue(property.New(child)).ObjectValue().Mappable(), o.Key())
	}
}

// TestConstructPlatformRefusesBadInputs: with the input's field path, and nothing registered.
func TestConstructPlatformRefusesBadInputs(t *testing.T) {
	for _, tc := range []struct {
		inputs property.Map
		want   string
	}{
		{property.NewMap(map[string]property.Value{"volcano": property.New(property.NewMap(map[string]property.Value{
			"schedulerConfiguration": property.New("actions: enqueue, allocate")}))}),
			`volcano.schedulerConfiguration.tiers: Required value: the gang rules need the plugins gang, predicates and proportion`},
		{property.NewMap(map[string]property.Value{"keda": property.New(property.NewMap(map[string]property.Value{
			"instal": property.New(false)}))}),
			`unknown field "keda.instal" (did you mean "install"?)`},
		{property.NewMap(map[string]property.Value{"keda": property.New(property.NewMap(map[string]property.Value{
			"install": property.New(property.Computed)}))}),
			`keda: Invalid value: "(unknown)": must be known at preview: it decides which objects the Platform installs`},
	} {
		registered, err := frontdoor.ConstructedPlatform(t, "cluster", tc.inputs)
		require.ErrorContains(t, err, tc.want)
		require.Len(t, registered, 0)
	}
}
