// SPDX-License-Identifier: Apache-2.0

package platform_test

import (
	"fmt"
	"slices"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/platform"
	coreplatform "github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// registered records what a program registers under Pulumi's mocks: each resource's type and name.
type registered struct {
	mu        sync.Mutex
	resources []string
}

func (r *registered) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resources = append(r.resources, args.TypeToken+" "+args.Name)
	return args.Name, args.Inputs, nil
}

func (*registered) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

// A Pulumi program installs part of what the cluster needs: here only prometheus-operator's
// PodMonitor CRD, every other part turned off (each is on unless told otherwise). The component
// registers one child a Kubernetes object of the upstream release manifests, parented to it.
func ExampleNewPlatform() {
	off := pulumi.BoolRef(false)
	mocks := &registered{}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := platform.NewPlatform(ctx, "platform", &platform.Args{Spec: coreplatform.Spec{
			LeaderWorkerSet:    &coreplatform.Part{Install: off},
			Volcano:            &coreplatform.VolcanoPart{Install: off},
			InferenceExtension: &coreplatform.Part{Install: off},
			KEDA:               &coreplatform.Part{Install: off},
		}})
		return err
	}, pulumi.WithMocks("project", "stack", mocks))
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(mocks.resources)
	for _, r := range mocks.resources {
		fmt.Println(r)
	}
	// Output:
	// fusioninfer:index:Platform platform
	// kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition platform-customresourcedefinition-podmonitors.monitoring.coreos.com
}
