// SPDX-License-Identifier: Apache-2.0

package inferenceservice_test

import (
	"fmt"
	"slices"
	"sync"

	corev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
)

// children records what a program registers under Pulumi's mocks: each resource's type and name.
type children struct {
	mu         sync.Mutex
	registered []string
}

func (c *children) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registered = append(c.registered, args.TypeToken+" "+args.Name)
	return args.Name, args.Inputs, nil
}

func (*children) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return args.Args, nil
}

// A Pulumi program registers an InferenceService: Qwen3-8B served by two single-GPU replicas of
// vLLM. The component registers one child a Kubernetes object, parented to it: a LeaderWorkerSet a
// replica and, as the replicas of a template change roll in batches, each one's rollout patch. The
// program runs under Pulumi's mocks, as a unit test of a program would.
func ExampleNewInferenceService() {
	vllm := &corev1.PodTemplateSpecArgs{Spec: &corev1.PodSpecArgs{Containers: corev1.ContainerArray{
		&corev1.ContainerArgs{
			Name:  pulumi.String("vllm"),
			Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
			Args:  pulumi.ToStringArray([]string{"--model", "Qwen/Qwen3-8B"}),
			Ports: corev1.ContainerPortArray{&corev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
			Resources: &corev1.ResourceRequirementsArgs{
				Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("1")},
			},
		},
	}}}
	mocks := &children{}
	err := pulumi.RunErr(func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewInferenceService(ctx, "qwen", &inferenceservice.Args{
			Roles: []inferenceservice.RoleArgs{{
				Name:          "inference",
				ComponentType: "worker",
				Replicas:      pulumi.IntRef(2),
				Template:      vllm,
			}},
		})
		return err
	}, pulumi.WithMocks("project", "stack", mocks))
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.Sort(mocks.registered)
	for _, r := range mocks.registered {
		fmt.Println(r)
	}
	// Output:
	// fusioninfer:index:InferenceService qwen
	// kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet qwen-inference-0
	// kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet qwen-inference-1
	// kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch qwen-inference-0-rollout
	// kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch qwen-inference-1-rollout
	// pulumi:index:Stash qwen-batch-0-done
	// pulumi:index:Stash qwen-batch-1-done
}
