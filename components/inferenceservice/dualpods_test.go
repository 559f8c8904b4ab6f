// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"testing"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

func TestDualPodsChildren(t *testing.T) {
	one := 1
	args := &Args{
		Namespace: "llm",
		Roles: []RoleArgs{{Name: "server", ComponentType: "worker", Replicas: &one, Template: vllmTemplate("1", "kv_both", "1"),
			ModelFlexibility: &api.ModelFlexibility{Mode: api.DualPods}}},
		DualPodsController: &api.DualPodsController{Install: true},
	}
	// vllmTemplate has no cpu/memory requests, which FMA's server pod needs.
	monitor := &pulumimock.Monitor{}
	err := monitor.Run(func(ctx *pulumi.Context) error {
		_, err := NewInferenceService(ctx, "granite", args)
		return err
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.roles[0].template.spec.containers[0].resources.requests[cpu]: Required value")

	args.Roles[0].Template = templateWithRequests()
	monitor = &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		_, err := NewInferenceService(ctx, "granite", args)
		return err
	}))
	types := map[string]string{}
	for _, r := range monitor.Resources() {
		types[r.Name] = r.Type
	}
	assert.Equal(t, "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition", types["granite-fma-launcherconfigs.fma.llm-d.ai"])
	assert.Equal(t, "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy", types["granite-fma-fma-immutable-fields"])
	assert.Equal(t, "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole", types["granite-fma-clusterrole"])
	controller, _ := monitor.Find("granite-dual-pods-controller")
	lws, _ := monitor.Find("granite-server-0")
	assert.Contains(t, lws.Dependencies, controller.URN(), "destroy removes the requesters before the controller")
	crd, _ := monitor.Find("granite-fma-launcherconfigs.fma.llm-d.ai")
	assert.Nil(t, crd.Inputs["metadata"].Mappable().(map[string]any)["namespace"], "CRDs are cluster-scoped")
}

// templateWithRequests is a single-GPU vLLM server with the cpu and memory it needs.
func templateWithRequests() k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
		Name:  pulumi.String("vllm"),
		Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
		Args:  pulumi.ToStringArray([]string{"--model", "ibm-granite/granite-3.3-2b-instruct"}),
		Resources: &k8scorev1.ResourceRequirementsArgs{
			Limits:   pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")},
			Requests: pulumi.StringMap{"cpu": pulumi.String("2"), "memory": pulumi.String("16Gi")},
		},
	}}}}
}
