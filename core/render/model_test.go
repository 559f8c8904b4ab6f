// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

func objectsOf[T any](tree *render.Tree) []T {
	var out []T
	for _, o := range tree.Objects {
		if t, ok := o.Object.(T); ok {
			out = append(out, t)
		}
	}
	return out
}

// TestStory4DownloadsItsModelOnce is the "done when": one download Job, one cache claim,
// and LeaderWorkerSets created after the download whose every pod mounts the cache read-only and
// whose leaders run vLLM on the cached files under the public name.
func TestStory4DownloadsItsModelOnce(t *testing.T) {
	tree := story(t, "deepseek-model-cache.yaml")
	jobs := objectsOf[*batchv1.Job](tree)
	require.Len(t, jobs, 1)
	job := jobs[0]
	assert.Equal(t, "deepseek-r1-cached-model-download", job.Name)
	assert.Equal(t, []string{"--source", "hf://deepseek-ai/DeepSeek-R1", "--cache", "/models"}, job.Spec.Template.Spec.Containers[0].Args)
	assert.Equal(t, "hf-token", job.Spec.Template.Spec.Containers[0].EnvFrom[0].SecretRef.Name, "the token comes from the Secret, never inline")
	assert.Equal(t, "deepseek-r1-cached-model", job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName)
	assert.Equal(t, "30780", job.Annotations[render.AnnotationPulumiTimeoutSeconds], "1500Gi at 50 MiB/s, and a minute for the Job controller")
	assert.Equal(t, int64(30720), *job.Spec.ActiveDeadlineSeconds)

	claims := objectsOf[*corev1.PersistentVolumeClaim](tree)
	require.Len(t, claims, 1, "the model's cache")
	assert.Equal(t, "deepseek-r1-cached-model", claims[0].Name)
	assert.Equal(t, "1500Gi", claims[0].Spec.Resources.Requests.Storage().String())
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, claims[0].Spec.AccessModes)
	assert.Equal(t, "shared-rwx", *claims[0].Spec.StorageClassName)

	jobIndex := -1
	for i, o := range tree.Objects {
		switch o.Object.(type) {
		case *batchv1.Job:
			jobIndex = i
			assert.True(t, o.ReplacedWhole(), "a changed download is a new Job")
		}
	}
	lwss := leaderWorkerSets(tree)
	require.Len(t, lwss, 3)
	for i, o := range tree.Objects {
		if o.TypeMeta != render.KindLeaderWorkerSet {
			continue
		}
		assert.Greater(t, i, jobIndex, "%s comes after the download", o.Name)
		assert.Contains(t, o.DependsOn, tree.Objects[jobIndex].Suffix, "%s is created after the download completes", o.Name)
	}
	for _, lws := range lwss {
		for _, tpl := range []*corev1.PodTemplateSpec{lws.Spec.LeaderWorkerTemplate.LeaderTemplate, &lws.Spec.LeaderWorkerTemplate.WorkerTemplate} {
			server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
			assert.Contains(t, server.VolumeMounts, corev1.VolumeMount{Name: api.ModelVolumeName, MountPath: "/models", ReadOnly: true}, lws.Name)
			assert.Contains(t, tpl.Spec.Volumes, corev1.Volume{Name: api.ModelVolumeName, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "deepseek-r1-cached-model", ReadOnly: true}}}, lws.Name)
			assert.Contains(t, server.Env, corev1.EnvVar{Name: "HF_HUB_OFFLINE", Value: "1"}, "the Hub is not asked again")
		}
		script := lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Args[0]
		assert.Contains(t, script, "--model /models/hf/deepseek-ai/DeepSeek-R1/main ", lws.Name)
		assert.Contains(t, script, "--served-model-name deepseek-ai/DeepSeek-R1 ", "clients still ask for the public name")
	}
}

// TestNewRevisionIsANewDownloadAndARollout: a changed revision changes the Job (replaced, so it
// downloads again into the revision's own directory) and the servers' templates (a rollout in
// batches), never the files under servers of the old revision.
func TestNewRevisionIsANewDownloadAndARollout(t *testing.T) {
	build := func(source string) *render.Tree {
		svc := story(t, "deepseek-model-cache.yaml").Service
		svc.Spec.Model.Source = source
		tree, errs := render.Build(svc)
		require.Empty(t, errs)
		return tree
	}
	before, after := build("hf://deepseek-ai/DeepSeek-R1@aaaa1111"), build("hf://deepseek-ai/DeepSeek-R1@bbbb2222")
	jobBefore, jobAfter := objectsOf[*batchv1.Job](before)[0], objectsOf[*batchv1.Job](after)[0]
	assert.NotEqual(t, jobBefore.Spec.Template, jobAfter.Spec.Template)
	for i, lws := range leaderWorkerSets(before) {
		next := leaderWorkerSets(after)[i]
		assert.NotEqual(t, lws.Labels[render.LabelRevision], next.Labels[render.LabelRevision], "a new template revision: a rollout")
		assert.Contains(t, lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Args[0], "/models/hf/deepseek-ai/DeepSeek-R1/aaaa1111 ")
		assert.Contains(t, next.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Args[0], "/models/hf/deepseek-ai/DeepSeek-R1/bbbb2222 ")
	}
}

// TestModelReachesEveryKindOfServer: autoscaled roles' elastic LWS, dual-pods roles' server
// patch (the pod FMA makes), streamed and mounted sources.
func TestModelReachesEveryKindOfServer(t *testing.T) {
	t.Run("the elastic LWS of an autoscaled role mounts the same cache", func(t *testing.T) {
		svc := story(t, "autoscaling-pd.yaml").Service
		svc.Spec.Model = &api.Model{Source: "s3://models/deepseek-r1", Name: "deepseek-ai/DeepSeek-R1",
			Cache: &api.ModelCache{Size: "100Gi", StorageClassName: "shared-rwx"}}
		tree, errs := render.Build(svc)
		require.Empty(t, errs)
		elastic := 0
		for _, o := range tree.Objects {
			if o.Elastic && o.TypeMeta == render.KindLeaderWorkerSet {
				elastic++
				assert.Contains(t, o.DependsOn, "model-download")
				server := leaderOf(o).Spec.Containers[0] // the Ray launcher's script runs the server
				assert.Contains(t, strings.Join(vllm.CommandLine(&server), " "), "--model /models/s3/models/deepseek-r1 ")
			}
		}
		assert.Equal(t, 2, elastic, "decode's and prefill's")
	})
	t.Run("a dual-pods role's server pods get the cache through FMA's patch", func(t *testing.T) {
		svc := story(t, "granite-sleep-wake.yaml").Service
		// the example's own shared Hugging Face cache gives way to the model's
		tpl := &svc.Spec.Roles[0].Template.Spec
		tpl.Volumes, tpl.Containers[0].VolumeMounts, tpl.Containers[0].Env = nil, nil, nil
		svc.Spec.Model = &api.Model{Source: "hf://ibm-granite/granite-3.3-2b-instruct", Cache: &api.ModelCache{Size: "40Gi", StorageClassName: "nfs"}}
		tree, errs := render.Build(svc)
		require.Empty(t, errs, "%v", errs)
		for _, lws := range leaderWorkerSets(tree) {
			requester := lws.Spec.LeaderWorkerTemplate.WorkerTemplate
			assert.Empty(t, requester.Spec.Volumes, "the requester holds GPUs and mounts nothing")
			patch := requester.Annotations[render.AnnotationDualPodsServerPatch]
			assert.Contains(t, patch, "claimName: granite-model")
			assert.Contains(t, patch, "mountPath: /models")
			assert.Contains(t, patch, "/models/hf/ibm-granite/granite-3.3-2b-instruct/main")
		}
	})
	t.Run("streamed from S3 with a compile cache: no Job, the bucket, the streamer's flag", func(t *testing.T) {
		tree := story(t, "qwen-s3-streamer.yaml")
		assert.Empty(t, objectsOf[*batchv1.Job](tree))
		claims := objectsOf[*corev1.PersistentVolumeClaim](tree)
		require.Len(t, claims, 1, "the compile cache only")
		assert.Equal(t, "qwen3-32b-streamed-compile-cache", claims[0].Name)
		assert.Equal(t, "20Gi", claims[0].Spec.Resources.Requests.Storage().String())
		for _, o := range tree.Objects {
			if o.TypeMeta == render.KindLeaderWorkerSet {
				assert.Equal(t, []string{"compile-cache"}, o.DependsOn, "created once the compile cache is bound")
			}
		}
		server := leaderWorkerSets(tree)[0].Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
		line := strings.Join(vllm.CommandLine(&server), " ")
		assert.Contains(t, line, "--model s3://models/qwen/Qwen3-32B")
		assert.Contains(t, line, "--load-format runai_streamer")
		assert.Contains(t, line, "--served-model-name Qwen/Qwen3-32B")
		assert.Equal(t, "s3-models", server.EnvFrom[0].SecretRef.Name, "the servers read the bucket themselves")
		assert.Equal(t, []corev1.VolumeMount{{Name: api.CompileCacheVolumeName, MountPath: "/compile-cache"}}, server.VolumeMounts)
		assert.Contains(t, server.Env, corev1.EnvVar{Name: "VLLM_CACHE_ROOT", Value: "/compile-cache/vllm"})
		assert.Contains(t, server.Env, corev1.EnvVar{Name: "TRITON_CACHE_DIR", Value: "/compile-cache/triton"})
	})
	t.Run("an image volume", func(t *testing.T) {
		svc := story(t, "story1-monolithic.yaml").Service
		svc.Spec.Model = &api.Model{Source: "oci://registry.example/models/qwen3:8b", Name: "Qwen/Qwen3-8B"}
		tree, errs := render.Build(svc)
		require.Empty(t, errs, "%v", errs)
		tpl := leaderWorkerSets(tree)[0].Spec.LeaderWorkerTemplate.WorkerTemplate
		assert.Equal(t, &corev1.ImageVolumeSource{Reference: "registry.example/models/qwen3:8b", PullPolicy: corev1.PullIfNotPresent},
			tpl.Spec.Volumes[len(tpl.Spec.Volumes)-1].Image)
	})
}

// leaderOf is the template that runs the server of an LWS.
func leaderOf(o render.Object) *corev1.PodTemplateSpec {
	lws := o.Object.(*lwsv1.LeaderWorkerSet)
	if lws.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
		return lws.Spec.LeaderWorkerTemplate.LeaderTemplate
	}
	return &lws.Spec.LeaderWorkerTemplate.WorkerTemplate
}

// TestDownloaderImageIsThisRelease: the Job runs the downloader of the release that rendered it
// (make release builds it; cmd/fusioninfer-download/Dockerfile makes its image).
func TestDownloaderImageIsThisRelease(t *testing.T) {
	version, err := os.ReadFile("../../VERSION")
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/fusioninfer/fusioninfer-download:v"+strings.TrimSpace(string(version)), render.DownloaderImage)
}
