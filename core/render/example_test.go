// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"fmt"
	"maps"
	"slices"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// Build turns a service into its tree of typed Kubernetes objects, in the order they are created;
// Summarize is the one-screen view of it the CLI prints with --summary. Here Llama 3.1 405B
// served by two replicas of two 8-GPU pods each, gang scheduled by Volcano.
func ExampleBuild() {
	docs, errs := api.Decode([]byte(`apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: llama
spec:
  roles:
    - name: inference
      componentType: worker
      replicas: 2
      multinode:
        nodeCount: 2
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: ["--model", "meta-llama/Llama-3.1-405B-Instruct", "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2"]
              resources:
                limits:
                  nvidia.com/gpu: "8"
`))
	if len(errs) > 0 {
		fmt.Println(errs)
		return
	}
	tree, problems := render.Build(docs[0].Service)
	if len(problems) > 0 {
		fmt.Println(problems)
		return
	}
	for _, o := range tree.Objects {
		fmt.Println(o.Kind, o.Name)
	}
	s := render.Summarize(tree)
	for _, r := range s.Roles {
		fmt.Printf("role %s: %d replicas of %d pods, %d GPUs\n", r.Name, r.Replicas, r.NodesPerRep, r.GPUs)
	}
	fmt.Printf("gang: %v, PodGroup %s, minMember %d\n", s.Gang, s.PodGroup, s.MinMember)
	for _, kind := range slices.Sorted(maps.Keys(s.Objects)) {
		fmt.Println(kind, s.Objects[kind])
	}
	// Output:
	// PodGroup llama
	// LeaderWorkerSet llama-inference-0
	// LeaderWorkerSet llama-inference-1
	// role inference: 2 replicas of 2 pods, 32 GPUs
	// gang: true, PodGroup llama, minMember 2
	// LeaderWorkerSet 2
	// PodGroup 1
}
