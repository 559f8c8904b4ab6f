// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// TestPlanCountsEveryContainersGPUs: a pod whose vLLM container comes second, beside a container
// with GPUs of its own, needs the GPUs of both on one node.
func TestPlanCountsEveryContainersGPUs(t *testing.T) {
	svc := manifest(t, "story1-monolithic.yaml") // one replica, vllm with 1 GPU
	spec := &svc.Spec.Roles[0].Template.Spec
	spec.Containers = append([]corev1.Container{{Name: "encoder", Image: "example.com/encoder:1",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{api.GPUResourceName: resource.MustParse("2")}}}},
		spec.Containers...)
	require.Empty(t, api.Validate(svc))

	p, err := Predict(svc, Uniform(4, 2))
	require.NoError(t, err)
	assert.Equal(t, Blocked, p.Status, "no 2-GPU node holds a pod of 3 GPUs")
	assert.EqualValues(t, 3, p.GPUsFull)
	p, err = Predict(svc, Uniform(1, 4))
	require.NoError(t, err)
	assert.Equal(t, Full, p.Status)
}
