// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// A model's objects (docs/design/0015-model-weights.md): the cache claim, the Job that fills it
// and the compile cache claim, all made before the servers that mount them.
var (
	KindPersistentVolumeClaim = TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	KindJob                   = TypeMeta{APIVersion: batchv1.SchemeGroupVersion.String(), Kind: "Job"}
)

// DownloaderImage is the download Job's image: cmd/fusioninfer-download of this release, built
// by its Dockerfile (FROM scratch: the static binary and CA certificates).
const DownloaderImage = "ghcr.io/fusioninfer/fusioninfer-download:v0.5.0"

// DownloaderCommand is the downloader's command in its image.
const DownloaderCommand = "fusioninfer-download"

// downloadBackoffLimit is how often a failed download pod is retried: each retry resumes where
// the last one stopped, so a flaky network costs time, not bytes.
const downloadBackoffLimit = 10

// The download Job's container resources: a stream to disk needs little.
var downloaderResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
}

// modelOwners are the models the serving roles load, each once, in role order: the service's
// model ("") and every role's own model (the role's name).
func modelOwners(spec *api.InferenceServiceSpec) []string {
	var owners []string
	seen := map[string]bool{}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() || spec.ModelOf(role) == nil {
			continue
		}
		if owner := api.ModelOwner(role); !seen[owner] {
			seen[owner] = true
			owners = append(owners, owner)
		}
	}
	return owners
}

// modelRefs are the objects of every model, and per owner what a server waits for: the download
// Job (which depends on its claim) and the compile cache.
func modelRefs(svc *api.InferenceService, models map[string]*api.ResolvedModel) (refs []Ref, serversAfter map[string][]string) {
	serversAfter = map[string][]string{}
	for _, owner := range modelOwners(&svc.Spec) {
		m := models[owner]
		ref := func(kind TypeMeta, name string, dependsOn ...string) Ref {
			return Ref{TypeMeta: kind, Name: name, Namespace: svc.Namespace, Suffix: modelSuffix(svc.Name, name), Role: owner,
				DependsOn: dependsOn}
		}
		if m.Downloads() {
			cache := ref(KindPersistentVolumeClaim, api.ModelCacheName(svc.Name, owner))
			job := ref(KindJob, api.ModelDownloadJobName(svc.Name, owner), cache.Suffix)
			job.Awaited = true
			refs = append(refs, cache, job)
			serversAfter[owner] = append(serversAfter[owner], job.Suffix)
		}
		if m.HasAdapters() {
			var fetched []string
			if m.Downloads() { // listed once fetched: a loader never reads an adapter whose files are not there
				fetched = append(fetched, modelSuffix(svc.Name, api.ModelDownloadJobName(svc.Name, owner)))
			}
			adapters := ref(KindConfigMap, api.AdaptersConfigMapName(svc.Name, owner), fetched...)
			refs = append(refs, adapters)
			serversAfter[owner] = append(serversAfter[owner], adapters.Suffix)
		}
		if m.CompileCache != nil {
			compile := ref(KindPersistentVolumeClaim, api.CompileCacheName(svc.Name, owner))
			refs = append(refs, compile)
			serversAfter[owner] = append(serversAfter[owner], compile.Suffix)
		}
	}
	return refs, serversAfter
}

// modelSuffix names a model's object relative to the service: its name without the service's.
func modelSuffix(serviceName, name string) string { return strings.TrimPrefix(name, serviceName+"-") }

// buildModelObject is the claim or Job of a model ref.
func buildModelObject(svc *api.InferenceService, ref Ref, m *api.ResolvedModel) runtime.Object {
	switch {
	case ref.TypeMeta == KindJob:
		return buildDownloadJob(svc, ref, m)
	case ref.Name == api.CompileCacheName(svc.Name, ref.Role):
		return buildClaim(svc, ref, m.CompileCacheSize, m.CompileCacheStorageClass(),
			[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany})
	}
	return buildClaim(svc, ref, m.CacheSize, m.Cache.StorageClassName, m.Cache.AccessModes())
}

// modelLabels are the labels of a model's objects and of the download's pod.
func modelLabels(svc *api.InferenceService, ref Ref) map[string]string {
	labels := serviceObjectLabels(svc)
	labels[LabelAppName] = ref.Name
	labels[LabelAppComponent] = "model"
	return labels
}

// buildClaim is a PersistentVolumeClaim many servers mount. pulumi-kubernetes waits until it is
// bound (or, with a WaitForFirstConsumer class, Pending) before the Job or servers that use it.
func buildClaim(svc *api.InferenceService, ref Ref, size resource.Quantity, storageClass string, modes []corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: svc.Namespace, Labels: modelLabels(svc, ref)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      modes,
			StorageClassName: ptr.To(storageClass),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
}

// downloadArgs are the downloader's arguments: the source, the cache's root, under which it
// writes the source's directory (modelsource.Source.CacheDir), the one the servers' --model names,
// and the patterns of files not to download.
func downloadArgs(m *api.Model) []string {
	args := []string{"--source", m.Source, "--cache", api.ModelMountPath}
	for _, pattern := range m.Cache.Exclude {
		args = append(args, "--exclude", pattern)
	}
	return args
}

// buildDownloadJob is the Job that fills a model's cache, once: resumable (a retried pod goes on
// where the last stopped), verified (every file against the source's size and hash), and done
// when the source's directory has its completion marker. pulumi-kubernetes waits for it to
// complete for as long as the download may take; the servers are created after it.
func buildDownloadJob(svc *api.InferenceService, ref Ref, m *api.ResolvedModel) *batchv1.Job {
	timeout := m.DownloadTimeout
	image := m.Cache.DownloaderImage
	if image == "" {
		image = DownloaderImage
	}
	labels := modelLabels(svc, ref)
	container := corev1.Container{
		Name:         "download",
		Image:        image,
		Command:      []string{DownloaderCommand},
		Args:         downloadArgs(m.Model),
		Resources:    *downloaderResources.DeepCopy(),
		VolumeMounts: []corev1.VolumeMount{{Name: api.ModelVolumeName, MountPath: api.ModelMountPath}},
	}
	if ref := m.CredentialsSecret; ref != nil {
		container.EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: *ref}}}
	}
	containers := []corev1.Container{container}
	// the adapters beside the base model, in one container that fetches them one after the other:
	// a container each would ask a node for 500m a adapter (300 adapters: 150 CPUs in one pod)
	if sources := adapterSources(m); len(sources) > 0 {
		c := *container.DeepCopy()
		c.Name = AdapterDownloadContainerName
		c.Args = []string{"--cache", api.ModelMountPath}
		for _, source := range sources {
			c.Args = append(c.Args, "--source", source)
		}
		containers = append(containers, c)
	}
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: ref.APIVersion, Kind: ref.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: svc.Namespace, Labels: labels,
			// the wait is the Job's own deadline and a minute for the Job controller to say so
			Annotations: map[string]string{AnnotationPulumiTimeoutSeconds: strconv.Itoa(int((timeout + time.Minute) / time.Second))}},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](downloadBackoffLimit),
			ActiveDeadlineSeconds: ptr.To(int64(timeout / time.Second)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    containers,
					Volumes: []corev1.Volume{{Name: api.ModelVolumeName, VolumeSource: corev1.VolumeSource{
						PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: api.ModelCacheName(svc.Name, ref.Role)}}}},
				},
			},
		},
	}
}

// AdapterDownloadContainerName is the download Job's container that fetches the model's adapters.
const AdapterDownloadContainerName = "adapters"

// adapterSources are the sources the download Job fetches for a model's adapters, in the spec's
// order: each cache directory once, and none that is the base model's, which its own container
// fetches. Two writers of one directory would share its .part files (internal/download).
func adapterSources(m *api.ResolvedModel) []string {
	fetched := map[string]bool{m.Parsed.CacheDir(): true}
	var sources []string
	for _, a := range m.Adapters {
		if a.Mounted() || fetched[a.Parsed.CacheDir()] {
			continue // mounted in the servers' pods as it is, or fetched already
		}
		fetched[a.Parsed.CacheDir()] = true
		sources = append(sources, a.Source)
	}
	return sources
}

// useModel points a serving role's template at its model: the model's volume mounted read-only
// at /models on every container of the server's pod that runs it, --model at the model's files
// and --served-model-name at its public name, the streamer's flags and credentials, the compile
// cache. It runs before the role's template is routed, wrapped by the Ray launcher or turned into
// dual pods, so that every pod of the role (leaders, workers, FMA's server pods) gets it.
// vllmPort is where vLLM listens in the rendered pod (behind a routing sidecar, not the serving
// port): the adapters' loader calls it there.
func useModel(serviceName string, spec *api.InferenceServiceSpec, role *api.Role, resolved *api.Resolved, vllmPort int32, tpl *corev1.PodTemplateSpec) {
	if spec.ModelOf(role) == nil {
		return
	}
	owner := api.ModelOwner(role)
	m := resolved.Models[owner]
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	if volume := modelVolume(serviceName, owner, m); volume != nil {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: api.ModelVolumeName, VolumeSource: *volume})
		server.VolumeMounts = append(server.VolumeMounts, corev1.VolumeMount{Name: api.ModelVolumeName, MountPath: api.ModelMountPath, ReadOnly: true})
		// the files are all there: vLLM must not reach for the Hub (tokenizer, configuration)
		server.Env = setEnv(server.Env, "HF_HUB_OFFLINE", "1")
	}
	vllm.SetModel(server, m.ServerPath())
	if !vllm.FlagServedModelName.In(vllm.CommandLine(server)) {
		server.Args = append(server.Args, vllm.FlagServedModelName.Name, m.ServedName())
	}
	if m.LoadFormat == api.RunaiStreamer {
		if !vllm.FlagLoadFormat.In(vllm.CommandLine(server)) {
			server.Args = append(server.Args, vllm.FlagLoadFormat.Name, string(api.RunaiStreamer))
		}
		if ref := m.CredentialsSecret; ref != nil {
			server.EnvFrom = append(server.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: *ref}})
		}
	}
	if m.HasAdapters() {
		serveAdapters(serviceName, owner, m, vllmPort, role.LocalRanks(), &tpl.Spec)
	}
	if m.CompileCache != nil {
		tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: api.CompileCacheVolumeName, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: api.CompileCacheName(serviceName, owner)}}})
		server.VolumeMounts = append(server.VolumeMounts, corev1.VolumeMount{Name: api.CompileCacheVolumeName, MountPath: api.CompileCacheMountPath})
		// vLLM keys its torch.compile cache by model, configuration and code, so servers of
		// different revisions share the volume safely; Triton's kernels go beside it.
		server.Env = setEnv(server.Env, "VLLM_CACHE_ROOT", api.CompileCacheMountPath+"/vllm")
		server.Env = setEnv(server.Env, "TRITON_CACHE_DIR", api.CompileCacheMountPath+"/triton")
	}
}

// modelVolume is the volume that holds a model's files, nil when the servers stream them.
func modelVolume(serviceName, owner string, m *api.ResolvedModel) *corev1.VolumeSource {
	switch {
	case m.LoadFormat == api.RunaiStreamer:
		return nil
	case !m.Parsed.Downloaded():
		v := mountedVolume(m.Parsed)
		return &v
	}
	return &corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
		ClaimName: api.ModelCacheName(serviceName, owner), ReadOnly: true}}
}

// mountedVolume is the read-only volume of a source mounted as it is: a pvc:// source's claim, an
// oci:// source's image volume (always read-only).
func mountedVolume(src modelsource.Source) corev1.VolumeSource {
	if src.Scheme == modelsource.OCI {
		return corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: src.Location, PullPolicy: corev1.PullIfNotPresent}}
	}
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.Location, ReadOnly: true}}
}

// setEnv sets a variable, replacing the template's own value: the model's paths must win.
func setEnv(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			env[i] = corev1.EnvVar{Name: name, Value: value}
			return env
		}
	}
	return append(env, corev1.EnvVar{Name: name, Value: value})
}

// ModelSummary is where one model's weights come from and where they are kept.
type ModelSummary struct {
	// Roles are the serving roles that load it.
	Roles  []string
	Source string
	// Parsed is the source, parsed.
	Parsed modelsource.Source
	// Unpinned is true for a Hub source without a revision: main, which moves.
	Unpinned   bool
	ServedName string
	// Cache is the claim the download Job fills ("" when nothing is downloaded), with its size,
	// storage class and the download's timeout.
	Cache, CacheSize, StorageClass, DownloadJob string
	DownloadTimeout                             time.Duration
	// Streamed is true when vLLM streams the weights from the bucket (Run:ai streamer).
	Streamed bool
	// CompileCache is the compile cache's claim, "" for none.
	CompileCache string
	// Adapters are the model's LoRA adapters by name, Mounted those of them mounted as they are
	// (pvc://, oci://), AdapterList their ConfigMap ("" for none), Splits its adapter splits.
	Adapters, Mounted []string
	AdapterList       string
	Splits            []api.AdapterSplit
}

func summarizeModels(t *Tree) []ModelSummary {
	spec := &t.Service.Spec
	var out []ModelSummary
	for _, owner := range modelOwners(spec) {
		m := t.resolved.Models[owner]
		src := m.Parsed
		ms := ModelSummary{Source: m.Source, Parsed: src, ServedName: m.ServedName(), Streamed: m.LoadFormat == api.RunaiStreamer,
			Unpinned: src.Scheme == modelsource.HuggingFace && src.Revision == ""}
		for i := range spec.Roles {
			if r := &spec.Roles[i]; r.ComponentType.Serving() && spec.ModelOf(r) != nil && api.ModelOwner(r) == owner {
				ms.Roles = append(ms.Roles, r.Name)
			}
		}
		if m.Downloads() {
			ms.Cache, ms.CacheSize, ms.StorageClass = api.ModelCacheName(t.Service.Name, owner), m.Cache.Size, m.Cache.StorageClassName
			ms.DownloadJob, ms.DownloadTimeout = api.ModelDownloadJobName(t.Service.Name, owner), m.DownloadTimeout
		}
		if m.CompileCache != nil {
			ms.CompileCache = api.CompileCacheName(t.Service.Name, owner)
		}
		if m.HasAdapters() {
			for _, a := range m.Adapters {
				ms.Adapters = append(ms.Adapters, a.Name)
				if a.Mounted() {
					ms.Mounted = append(ms.Mounted, a.Name)
				}
			}
			ms.AdapterList, ms.Splits = api.AdaptersConfigMapName(t.Service.Name, owner), m.AdapterSplits
		}
		out = append(out, ms)
	}
	return out
}

// DescribeModel says in one line where a model's weights come from, where they are kept, and
// what the servers are told.
func DescribeModel(m ModelSummary) string {
	src := m.Parsed
	from := m.Source
	if m.Unpinned {
		from += " (revision main, unpinned: pin a commit with @)"
	}
	var where string
	switch {
	case m.Streamed:
		where = "streamed by vLLM's Run:ai streamer, no cache"
	case m.Cache != "":
		where = fmt.Sprintf("downloaded once by Job %s (timeout %s) into claim %s (%s, %s)",
			m.DownloadJob, m.DownloadTimeout, m.Cache, m.CacheSize, m.StorageClass)
	case src.Scheme == modelsource.PVC:
		where = "mounted read-only from claim " + src.Location
	case src.Scheme == modelsource.OCI:
		where = "mounted as an image volume"
	}
	line := fmt.Sprintf("%s: %s, %s, served as %s", strings.Join(m.Roles, ", "), from, where, m.ServedName)
	if m.CompileCache != "" {
		line += "; compile cache " + m.CompileCache
	}
	if len(m.Adapters) > 0 {
		how := "fetched by the same Job"
		switch {
		case len(m.Mounted) == len(m.Adapters):
			how = "mounted read-only from their claims or images"
		case len(m.Mounted) > 0:
			how = fmt.Sprintf("%s mounted read-only from their claims or images, the others fetched by the same Job", strings.Join(m.Mounted, ", "))
		}
		line += fmt.Sprintf("; LoRA adapters %s (%s, listed in ConfigMap %s, loaded by each server's %s)",
			strings.Join(m.Adapters, ", "), how, m.AdapterList, api.LoRALoaderContainerName)
	}
	for _, split := range m.Splits {
		targets := make([]string, len(split.Targets))
		for i, t := range split.Targets {
			targets[i] = fmt.Sprintf("%s %d", t.Adapter, t.Weight)
		}
		line += fmt.Sprintf("; split %s: %s", split.Name, strings.Join(targets, ", "))
	}
	return line
}
