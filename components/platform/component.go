// SPDX-License-Identifier: Apache-2.0

// Package platform is the Pulumi component fusioninfer:index:Platform: the cluster's
// prerequisites (core/platform) as one pulumi-kubernetes child per object. It knows nothing
// of what the objects are; the core does.
package platform

import (
	"fmt"
	"strings"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes"
	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/kubetoken"
	coreplatform "github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// TypeToken is the component's Pulumi type.
const TypeToken = "fusioninfer:index:Platform"

// Args are the component's inputs: the core's Spec, plain values (they decide which objects
// exist, so they must be known at preview).
type Args struct {
	coreplatform.Spec
}

// Platform is the component.
type Platform struct {
	pulumi.ResourceState

	// Objects are the keys of the objects it installs ("Kind/name" or "Kind/namespace/name"), in
	// install order.
	Objects pulumi.StringArrayOutput `pulumi:"objects"`
	// Versions are the upstream modules the manifests come from, "module@version".
	Versions pulumi.StringArrayOutput `pulumi:"versions"`

	// Children are the child resources by key, for Go programs that depend on one of them (an
	// InferenceService on the LWS controller, say).
	Children map[string]*apiextensions.CustomResource
}

// NewPlatform registers the platform: every object of coreplatform.Render as a pulumi-kubernetes
// resource named "{name}-{key}", parented to the component; a part's objects wait for its
// namespaces and CRDs. An invalid spec registers nothing.
func NewPlatform(ctx *pulumi.Context, name string, args *Args, opts ...pulumi.ResourceOption) (*Platform, error) {
	spec := &coreplatform.Spec{}
	if args != nil {
		spec = &args.Spec
	}
	objects, err := coreplatform.Render(spec)
	if err != nil {
		return nil, fmt.Errorf("Platform %q: %w", name, err)
	}
	component := &Platform{Children: map[string]*apiextensions.CustomResource{}}
	if err := ctx.RegisterComponentResource(TypeToken, name, component, opts...); err != nil {
		return nil, err
	}
	foundations := map[string][]pulumi.Resource{} // by part
	keys := make([]string, len(objects))
	for i, o := range objects {
		keys[i] = o.Key()
		inputs := kubernetes.UntypedArgs{}
		for field, value := range pulumi.ToMap(o.Object.Object) {
			if field != "status" { // what the server reports, never an input
				inputs[field] = value
			}
		}
		childOpts := []pulumi.ResourceOption{pulumi.Parent(component)}
		if !o.Foundation {
			childOpts = append(childOpts, pulumi.DependsOn(foundations[o.Part]))
		}
		var child apiextensions.CustomResource
		if err := ctx.RegisterResource(kubetoken.Of(o.Object.GetAPIVersion(), o.Object.GetKind()), name+"-"+childName(o), inputs, &child, childOpts...); err != nil {
			return nil, err
		}
		component.Children[o.Key()] = &child
		if o.Foundation {
			foundations[o.Part] = append(foundations[o.Part], &child)
		}
	}
	component.Objects = pulumi.ToStringArray(keys).ToStringArrayOutput()
	component.Versions = pulumi.ToStringArray(coreplatform.Versions()).ToStringArrayOutput()
	return component, ctx.RegisterResourceOutputs(component, pulumi.Map{
		"objects": component.Objects, "versions": component.Versions,
	})
}

// childName is an object's child name: its key, lower case, "/" and ":" as "-".
func childName(o coreplatform.Object) string {
	return strings.NewReplacer("/", "-", ":", "-").Replace(strings.ToLower(o.Key()))
}
