// SPDX-License-Identifier: Apache-2.0

package api

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// cachedService is story 4 with its weights downloaded from the Hub into a cache.
func cachedService() *InferenceService {
	s := validService()
	s.Spec.Model = &Model{Source: "hf://deepseek-ai/DeepSeek-R1@56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad",
		CredentialsSecret: &corev1.LocalObjectReference{Name: "hf-token"},
		Cache:             &ModelCache{Size: "1500Gi", StorageClassName: "shared-rwx"}}
	return s
}

func TestModelServicesPass(t *testing.T) {
	assert.Empty(t, Validate(cachedService()))
	for name, m := range map[string]*Model{
		"streamed from S3":      {Source: "s3://models/deepseek-r1", LoadFormat: RunaiStreamer, Name: "deepseek-ai/DeepSeek-R1"},
		"a claim's directory":   {Source: "pvc://weights/deepseek/r1", Name: "deepseek-ai/DeepSeek-R1", CompileCache: &CompileCache{StorageClassName: "nfs"}},
		"an image volume":       {Source: "oci://registry.example/models/deepseek-r1:v1", Name: "deepseek-ai/DeepSeek-R1"},
		"a GCS bucket, cached":  {Source: "gs://models/deepseek-r1", Name: "deepseek-ai/DeepSeek-R1", Cache: &ModelCache{Size: "2Ti", StorageClassName: "filestore", AccessMode: corev1.ReadOnlyMany}},
		"a Hub repository only": {Source: "hf://deepseek-ai/DeepSeek-R1", Cache: &ModelCache{Size: "1500Gi", StorageClassName: "efs", DownloadTimeout: "12h"}},
	} {
		s := validService()
		s.Spec.Model = m
		assert.Empty(t, Validate(s), name)
	}
}

func TestModelRules(t *testing.T) {
	model := func(s *InferenceService) *Model { return s.Spec.Model }
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"a source", func(s *InferenceService) { model(s).Source = "" }, "spec.model.source: Required value"},
		{"an unknown scheme", func(s *InferenceService) { model(s).Source = "ftp://models/r1" },
			`spec.model.source: Invalid value: "ftp://models/r1": unknown scheme "ftp": use one of hf, s3, gs, pvc, oci`},
		{"no scheme", func(s *InferenceService) { model(s).Source = "deepseek-ai/DeepSeek-R1" },
			`spec.model.source: Invalid value: "deepseek-ai/DeepSeek-R1": no scheme: write hf://`},
		{"a Hub repository", func(s *InferenceService) { model(s).Source = "hf://deepseek-ai/DeepSeek R1" },
			"a Hub source is hf://org/name[@revision]"},
		{"a path that climbs out", func(s *InferenceService) { model(s).Source = "s3://models/../secrets"; model(s).Name = "r1" },
			`the path may not contain ".."`},
		{"a pvc:// claim that asks for a download", func(s *InferenceService) {
			model(s).Source, model(s).CredentialsSecret = "pvc://weights/deepseek", nil
		}, "spec.model.cache: Forbidden: a pvc:// source is mounted as it is: nothing is downloaded, remove cache"},
		{"a download needs a cache", func(s *InferenceService) { model(s).Cache = nil },
			"spec.model.cache: Required value: a hf:// source is downloaded once into a cache every server mounts: give cache.size and cache.storageClassName"},
		{"an S3 source without cache may stream", func(s *InferenceService) { model(s).Source, model(s).Cache = "s3://models/r1", nil },
			"or stream it with loadFormat runai_streamer"},
		{"a cache size", func(s *InferenceService) { model(s).Cache.Size = "" },
			"spec.model.cache.size: Required value: the claim's size"},
		{"a cache size that is a quantity", func(s *InferenceService) { model(s).Cache.Size = "1.5 TB" },
			`spec.model.cache.size: Invalid value: "1.5 TB": must be a positive quantity such as 1500Gi`},
		{"a positive cache size", func(s *InferenceService) { model(s).Cache.Size = "0" },
			`spec.model.cache.size: Invalid value: "0": must be a positive quantity`},
		{"a storage class", func(s *InferenceService) { model(s).Cache.StorageClassName = "" },
			"spec.model.cache.storageClassName: Required value: a storage class whose volumes many nodes can mount"},
		{"an access mode many nodes read", func(s *InferenceService) { model(s).Cache.AccessMode = corev1.ReadWriteOnce },
			`spec.model.cache.accessMode: Unsupported value: "ReadWriteOnce": supported values: "ReadWriteMany", "ReadOnlyMany"`},
		{"a download timeout", func(s *InferenceService) { model(s).Cache.DownloadTimeout = "30s" },
			`spec.model.cache.downloadTimeout: Invalid value: "30s": must be a duration of whole seconds from 1m to 168h0m0s`},
		{"exclude patterns are globs", func(s *InferenceService) { model(s).Cache.Exclude = []string{"original", "[a-"} },
			`spec.model.cache.exclude[1]: Invalid value: "[a-": must be a glob pattern such as "original" or "*.pth"`},
		{"a secret reference with a name", func(s *InferenceService) { model(s).CredentialsSecret.Name = "" },
			"spec.model.credentialsSecret.name: Required value"},
		{"no credentials for a claim", func(s *InferenceService) { model(s).Source, model(s).Cache = "pvc://weights", nil },
			"spec.model.credentialsSecret: Forbidden: a pvc:// source is mounted, not fetched"},
		{"runai_streamer with a Hub source", func(s *InferenceService) { model(s).LoadFormat = RunaiStreamer },
			`spec.model.loadFormat: Invalid value: "runai_streamer": the Run:ai streamer reads object storage: it needs an s3:// or gs:// source, not hf://`},
		{"runai_streamer with a cache", func(s *InferenceService) { model(s).Source, model(s).LoadFormat = "s3://models/r1", RunaiStreamer },
			"spec.model.cache: Forbidden: the Run:ai streamer reads the bucket directly"},
		{"a load format vLLM has", func(s *InferenceService) { model(s).LoadFormat = "tensorizer" },
			`spec.model.loadFormat: Unsupported value: "tensorizer": supported values: "runai_streamer"`},
		{"a compile cache needs a storage class", func(s *InferenceService) {
			model(s).Source, model(s).Cache, model(s).CredentialsSecret, model(s).CompileCache = "pvc://weights", nil, nil, &CompileCache{}
		}, "spec.model.compileCache.storageClassName: Required value"},
		{"--model contradicts the source", func(s *InferenceService) { model(s).Source = "hf://deepseek-ai/DeepSeek-V3" },
			`spec.roles[0].template.spec.containers[0].args: Invalid value: "deepseek-ai/DeepSeek-R1": the server's model contradicts the model's source hf://deepseek-ai/DeepSeek-V3`},
		{"--load-format contradicts loadFormat", func(s *InferenceService) {
			model(s).Source, model(s).Cache, model(s).LoadFormat, model(s).Name = "s3://models/r1", nil, RunaiStreamer, "deepseek-ai/DeepSeek-R1"
			s.Spec.Roles[1].Template.Spec.Containers[0].Args = append(s.Spec.Roles[1].Template.Spec.Containers[0].Args, "--load-format", "safetensors")
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "safetensors": --load-format contradicts the model's loadFormat runai_streamer`},
		{"a shell script cannot be pointed at the model", func(s *InferenceService) {
			s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}}
			s.Spec.Roles[0].Template.Spec.Containers[0].Command = []string{"sh", "-c", "vllm serve deepseek-ai/DeepSeek-R1"}
		}, "spec.roles[0].template.spec.containers[0].command: Invalid value"},
		{"the model's volume names are ours", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Volumes = []corev1.Volume{{Name: ModelVolumeName}}
		}, `spec.roles[0].template.spec.volumes[0].name: Invalid value: "fusioninfer-model": the model's volumes have this name`},
		{"the model's mount path is ours", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "mine", MountPath: ModelMountPath}}
		}, `spec.roles[0].template.spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/models"`},
		{"a router loads no model", func(s *InferenceService) {
			s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter, Model: model(s)})
		}, "spec.roles[2].model: Forbidden: only a serving role (worker, prefiller, decoder) loads a model"},
		{"a role's own model is checked with its path", func(s *InferenceService) {
			s.Spec.Roles[0].Model = &Model{Source: "hf://deepseek-ai/DeepSeek-R1"}
		}, "spec.roles[0].model.cache: Required value"},
		{"the download Job's name fits a label", func(s *InferenceService) {
			s.Name = "deepseek-r1-disaggregated-with-a-very-long-service-name"
		}, `spec.model.cache: Invalid value: "deepseek-r1-disaggregated-with-a-very-long-service-name-model-download": the download Job's name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, cachedService, tc.mutate, tc.want) })
	}
}

func TestModelDerivedValues(t *testing.T) {
	m := resolvedModel(t, cachedService().Spec.Model)
	assert.Equal(t, "deepseek-ai/DeepSeek-R1", m.ServedName())
	assert.Equal(t, "/models/hf/deepseek-ai/DeepSeek-R1/56d4cbbb4d29f4355bab4b9a39ccb717a14ad5ad", m.ServerPath())
	assert.Equal(t, 8*time.Hour+32*time.Minute, m.DownloadTimeout, "1500Gi at 50 MiB/s: 30720 s, a whole 8h32m, as the field's doc says")
	for size, want := range map[string]time.Duration{
		"1537550Mi": 8*time.Hour + 33*time.Minute, // 8h32m31s, rounded up to the minute
		"1536001Mi": 8*time.Hour + 33*time.Minute, // 8h32m0.02s
		"180000Mi":  time.Hour,                    // exactly an hour
		"180001Mi":  time.Hour + time.Minute,
	} {
		sized := &Model{Source: "hf://org/sized", Cache: &ModelCache{Size: size, StorageClassName: "fast"}}
		assert.Equal(t, want, resolvedModel(t, sized).DownloadTimeout, "%s at 50 MiB/s, rounded up to the minute", size)
	}
	assert.Equal(t, "1500Gi", m.CacheSize.String())
	small := &Model{Source: "hf://org/small", Cache: &ModelCache{Size: "10Gi", StorageClassName: "fast"}}
	assert.Equal(t, time.Hour, resolvedModel(t, small).DownloadTimeout, "at least an hour")
	small.Cache.DownloadTimeout = "3h"
	assert.Equal(t, 3*time.Hour, resolvedModel(t, small).DownloadTimeout)
	small.CompileCache = &CompileCache{}
	assert.Equal(t, DefaultCompileCacheSize, resolvedModel(t, small).CompileCacheSize.String())
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany},
		(&ModelCache{AccessMode: corev1.ReadOnlyMany}).AccessModes(), "one writer node, then many readers")
	assert.Equal(t, "s3://models/r1", resolvedModel(t, &Model{Source: "s3://models/r1", LoadFormat: RunaiStreamer}).ServerPath(), "streamed: the bucket itself")
	assert.Equal(t, "/models/deepseek/r1", resolvedModel(t, &Model{Source: "pvc://weights/deepseek/r1/"}).ServerPath())
	oci := resolvedModel(t, &Model{Source: "oci://registry.example/models/r1:v1"})
	assert.Equal(t, "/models", oci.ServerPath())
	assert.Equal(t, "r1", oci.ServedName())
	assert.False(t, oci.Downloads(), "an image volume is mounted, not downloaded")

	s := cachedService()
	s.Spec.Roles[0].Model = &Model{Source: "pvc://weights/draft"}
	assert.Equal(t, "prefill", ModelOwner(&s.Spec.Roles[0]))
	assert.Equal(t, "deepseek-r1-disagg-prefill-model-download", ModelDownloadJobName(s.Name, "prefill"))
	assert.Same(t, s.Spec.Model, s.Spec.ModelOf(&s.Spec.Roles[1]), "a role without its own model serves the service's")
}

// resolvedModel is a model as validation resolves it, as the service's model.
func resolvedModel(t *testing.T, m *Model) *ResolvedModel {
	t.Helper()
	s := cachedService()
	s.Spec.Model = m
	resolved, errs := ResolveShape(s)
	require.Empty(t, errs)
	return resolved.Models[""]
}

// adapterService is a Llama-3.1-8B worker with two LoRA adapters, one from the Hub, one from S3.
func adapterService() *InferenceService {
	s := validService()
	s.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}}
	s.Spec.Model = &Model{Source: "hf://meta-llama/Llama-3.1-8B-Instruct@0e9e39f249a16976918f6564b8830bc894c89659",
		Cache: &ModelCache{Size: "100Gi", StorageClassName: "shared-rwx"},
		Adapters: []LoRAAdapter{
			{Name: "sql", Source: "hf://org/llama-3.1-8b-sql-lora@v1"},
			{Name: "support-v1", Source: "s3://adapters/support/v1"},
			{Name: "support-v2", Source: "s3://adapters/support/v2"},
		},
		AdapterSplits: []AdapterSplit{{Name: "support", Targets: []AdapterSplitTarget{{Adapter: "support-v1", Weight: 90}, {Adapter: "support-v2", Weight: 10}}}},
	}
	s.Spec.Roles = append(s.Spec.Roles, Role{Name: "router", ComponentType: ComponentTypeRouter,
		HTTPRoute: httpRoute(`{"parentRefs":[{"name":"inference-gateway"}]}`)})
	return s
}

// twoModelService is adapterService with a second serving role of its own model, in the one pool.
func twoModelService() *InferenceService {
	s := adapterService()
	s.Spec.Roles = append(s.Spec.Roles, Role{Name: "big", ComponentType: ComponentTypeWorker, Template: server(),
		Model: &Model{Source: "hf://meta-llama/Llama-3.1-70B-Instruct@1e9e39f249a16976918f6564b8830bc894c89659",
			Cache:    &ModelCache{Size: "300Gi", StorageClassName: "shared-rwx"},
			Adapters: []LoRAAdapter{{Name: "legal", Source: "hf://org/llama-3.1-70b-legal-lora@v1"}}}})
	return s
}

// TestAdapterNamesAreThePoolsOwn: behind a router, every serving role is in one pool, and the
// Endpoint Picker sends a request for a name to any of its servers: a name of one model's
// adapter or split that another model of the pool serves reaches a server without it (or, two
// splits, gives two rewrites of one name). The same adapter of the same base on two roles (a
// prefill and a decode role, each with its own model) serves alike wherever it lands.
func TestAdapterNamesAreThePoolsOwn(t *testing.T) {
	assert.Empty(t, Validate(twoModelService()))
	big := func(s *InferenceService) *Model { return s.Spec.Roles[2].Model }
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"one adapter name on two base models", func(s *InferenceService) { big(s).Adapters[0].Name = "sql" },
			`spec.roles[2].model.adapters[0].name: Invalid value: "sql": spec.model has an adapter of this name, and the router's pool ` +
				`sends a request for it to any server of either model: give it another name`},
		{"one split name on two models", func(s *InferenceService) {
			big(s).AdapterSplits = []AdapterSplit{{Name: "support", Targets: []AdapterSplitTarget{{Adapter: "legal", Weight: 1}}}}
		}, `spec.roles[2].model.adapterSplits[0].name: Invalid value: "support": spec.model has a split of this name`},
		{"an adapter named as another model", func(s *InferenceService) {
			big(s).Adapters[0].Name = "sql"
			s.Spec.Model.Adapters[0].Name, s.Spec.Model.AdapterSplits = "sql-v1", nil
			s.Spec.Model.Name = "sql"
		}, `spec.roles[2].model.adapters[0].name: Invalid value: "sql": spec.model serves its base model under this name`},
		{"a split named as another model's adapter", func(s *InferenceService) {
			big(s).AdapterSplits = []AdapterSplit{{Name: "sql", Targets: []AdapterSplitTarget{{Adapter: "legal", Weight: 1}}}}
		}, `spec.roles[2].model.adapterSplits[0].name: Invalid value: "sql": spec.model has an adapter of this name`},
		{"one name, another source, one base", func(s *InferenceService) {
			m := *s.Spec.Model
			m.AdapterSplits = nil
			m.Adapters = []LoRAAdapter{{Name: "sql", Source: "hf://org/llama-3.1-8b-sql-lora@v2"}}
			s.Spec.Roles[2].Model = &m
		}, `spec.roles[2].model.adapters[0].name: Invalid value: "sql": spec.model has an adapter of this name`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, twoModelService, tc.mutate, tc.want) })
	}

	s := twoModelService()
	m := *s.Spec.Model
	m.AdapterSplits = nil
	s.Spec.Roles[2].Model = &m
	assert.Empty(t, Validate(s), "the same adapters of the same base model on two roles serve alike")
	s = twoModelService()
	big(s).Adapters[0].Name = "sql"
	s.Spec.Model.AdapterSplits, s.Spec.Roles = nil, []Role{s.Spec.Roles[0], s.Spec.Roles[2]}
	assert.Empty(t, Validate(s), "no router, no pool: each role is reached on its own")
}

func TestAdapterServicePasses(t *testing.T) {
	assert.Empty(t, Validate(adapterService()))
	s := adapterService()
	s.Spec.Model.AdapterSplits, s.Spec.Roles = nil, s.Spec.Roles[:1]
	assert.Empty(t, Validate(s), "adapters need no router; only a split does")
}

// TestMountedAdapters: an adapter from a claim or an image is mounted read-only, as the base
// model's pvc:// and oci:// are, at a directory of its own; it needs no cache.
func TestMountedAdapters(t *testing.T) {
	s := adapterService()
	s.Spec.Model.Adapters[0].Source = "pvc://adapters/llama/sql"
	s.Spec.Model.Adapters = append(s.Spec.Model.Adapters, LoRAAdapter{Name: "legal", Source: "oci://registry.example.com/adapters/legal:v1"})
	resolved, errs := Resolve(s)
	require.Empty(t, errs)
	m := resolved.Models[""]
	require.Len(t, m.Adapters, 4)
	assert.Equal(t, "/adapters/sql/llama/sql", m.Adapters[0].ServerPath())
	assert.True(t, m.Adapters[0].Mounted())
	assert.Equal(t, "/models/s3/adapters/support/v1", m.Adapters[1].ServerPath())
	assert.False(t, m.Adapters[1].Mounted())
	assert.Equal(t, "/adapters/legal", m.Adapters[3].ServerPath())

	s = adapterService()
	s.Spec.Model.Source, s.Spec.Model.Cache = "pvc://weights/llama", nil
	for i, source := range []string{"pvc://adapters", "pvc://adapters/support/v1", "oci://registry.example.com/adapters/support:v2"} {
		s.Spec.Model.Adapters[i].Source = source
	}
	assert.Empty(t, Validate(s), "mounted adapters need no cache")
}

func TestAdapterRules(t *testing.T) {
	model := func(s *InferenceService) *Model { return s.Spec.Model }
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"two adapters of one name", func(s *InferenceService) { model(s).Adapters[1].Name = "sql" },
			`spec.model.adapters[1].name: Duplicate value: "sql"`},
		{"an adapter's name is a DNS label", func(s *InferenceService) { model(s).Adapters[0].Name = "SQL_v1" },
			`spec.model.adapters[0].name: Invalid value: "SQL_v1": a lowercase RFC 1123 label`},
		{"an adapter's name", func(s *InferenceService) { model(s).Adapters[0].Name = "" },
			"spec.model.adapters[0].name: Required value"},
		{"an adapter's name fits the download's container", func(s *InferenceService) { model(s).Adapters[0].Name = strings.Repeat("a", 56) },
			"spec.model.adapters[0].name: Too long: may not be more than 55 bytes"},
		{"an adapter is not the base model", func(s *InferenceService) { model(s).Name = "sql" },
			`spec.model.adapters[0].name: Invalid value: "sql": the base model is served as "sql": give the adapter another name`},
		{"an adapter's source", func(s *InferenceService) { model(s).Adapters[0].Source = "" },
			"spec.model.adapters[0].source: Required value: hf://org/name[@revision], s3://bucket/prefix, gs://bucket/prefix, pvc://claim/path or oci://image"},
		{"an adapter's source parses", func(s *InferenceService) { model(s).Adapters[0].Source = "ftp://x/y" },
			`spec.model.adapters[0].source: Invalid value: "ftp://x/y": unknown scheme "ftp"`},
		{"a fetched adapter needs the model's cache", func(s *InferenceService) { model(s).Source, model(s).Cache = "pvc://weights/llama", nil },
			"spec.model.adapters[0].source: Forbidden: an hf:// adapter is fetched into the model's cache: the model needs a cache " +
				"(an hf://, s3:// or gs:// source with cache), or give the adapter a pvc:// or oci:// source, mounted as it is"},
		{"a mounted adapter's volume name is ours", func(s *InferenceService) {
			model(s).Adapters[0].Source = "pvc://adapters/sql"
			s.Spec.Roles[0].Template.Spec.Volumes = append(s.Spec.Roles[0].Template.Spec.Volumes, corev1.Volume{Name: "adapter-sql",
				VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		}, `spec.roles[0].template.spec.volumes[0].name: Invalid value: "adapter-sql": the model's volumes have this name: rename yours`},
		{"the mounted adapters' directory is ours", func(s *InferenceService) {
			model(s).Adapters[0].Source = "oci://registry.example.com/adapters/sql:v1"
			tpl := &s.Spec.Roles[0].Template.Spec
			tpl.Volumes = append(tpl.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			tpl.Containers[0].VolumeMounts = append(tpl.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "scratch", MountPath: "/adapters/tmp"})
		}, `spec.roles[0].template.spec.containers[0].volumeMounts[0].mountPath: Invalid value: "/adapters/tmp": the model's volumes are mounted here: mount yours elsewhere`},
		{"a rank vLLM has", func(s *InferenceService) { model(s).MaxLoraRank = ptr.To(24) },
			`spec.model.maxLoraRank: Unsupported value: 24: supported values: "1", "8", "16", "32", "64", "128", "256", "320", "512"`},
		{"at least one adapter a batch", func(s *InferenceService) { model(s).MaxLoras = ptr.To(0) },
			"spec.model.maxLoras: Invalid value: 0: must be at least 1"},
		{"maxLoras is not given again in the args", func(s *InferenceService) {
			model(s).MaxLoras = ptr.To(4)
			s.Spec.Roles[0].Template.Spec.Containers[0].Args = []string{"--max_loras", "8"}
		}, `spec.model.maxLoras: Invalid value: 4: spec.roles[0].template.spec.containers[0].args give --max-loras 8, which vLLM reads instead: give it once, here or there`},
		{"nor maxLoraRank", func(s *InferenceService) {
			model(s).MaxLoraRank = ptr.To(32)
			s.Spec.Roles[0].Template.Spec.Containers[0].Args = []string{"--max-lora-rank=64"}
		}, `spec.model.maxLoraRank: Invalid value: 32: spec.roles[0].template.spec.containers[0].args give --max-lora-rank 64`},
		{"an adapter is not a name the args serve the base model as", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].Args = []string{"--served-model-name", "llama", "sql", "--port", "8000"}
		}, `spec.model.adapters[0].name: Invalid value: "sql": spec.roles[0].template.spec.containers[0].args serve the base model as "sql" (--served-model-name): ` +
			`a request for it reaches the base model, never the adapter: give the adapter another name`},
		{"a server of adapters is single-node", func(s *InferenceService) { s.Spec.Roles[0].Multinode = &Multinode{NodeCount: 2} },
			"spec.roles[0].multinode: Forbidden: the model's adapters are loaded by a sidecar beside a single-node server"},
		{"the loader's container name is ours", func(s *InferenceService) {
			tpl := &s.Spec.Roles[0].Template.Spec
			tpl.Containers = append(tpl.Containers, corev1.Container{Name: LoRALoaderContainerName, Image: "busybox:1.37"})
		}, `spec.roles[0].template.spec.containers[1].name: Invalid value: "lora-loader": the adapters' loader sidecar has this name: rename yours`},
		{"a split's name is its own", func(s *InferenceService) { model(s).AdapterSplits[0].Name = "sql" },
			`spec.model.adapterSplits[0].name: Duplicate value: "sql"`},
		{"a split names adapters", func(s *InferenceService) { model(s).AdapterSplits[0].Targets[1].Adapter = "support-v3" },
			`spec.model.adapterSplits[0].targets[1].adapter: Invalid value: "support-v3": must name one of the model's adapters: sql, support-v1, support-v2`},
		{"a split of a model without adapters", func(s *InferenceService) { model(s).Adapters = nil },
			`spec.model.adapterSplits[0].targets[0].adapter: Invalid value: "support-v1": must name one of the model's adapters, and it has none: give spec.model.adapters`},
		{"a split's weights are positive", func(s *InferenceService) { model(s).AdapterSplits[0].Targets[0].Weight = 0 },
			"spec.model.adapterSplits[0].targets[0].weight: Invalid value: 0: must be from 1 to 1000000"},
		{"a split has targets", func(s *InferenceService) { model(s).AdapterSplits[0].Targets = nil },
			"spec.model.adapterSplits[0].targets: Required value"},
		{"a split needs a router", func(s *InferenceService) { s.Spec.Roles = s.Spec.Roles[:1] },
			"spec.model.adapterSplits: Forbidden: a split is the router's InferenceModelRewrite: add a router role"},
		{"a split needs a router that reads rewrites", func(s *InferenceService) {
			s.Spec.Roles[1].EndpointPicker = &EndpointPicker{Release: "gie-v1.2.0"}
		}, "spec.model.adapterSplits: Forbidden: the router's Endpoint Picker (gie-v1.2.0) reads no InferenceModelRewrite"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, adapterService, tc.mutate, tc.want) })
	}
}

// TestTheLoRALoadersPortIsItsOwn: every pod of a model with adapters runs the loader on 8091;
// a server, or a rank, listening there, or another container declaring it, could not bind.
func TestTheLoRALoadersPortIsItsOwn(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"the server's --port", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].Args = append(s.Spec.Roles[0].Template.Spec.Containers[0].Args, "--port", "8091")
		}, "spec.roles[0].template.spec.containers[0].args: Invalid value: 8091: the LoRA loader of a model with adapters listens on 8091 in every server pod"},
		{"a rank's port", func(s *InferenceService) {
			s.Spec.Roles[0].Parallelism = &Parallelism{Data: 4}
			server := &s.Spec.Roles[0].Template.Spec.Containers[0]
			server.Args = append(server.Args, "--port=8088")
			server.Resources.Limits[GPUResourceName] = resource.MustParse("4")
		}, "spec.roles[0].template.spec.containers[0].args: Invalid value: 8091: the LoRA loader of a model with adapters listens on 8091 in every server pod: the server's ports are 8088-8091"},
		{"another container's port", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers = append(s.Spec.Roles[0].Template.Spec.Containers,
				corev1.Container{Name: "exporter", Image: "exporter:1", Ports: []corev1.ContainerPort{{ContainerPort: 8091}}})
		}, "spec.roles[0].template.spec.containers[1].ports[0].containerPort: Invalid value: 8091: the LoRA loader of a model with adapters listens on 8091"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, adapterService, tc.mutate, tc.want) })
	}
	s := adapterService()
	s.Spec.Model.Adapters, s.Spec.Model.AdapterSplits = nil, nil
	s.Spec.Roles[0].Template.Spec.Containers[0].Args = append(s.Spec.Roles[0].Template.Spec.Containers[0].Args, "--port", "8091")
	assert.Empty(t, Validate(s), "without adapters there is no loader")
}

// TestATypoInCRDGroupsIsOneProblem: an unknown endpointPicker.crdGroups is said at its field,
// and the adapters' split says nothing of it (issue 55: a second, false error told an llm-d-router
// user to use llm-d-router).
func TestATypoInCRDGroupsIsOneProblem(t *testing.T) {
	data, err := os.ReadFile("../examples/manifests/llama-lora-adapters.yaml")
	require.NoError(t, err)
	docs, errs := Decode(data)
	require.Empty(t, errs)
	svc := docs[0].Service
	require.NotEmpty(t, svc.Spec.Model.AdapterSplits, "the example splits its adapters")
	svc.Spec.Router().EndpointPicker = &EndpointPicker{CRDGroups: "llm-d.aii"}
	var at []string
	for _, err := range Validate(svc) {
		at = append(at, err.Field)
	}
	assert.Equal(t, []string{"spec.roles[1].endpointPicker.crdGroups"}, at)
}
