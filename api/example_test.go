// SPDX-License-Identifier: Apache-2.0

package api_test

import (
	"fmt"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// A manifest is decoded strictly (a misspelt field is an error naming its line), then validated:
// every rule at once, each error naming the field path and what is allowed. Nothing is built
// from a service with errors.
func ExampleValidate() {
	manifest := []byte(`apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: chat
spec:
  roles:
    - name: inference
      componentType: worker
      replicas: -1
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: ["--model", "Qwen/Qwen3-8B"]
    - name: inference
      componentType: worker
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
---
apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: typo
spec:
  roles:
    - name: inference
      componentTyp: worker
`)
	docs, errs := api.Decode(manifest)
	for _, err := range errs {
		fmt.Println("decode:", err)
	}
	for _, doc := range docs {
		for _, err := range api.Validate(doc.Service) {
			fmt.Printf("%s (line %d): %v\n", doc.Service.Name, doc.Line, err)
		}
	}
	// Output:
	// decode: line 31: unknown field "spec.roles[0].componentTyp" (did you mean "componentType"?)
	// chat (line 1): spec.roles[0].replicas: Invalid value: -1: must be >= 1 and <= 10000
	// chat (line 1): spec.roles[1].name: Duplicate value: "inference"
}
