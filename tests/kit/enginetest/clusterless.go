// SPDX-License-Identifier: Apache-2.0

package enginetest

import (
	"context"
	"strconv"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/kubeprovider"
)

// Clusterless is the kubernetes provider stand-in with no cluster behind it, answering as
// pulumi-kubernetes v4.32.0 does where the cluster does not enter (mirror/kubeprovider): Check
// and Diff; Create and Update at preview return the inputs (provider.go Create: a Patch resource,
// or one whose kind the cluster does not know, is not dry-run); at update they return the state a
// cluster that took the inputs as they are would give. Its states are what a stack records, so
// a preview over them diffs as the real provider would.
func Clusterless() *deploytest.Provider {
	state := func(inputs resource.PropertyMap, urn resource.URN) resource.PropertyMap {
		obj := kubeprovider.Unstructured(inputs)
		return kubeprovider.Checkpoint(obj, obj, obj.GetAPIVersion(), "pulumi-kubernetes-"+strconv.Itoa(len(urn)))
	}
	return &deploytest.Provider{
		CheckF: func(_ context.Context, req plugin.CheckRequest) (plugin.CheckResponse, error) {
			checked, err := kubeprovider.Check(req.URN, req.News)
			return plugin.CheckResponse{Properties: checked}, err
		},
		DiffF: func(_ context.Context, req plugin.DiffRequest) (plugin.DiffResult, error) {
			return kubeprovider.Diff(req.URN, req.OldOutputs, req.NewInputs, req.IgnoreChanges, true)
		},
		CreateF: func(_ context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
			if req.Preview {
				return plugin.CreateResponse{Properties: req.Properties, Status: resource.StatusOK}, nil
			}
			obj := kubeprovider.Unstructured(req.Properties)
			return plugin.CreateResponse{ID: resource.ID(obj.GetNamespace() + "/" + obj.GetName()),
				Properties: state(req.Properties, req.URN), Status: resource.StatusOK}, nil
		},
		UpdateF: func(_ context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
			if req.Preview {
				return plugin.UpdateResponse{Properties: req.NewInputs, Status: resource.StatusOK}, nil
			}
			return plugin.UpdateResponse{Properties: state(req.NewInputs, req.URN), Status: resource.StatusOK}, nil
		},
	}
}
