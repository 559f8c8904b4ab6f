// SPDX-License-Identifier: Apache-2.0

package platform

import (
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"

	coreplatform "github.com/fusioninfer/pulumi-fusioninfer/core/platform"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/kubeprovider"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

// TestChildrenAreTheCoreObjects: one child per object of the core, in its order, of the
// pulumi-kubernetes type of its kind, with the object as its inputs, parented to the component;
// every object but a namespace or CRD waits for its part's namespaces and CRDs.
func TestChildrenAreTheCoreObjects(t *testing.T) {
	off := false
	spec := coreplatform.Spec{KEDA: &coreplatform.Part{Install: &off}}
	objects, err := coreplatform.Render(&spec)
	require.NoError(t, err)

	monitor := &pulumimock.Monitor{}
	var keys []string
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		component, err := NewPlatform(ctx, "cluster", &Args{Spec: spec})
		if err != nil {
			return err
		}
		v, _, err := pulumimock.Await(ctx.Context(), component.Objects)
		keys = v.([]string)
		return err
	}))
	resources := monitor.Resources()
	require.Len(t, resources, len(objects)+1)
	component := resources[0]
	require.Equal(t, TypeToken, component.Type)
	children := map[string]pulumimock.Resource{}
	for _, r := range resources[1:] {
		children[r.Name] = r
	}
	foundations := map[string][]string{}
	for _, o := range objects {
		if o.Foundation {
			foundations[o.Part] = append(foundations[o.Part], children["cluster-"+childName(o)].URN())
		}
	}
	for i, o := range objects {
		require.Equal(t, o.Key(), keys[i])
		child, ok := children["cluster-"+childName(o)]
		require.True(t, ok, o.Key())
		require.Equal(t, component.URN(), child.ParentURN)
		gvk, err := kubeprovider.GVKFromURN(resource.URN(child.URN()))
		require.NoError(t, err, child.Type)
		require.Equal(t, o.Object.GroupVersionKind(), gvk, o.Key())
		want := o.Object.DeepCopy().Object
		delete(want, "status")
		require.Equal(t, want, child.Inputs.Mappable(), o.Key())
		if o.Foundation {
			require.Empty(t, child.Dependencies, o.Key())
		} else {
			require.NotEmpty(t, foundations[o.Part])
			require.ElementsMatch(t, foundations[o.Part], child.Dependencies, o.Key())
		}
	}
	require.NotContains(t, foundations, coreplatform.PartKEDA)
}

// TestBadInputRegistersNothing: the error names the field, and nothing is registered.
func TestBadInputRegistersNothing(t *testing.T) {
	monitor := &pulumimock.Monitor{}
	err := monitor.Run(func(ctx *pulumi.Context) error {
		_, err := NewPlatform(ctx, "cluster", &Args{Spec: coreplatform.Spec{Volcano: &coreplatform.VolcanoPart{SchedulerConfiguration: "actions: allocate"}}})
		return err
	})
	require.ErrorContains(t, err, `volcano.schedulerConfiguration.actions: Invalid value: "allocate": the gang rules need the action enqueue`)
	require.Empty(t, monitor.Resources())
}
