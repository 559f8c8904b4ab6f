// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// benchService is one worker role of the given replicas, 4 nodes of 8 GPUs each, with a router
// in front when routed.
func benchService(replicas int32, routed bool) *api.InferenceService {
	svc := &api.InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: api.APIVersion, Kind: api.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Spec: api.InferenceServiceSpec{Roles: []api.Role{{
			Name: "inference", ComponentType: api.ComponentTypeWorker, Replicas: ptr.To(int(replicas)),
			Multinode: &api.Multinode{NodeCount: 4},
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "vllm", Image: "vllm/vllm-openai:v0.33.0",
				Args:  []string{"--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}},
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					api.GPUResourceName: resource.MustParse("8"),
				}},
			}}}},
		}}},
	}
	if routed {
		svc.Spec.Roles = append(svc.Spec.Roles, api.Role{Name: "router", ComponentType: api.ComponentTypeRouter,
			HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}})
	}
	return svc
}

// benchCases are the sizes benchmarked, each without and with a router.
func benchCases(b *testing.B, run func(b *testing.B, svc *api.InferenceService)) {
	for _, routed := range []bool{false, true} {
		for _, replicas := range []int32{10, 100, 1000} {
			svc := benchService(replicas, routed)
			b.Run(fmt.Sprintf("router=%v/replicas=%d", routed, replicas), func(b *testing.B) {
				b.ReportAllocs()
				run(b, svc)
			})
		}
	}
}

// BenchmarkBuild is spec -> typed objects.
func BenchmarkBuild(b *testing.B) {
	benchCases(b, func(b *testing.B, svc *api.InferenceService) {
		for i := 0; i < b.N; i++ {
			if _, errs := render.Build(svc); len(errs) > 0 {
				b.Fatal(errs)
			}
		}
	})
}

// BenchmarkRender is spec -> YAML, what `fusioninfer render` does after reading the file.
func BenchmarkRender(b *testing.B) {
	benchCases(b, func(b *testing.B, svc *api.InferenceService) {
		for i := 0; i < b.N; i++ {
			tree, errs := render.Build(svc)
			if len(errs) > 0 {
				b.Fatal(errs)
			}
			if _, err := tree.YAML(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
