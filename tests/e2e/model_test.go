// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package e2e

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// cachedChat is a service "chat" of 4 replicas of Qwen3-8B (rolled 2 at a time) whose weights
// are downloaded from the Hub into a cache claim.
func cachedChat(namespace string) *api.InferenceService {
	return &api.InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: api.APIVersion, Kind: api.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: namespace},
		Spec: api.InferenceServiceSpec{
			Model: &api.Model{Source: "hf://Qwen/Qwen3-8B@rev1", CredentialsSecret: &corev1.LocalObjectReference{Name: "hf-token"},
				Cache: &api.ModelCache{Size: "20Gi", StorageClassName: "e2e-shared"}},
			Roles: []api.Role{{Name: "chat", ComponentType: api.ComponentTypeWorker, Replicas: ptr.To(4),
				RolloutStrategy: &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))},
				Template: &corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{testcluster.ReadyAfterAnnotation: "3s"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.33.0",
						Args:      []string{"--model", "Qwen/Qwen3-8B"},
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{api.GPUResourceName: resource.MustParse("8")}},
					}}},
				}}},
		},
	}
}

// A model's download on the real controllers: the Job (its pod completed by kwok, the Job by
// the Job controller, the claim bound by the volume controllers) completes before any LWS
// exists; every server pod mounts the claim. A new revision is a new Job, run to completion,
// before the first batch takes the new template; the batches then roll in order.
func TestModelDownloadsOnceBeforeTheServersAndANewRevisionRolls(t *testing.T) {
	harness.AddGPUNodes(t, "model", 4)
	namespace := "model"
	svc := cachedChat(namespace)
	harness.PreparePlatform(t, svc)
	s := harness.NewStack(t, harness.ServicesProgram(svc))

	jobs := harness.WatchJobsAndLeaderWorkerSets(t, namespace)
	s.Up()
	seen := jobs.End()
	require.Len(t, seen.JobsCompleted, 1, "one download")
	for name, created := range seen.LeaderWorkerSetsAdded {
		assert.True(t, created.After(seen.JobsCompleted[0].At), "%s was created after the download completed", name)
	}
	assert.Len(t, seen.LeaderWorkerSetsAdded, 4)
	claim, err := harness.Cluster.Clientset.CoreV1().PersistentVolumeClaims(namespace).Get(context.Background(), "chat-model", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, corev1.ClaimBound, claim.Status.Phase)
	pods, err := harness.Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "fusioninfer.io/role-name=chat"})
	require.NoError(t, err)
	require.Len(t, pods.Items, 4)
	for _, pod := range pods.Items {
		assert.Contains(t, pod.Spec.Volumes, corev1.Volume{Name: api.ModelVolumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "chat-model", ReadOnly: true}}}, pod.Name)
	}
	for role, phase := range s.Phases("chat") {
		assert.Equal(t, inferenceservice.PhaseRunning, phase, role)
	}

	before := harness.Revisions(t, namespace)
	lwsWatch := harness.WatchLeaderWorkerSets(t, namespace)
	jobs = harness.WatchJobsAndLeaderWorkerSets(t, namespace)
	svc.Spec.Model.Source = "hf://Qwen/Qwen3-8B@rev2"
	s.Up()
	states, seen := lwsWatch.End(), jobs.End()
	require.Len(t, seen.JobsCompleted, 1, "a new download")
	assert.Contains(t, seen.JobsCompleted[0].Args, "hf://Qwen/Qwen3-8B@rev2")
	done := harness.Rollouts(states, before)
	require.Len(t, done, 4, "every replica takes the new revision")
	for name, r := range done {
		assert.True(t, r.Start().After(seen.JobsCompleted[0].At), "%s took the new revision after its download completed", name)
	}
	harness.AssertOrdered(t, done, []string{"chat-chat-0", "chat-chat-1"}, []string{"chat-chat-2", "chat-chat-3"})
	assert.Equal(t, 2, harness.MostUnavailable(states), "two at a time")

	assert.Empty(t, s.Up(), "a second deployment takes no step")
	s.Destroy()
}
