// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

const loraStory = "llama-lora-adapters.yaml"

// TestLoRAServiceRendersAdapters is the "done when": the service renders LoRA-enabled
// vLLM, both kinds of adapters fetched into the cache, and the adapters known to the loader and
// the router.
func TestLoRAServiceRendersAdapters(t *testing.T) {
	tree := story(t, loraStory)
	lws := objectOf[*lwsv1.LeaderWorkerSet](t, tree, "llama-lora-server-0")
	pod := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
	server := pod.Containers[0]
	args := vllm.CommandLine(&server)
	assert.Contains(t, args, vllm.FlagEnableLoRA.Name)
	for flag, want := range map[string]string{vllm.FlagMaxLoras.Name: "4", vllm.FlagMaxLoraRank.Name: "32"} {
		got, found := vllm.FlagValue(args, flag)
		assert.True(t, found, flag)
		assert.Equal(t, want, got, flag)
	}
	_, found := vllm.FlagLoRAModules.Value(args)
	assert.False(t, found, "the adapters are the loader's: on the command line they would be in the LWS")
	assert.Contains(t, server.Env, corev1.EnvVar{Name: vllm.EnvAllowRuntimeLoRAUpdating, Value: "True"})

	require.Len(t, pod.Containers, 2, "the server and the adapters' loader")
	loader := pod.Containers[1]
	assert.Equal(t, render.LoRALoaderContainerName, loader.Name)
	assert.Equal(t, render.DownloaderImage, loader.Image)
	assert.Equal(t, []string{render.LoRALoaderCommand}, loader.Command)
	assert.Equal(t, []string{"--adapters", "/etc/fusioninfer/adapters/adapters.json", "--server", "http://localhost:8000"}, loader.Args)
	require.NotNil(t, loader.ReadinessProbe, "a pod takes traffic once its adapters are loaded")
	assert.Contains(t, loader.VolumeMounts, corev1.VolumeMount{Name: api.ModelVolumeName, MountPath: api.ModelMountPath, ReadOnly: true},
		"the loader sees the adapters' files where the server does, to name one that is not there")
	var adaptersVolume *corev1.Volume
	for i := range pod.Volumes {
		if pod.Volumes[i].ConfigMap != nil {
			adaptersVolume = &pod.Volumes[i]
		}
	}
	require.NotNil(t, adaptersVolume)
	assert.Equal(t, "llama-lora-adapters", adaptersVolume.ConfigMap.Name)

	cm := objectOf[*corev1.ConfigMap](t, tree, "llama-lora-adapters")
	var list vllm.AdapterList
	require.NoError(t, json.Unmarshal([]byte(cm.Data[render.AdapterListFile]), &list))
	assert.Equal(t, vllm.AdapterList{Adapters: []vllm.Adapter{
		{Name: "sql", Path: "/models/hf/example-org/llama-3.1-8b-sql-lora/v1"},
		{Name: "support-v1", Path: "/models/s3/adapters/llama-3.1-8b/support/v1"},
		{Name: "support-v2", Path: "/models/s3/adapters/llama-3.1-8b/support/v2"},
	}}, list)

	job := objectOf[*batchv1.Job](t, tree, "llama-lora-model-download")
	containers := job.Spec.Template.Spec.Containers
	require.Len(t, containers, 2, "the base model, and the adapters one after the other, side by side into one cache")
	assert.Equal(t, render.AdapterDownloadContainerName, containers[1].Name)
	assert.Equal(t, []string{"--cache", api.ModelMountPath, "--source", "hf://example-org/llama-3.1-8b-sql-lora@v1",
		"--source", "s3://adapters/llama-3.1-8b/support/v1", "--source", "s3://adapters/llama-3.1-8b/support/v2"}, containers[1].Args)
	assert.Equal(t, containers[0].EnvFrom, containers[1].EnvFrom, "the adapters' downloads have the model's credentials")
	assert.Equal(t, containers[0].VolumeMounts, containers[1].VolumeMounts)

	rewrite := objectOf[*render.InferenceModelRewrite](t, tree, "llama-lora-support")
	assert.Equal(t, "llama-lora-pool", string(rewrite.Spec.PoolRef.Name))
	require.Len(t, rewrite.Spec.Rules, 1)
	assert.Equal(t, "support", rewrite.Spec.Rules[0].Matches[0].Model.Value)
	targets := rewrite.Spec.Rules[0].Targets
	require.Len(t, targets, 2)
	assert.Equal(t, "support-v1", targets[0].ModelRewrite)
	assert.EqualValues(t, 90, targets[0].Weight)
	data, err := json.Marshal(rewrite)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"targets":[`, "GIE v1.5.0's field name, which the EPPs that read rewrites decode")
}

// TestAddingAnAdapterChangesNoLeaderWorkerSet: the adapter list is the ConfigMap's, so a new
// adapter reaches running servers through the loader, and no replica restarts.
func TestAddingAnAdapterChangesNoLeaderWorkerSet(t *testing.T) {
	before := story(t, loraStory)
	svc := story(t, loraStory).Service
	svc.Spec.Model.Adapters = append(svc.Spec.Model.Adapters, api.LoRAAdapter{Name: "legal", Source: "gs://adapters/legal"})
	after := build(t, svc)
	assert.Equal(t, objectsOf[*lwsv1.LeaderWorkerSet](before), objectsOf[*lwsv1.LeaderWorkerSet](after))
	assert.NotEqual(t, objectOf[*corev1.ConfigMap](t, before, "llama-lora-adapters").Data,
		objectOf[*corev1.ConfigMap](t, after, "llama-lora-adapters").Data)
	assert.Contains(t, objectOf[*batchv1.Job](t, after, "llama-lora-model-download").Spec.Template.Spec.Containers[1].Args, "gs://adapters/legal")
}

// TestAdaptersAreListedAfterTheyAreFetched: the ConfigMap waits for the download Job, so a loader
// never reads an adapter whose files are not there; the servers wait for the ConfigMap they mount.
func TestAdaptersAreListedAfterTheyAreFetched(t *testing.T) {
	tree := story(t, loraStory)
	refs := map[string]render.Ref{}
	for _, o := range tree.Objects {
		refs[o.Name] = o.Ref
	}
	adapters := refs["llama-lora-adapters"]
	assert.Contains(t, adapters.DependsOn, refs["llama-lora-model-download"].Suffix)
	assert.Contains(t, refs["llama-lora-server-0"].DependsOn, adapters.Suffix)
	assert.Contains(t, refs["llama-lora-support"].DependsOn, refs["llama-lora-pool"].Suffix)
}

// TestTheInstalledRewriteCRDKeepsEveryField: the Platform's InferenceModelRewrite CRD has each
// field a split's rewrite sets, or the API server would prune it (v1.2.0's CRD has "split" where
// the rewrite, as the EPPs that read it decode it, has "targets").
func TestTheInstalledRewriteCRDKeepsEveryField(t *testing.T) {
	objects, err := platform.Render(&platform.Spec{})
	require.NoError(t, err)
	var schema map[string]any
	for _, o := range objects {
		if o.Object.GetKind() == "CustomResourceDefinition" && o.Object.GetName() == "inferencemodelrewrites.inference.networking.x-k8s.io" {
			versions, _, _ := unstructured.NestedSlice(o.Object.Object, "spec", "versions")
			schema, _, _ = unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema")
		}
	}
	require.NotNil(t, schema, "the Platform installs the InferenceModelRewrite CRD")
	rewrite := objectOf[*render.InferenceModelRewrite](t, story(t, loraStory), "llama-lora-support")
	data, err := json.Marshal(rewrite)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, json.Unmarshal(data, &obj))
	delete(obj, "metadata")
	assertKnownFields(t, "", obj, schema)
}

// assertKnownFields fails on each field of value its structural schema does not declare.
func assertKnownFields(t *testing.T, path string, value any, schema map[string]any) {
	t.Helper()
	switch v := value.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for k, child := range v {
			if path == "" && (k == "apiVersion" || k == "kind") {
				continue
			}
			sub, ok := props[k].(map[string]any)
			if !assert.True(t, ok, "%s.%s is not in the installed CRD: the API server prunes it", path, k) {
				continue
			}
			assertKnownFields(t, path+"."+k, child, sub)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for i, child := range v {
			assertKnownFields(t, fmt.Sprintf("%s[%d]", path, i), child, items)
		}
	}
}

// TestMountedAdapters: an adapter from a claim or an image is a read-only volume of the server's
// pod, mounted where the server and the loader both find it, as the base model's pvc:// and oci://
// are; the download Job fetches only the others, and a model with no fetched adapter and no cache
// still gets its adapter list.
func TestMountedAdapters(t *testing.T) {
	svc := story(t, loraStory).Service
	svc.Spec.Model.Adapters[0].Source = "pvc://adapters/llama/sql"
	svc.Spec.Model.Adapters = append(svc.Spec.Model.Adapters, api.LoRAAdapter{Name: "legal", Source: "oci://registry.example.com/adapters/legal:v1"})
	tree := build(t, svc)
	pod := objectOf[*lwsv1.LeaderWorkerSet](t, tree, "llama-lora-server-0").Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
	volumes := map[string]corev1.VolumeSource{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v.VolumeSource
	}
	assert.Equal(t, corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "adapters", ReadOnly: true}},
		volumes["adapter-sql"])
	assert.Equal(t, corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.example.com/adapters/legal:v1",
		PullPolicy: corev1.PullIfNotPresent}}, volumes["adapter-legal"])
	for _, c := range pod.Containers { // the server and the loader
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "adapter-sql", MountPath: "/adapters/sql", ReadOnly: true}, c.Name)
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "adapter-legal", MountPath: "/adapters/legal", ReadOnly: true}, c.Name)
	}
	var list vllm.AdapterList
	require.NoError(t, json.Unmarshal([]byte(objectOf[*corev1.ConfigMap](t, tree, "llama-lora-adapters").Data[render.AdapterListFile]), &list))
	assert.Equal(t, vllm.Adapter{Name: "sql", Path: "/adapters/sql/llama/sql"}, list.Adapters[0])
	assert.Equal(t, vllm.Adapter{Name: "legal", Path: "/adapters/legal"}, list.Adapters[3])
	var fetched []string
	for _, c := range objectOf[*batchv1.Job](t, tree, "llama-lora-model-download").Spec.Template.Spec.Containers {
		for i, arg := range c.Args {
			if arg == "--source" {
				fetched = append(fetched, c.Args[i+1])
			}
		}
	}
	assert.Equal(t, []string{svc.Spec.Model.Source, "s3://adapters/llama-3.1-8b/support/v1", "s3://adapters/llama-3.1-8b/support/v2"}, fetched,
		"a mounted adapter is not fetched")
	assert.Contains(t, render.DescribeModel(render.Summarize(tree).Models[0]), "LoRA adapters sql, support-v1, support-v2, legal "+
		"(sql, legal mounted read-only from their claims or images, the others fetched by the same Job, listed in ConfigMap llama-lora-adapters")

	// the base model on a claim, every adapter mounted: no cache, no Job, the list all the same
	svc.Spec.Model.Source, svc.Spec.Model.Cache, svc.Spec.Model.CredentialsSecret = "pvc://weights/llama", nil, nil
	svc.Spec.Model.Adapters = svc.Spec.Model.Adapters[:1]
	svc.Spec.Model.AdapterSplits = nil
	tree = build(t, svc)
	for _, o := range tree.Objects {
		assert.NotEqual(t, render.KindJob, o.TypeMeta, "nothing to fetch")
	}
	refs := map[string]render.Ref{}
	for _, o := range tree.Objects {
		refs[o.Name] = o.Ref
	}
	require.Contains(t, refs, "llama-lora-adapters")
	assert.Contains(t, refs["llama-lora-server-0"].DependsOn, refs["llama-lora-adapters"].Suffix)
	pod = objectOf[*lwsv1.LeaderWorkerSet](t, tree, "llama-lora-server-0").Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
	loader := pod.Containers[1]
	assert.Equal(t, render.LoRALoaderContainerName, loader.Name)
	for _, m := range loader.VolumeMounts {
		assert.NotEqual(t, api.ModelMountPath, m.MountPath, "no adapter in the model's volume: the loader does not mount it")
	}
}

// TestTheRewriteIsInTheGroupThePickerWatches: a split's InferenceModelRewrite is rendered in the
// API group the release's Endpoint Picker watches on a cluster with the CRD groups the router
// names (eppconfig.Release.WatchedGroup), and refused, naming the field, where it would watch none:
// the object would be ignored (a request for the split's name gets 404) or refused by the API
// server. Every release and every set of CRD groups; through the manifest's decoder.
func TestTheRewriteIsInTheGroupThePickerWatches(t *testing.T) {
	const refusedNoRewrites = "spec.model.adapterSplits: Forbidden: the router's Endpoint Picker (%s) reads no InferenceModelRewrite"
	const refusedGroups = "spec.model.adapterSplits: Forbidden: the router's Endpoint Picker (gie-v1.5.0) watches InferenceModelRewrites " +
		"only in inference.networking.x-k8s.io, and endpointPicker.crdGroups says the cluster has their CRD in llm-d.ai"
	const refusedObjectives = "spec.roles[1].endpointPicker.crdGroups: Invalid value: \"llm-d.ai\": the Endpoint Picker of gie-v1.2.0 watches " +
		"InferenceObjectives of inference.networking.x-k8s.io whatever the cluster has"
	want := map[api.EndpointPickerRelease]map[api.InferenceCRDGroups]string{ // the rewrite's apiVersion, or the error
		api.EPPReleaseLLMDRouter: {"": "llm-d.ai/v1alpha2", api.CRDGroupsInferenceExtension: "inference.networking.x-k8s.io/v1alpha2",
			api.CRDGroupsLLMD: "llm-d.ai/v1alpha2", api.CRDGroupsBoth: "llm-d.ai/v1alpha2"},
		api.EPPReleaseGIE150: {"": "inference.networking.x-k8s.io/v1alpha2", api.CRDGroupsInferenceExtension: "inference.networking.x-k8s.io/v1alpha2",
			api.CRDGroupsLLMD: refusedGroups, api.CRDGroupsBoth: "inference.networking.x-k8s.io/v1alpha2"},
		api.EPPReleaseGIE: {"": fmt.Sprintf(refusedNoRewrites, "gie-v1.2.0"), api.CRDGroupsInferenceExtension: fmt.Sprintf(refusedNoRewrites, "gie-v1.2.0"),
			api.CRDGroupsLLMD: refusedObjectives, api.CRDGroupsBoth: fmt.Sprintf(refusedNoRewrites, "gie-v1.2.0")},
		api.EPPReleaseLWEPP: {"": fmt.Sprintf(refusedNoRewrites, "gie-lwepp-v1.6.0"), api.CRDGroupsInferenceExtension: fmt.Sprintf(refusedNoRewrites, "gie-lwepp-v1.6.0"),
			api.CRDGroupsLLMD: fmt.Sprintf(refusedNoRewrites, "gie-lwepp-v1.6.0"), api.CRDGroupsBoth: fmt.Sprintf(refusedNoRewrites, "gie-lwepp-v1.6.0")},
	}
	for release, byGroups := range want {
		for groups, wanted := range byGroups {
			t.Run(fmt.Sprintf("%s/%s", release, groups), func(t *testing.T) {
				svc := story(t, loraStory).Service
				router := svc.Spec.Router()
				router.Strategy = ""
				router.EndpointPicker = &api.EndpointPicker{Release: release, CRDGroups: groups}
				tree, errs := render.Build(svc)
				if strings.Contains(wanted, ":") {
					require.NotEmpty(t, errs, "refused")
					assert.Contains(t, errs.ToAggregate().Error(), wanted)
					return
				}
				require.Empty(t, errs)
				rewrite := objectOf[*render.InferenceModelRewrite](t, tree, "llama-lora-support")
				assert.Equal(t, wanted, rewrite.APIVersion)
				for _, o := range tree.Objects {
					if o.Name == "llama-lora-support" {
						assert.Equal(t, wanted, o.APIVersion, "the plan's kind is the object's")
					}
				}
			})
		}
	}
}

// TestCRDGroupsThroughTheManifest: endpointPicker.crdGroups read from a manifest puts the split's
// rewrite, for the default release, in the Inference Extension's group on a cluster that has only
// that one, and by default (the Platform's both) in llm-d.ai, the group llm-d-router prefers; the
// picker's pod names the group it must find at its start, so a change of it restarts the picker.
func TestCRDGroupsThroughTheManifest(t *testing.T) {
	data, err := os.ReadFile(manifests + loraStory)
	require.NoError(t, err)
	text := strings.Replace(string(data), "      strategy: lora-affinity\n",
		"      strategy: lora-affinity\n      endpointPicker: {crdGroups: inference.networking.x-k8s.io}\n", 1)
	require.NotEqual(t, string(data), text)
	docs, errs := api.Decode([]byte(text))
	require.Empty(t, errs)
	onlyInferenceX := build(t, docs[0].Service)
	assert.Equal(t, "inference.networking.x-k8s.io/v1alpha2", objectOf[*render.InferenceModelRewrite](t, onlyInferenceX, "llama-lora-support").APIVersion)
	byDefault := story(t, loraStory)
	assert.Equal(t, "llm-d.ai/v1alpha2", objectOf[*render.InferenceModelRewrite](t, byDefault, "llama-lora-support").APIVersion)

	const watched = "fusioninfer.io/watched-crd-group"
	assert.Equal(t, "inference.networking.x-k8s.io", objectOf[*appsv1.Deployment](t, onlyInferenceX, "llama-lora-epp").Spec.Template.Annotations[watched])
	assert.Equal(t, "llm-d.ai", objectOf[*appsv1.Deployment](t, byDefault, "llama-lora-epp").Spec.Template.Annotations[watched])
	gie150 := story(t, loraStory).Service
	gie150.Spec.Router().EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseGIE150}
	assert.NotContains(t, objectOf[*appsv1.Deployment](t, build(t, gie150), "llama-lora-epp").Spec.Template.Annotations, watched,
		"gie-v1.5.0 watches one group whatever the cluster serves: nothing to restart it for")
}

// TestAdaptersReachEveryDataParallelRank: each local rank of a data parallel pod is a server the
// pool routes to (its own port), so the pod's loader loads every adapter into each of them, and
// the pool's ports are exactly the servers the loader reconciles.
func TestAdaptersReachEveryDataParallelRank(t *testing.T) {
	svc := story(t, loraStory).Service
	server := svc.Spec.RoleNamed("server")
	server.Parallelism = &api.Parallelism{Data: 4}
	server.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceName("nvidia.com/gpu")] = resource.MustParse("4")
	tree := build(t, svc)
	pod := objectOf[*lwsv1.LeaderWorkerSet](t, tree, "llama-lora-server-0").Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
	var loader *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == render.LoRALoaderContainerName {
			loader = &pod.Containers[i]
		}
	}
	require.NotNil(t, loader, "one loader a pod")
	var servers []string
	for i, arg := range loader.Args {
		if arg == "--server" {
			servers = append(servers, loader.Args[i+1])
		}
	}
	var routed []string
	for _, p := range objectOf[*inferencev1.InferencePool](t, tree, "llama-lora-pool").Spec.TargetPorts {
		routed = append(routed, fmt.Sprintf("http://localhost:%d", p.Number))
	}
	assert.Equal(t, []string{"http://localhost:8000", "http://localhost:8001", "http://localhost:8002", "http://localhost:8003"}, servers)
	assert.Equal(t, routed, servers, "every rank the pool routes to")
}

// TestEveryAdapterSourceIsFetchedOnceByABoundedJob is a property over generated adapter lists
// (many adapters, sources shared between adapters, an adapter whose source is the base model's,
// mounted ones among them): the download Job fetches each cache directory once, by one container
// (two writers of one directory would share its .part files), every fetched adapter's directory
// among them, with at most two containers (the base model, the adapters) whatever the number of
// adapters, so the Job's pod fits a node.
func TestEveryAdapterSourceIsFetchedOnceByABoundedJob(t *testing.T) {
	base := story(t, loraStory).Service.Spec.Model.Source
	pool := []string{base, "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659", "hf://org/sql-lora@v1", "hf://org/sql-lora@main", "hf://org/sql-lora",
		"s3://adapters/support/v1", "s3://adapters/support/v2", "gs://adapters/legal", "pvc://adapters/llama/sql", "oci://registry.example.com/a/b:v1"}
	random := rand.New(rand.NewPCG(42, 27))
	for round := range 60 {
		svc := story(t, loraStory).Service
		svc.Spec.Model.AdapterSplits = nil
		svc.Spec.Model.Adapters = nil
		n := 1 + random.IntN(8)
		if round%10 == 0 {
			n = 300
		}
		for i := range n {
			source := pool[random.IntN(len(pool))]
			if n == 300 && i%2 == 0 {
				source = fmt.Sprintf("s3://adapters/many/%d", i)
			}
			svc.Spec.Model.Adapters = append(svc.Spec.Model.Adapters, api.LoRAAdapter{Name: fmt.Sprintf("a%d", i), Source: source})
		}
		tree := build(t, svc)
		job := objectOf[*batchv1.Job](t, tree, "llama-lora-model-download")
		containers := job.Spec.Template.Spec.Containers
		assert.LessOrEqual(t, len(containers), 2, "round %d: %d adapters", round, n)
		writers := map[string]int{} // cache directory -> containers that write it
		for _, c := range containers {
			for i, arg := range c.Args {
				if arg == "--source" {
					src, err := modelsource.Parse(c.Args[i+1])
					require.NoError(t, err)
					writers[src.CacheDir()]++
				}
			}
		}
		for dir, count := range writers {
			assert.Equal(t, 1, count, "round %d: %s is fetched %d times", round, dir, count)
		}
		for _, a := range svc.Spec.Model.Adapters {
			if src, _ := modelsource.Parse(a.Source); src.Downloaded() {
				assert.Contains(t, writers, src.CacheDir(), "round %d: adapter %s is fetched", round, a.Name)
			}
		}
	}
}
