// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/modelsource"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// Where a server finds its model (docs/design/0015-model-weights.md).
const (
	// ModelMountPath is where every server (and the download Job) mounts the model's volume.
	ModelMountPath = "/models"
	// CompileCacheMountPath is where every server mounts the compile cache.
	CompileCacheMountPath = "/compile-cache"
	// ModelVolumeName and CompileCacheVolumeName are the pod volumes; a template may not use them.
	ModelVolumeName        = "fusioninfer-model"
	CompileCacheVolumeName = "fusioninfer-compile-cache"
	// AdaptersVolumeName is the pod volume of the adapter list's ConfigMap, read by the loader.
	AdaptersVolumeName = "fusioninfer-adapters"
	// LoRALoaderContainerName is the adapters' loader sidecar in a server pod; a template may not
	// have a container of this name.
	LoRALoaderContainerName = "lora-loader"
	// downloadRate is the rate a default download timeout assumes: 50 MiB/s, a slow Hub or bucket.
	downloadRate = 50 << 20
	// MinDownloadTimeout is the shortest default download timeout.
	MinDownloadTimeout = time.Hour
	// maxModelNameLength bounds a public model name.
	maxModelNameLength = 256
	// MaxDownloadTimeout bounds cache.downloadTimeout.
	MaxDownloadTimeout = 7 * 24 * time.Hour
	// AdapterContainerPrefix begins the name of a mounted adapter's volume in a server pod
	// (AdapterVolumeName), so an adapter's name is at most a DNS label's length less it.
	AdapterContainerPrefix = "adapter-"
	// AdaptersMountRoot is where a server pod mounts the adapters whose volumes are mounted as
	// they are (pvc://, oci://): each at a directory of its name.
	AdaptersMountRoot = "/adapters"
	// maxSplitWeight bounds a split's weight, as the InferenceModelRewrite CRD's weight does
	// (GIE apix/v1alpha2 inferencemodelrewrite_types.go, TargetModel.Weight).
	maxSplitWeight = 1000000
)

// LoRARanks are the adapter ranks vLLM accepts for --max-lora-rank (vllm/config/lora.py,
// MaxLoRARanks).
var LoRARanks = []int{1, 8, 16, 32, 64, 128, 256, 320, 512}

// ModelOf is the model a serving role serves: its own, else the service's; nil for none.
func (s *InferenceServiceSpec) ModelOf(role *Role) *Model {
	if role.Model != nil {
		return role.Model
	}
	return s.Model
}

// ModelOwner is who a role's model belongs to, naming its cache and download: the role's name
// when the role sets its own, "" for the service's.
func ModelOwner(role *Role) string {
	if role.Model != nil {
		return role.Name
	}
	return ""
}

// ResolvedModel is a model as validation parsed it: its source, its claims' sizes and its
// download's timeout, for the renderer to read rather than parse again.
type ResolvedModel struct {
	*Model
	// Parsed is the model's source, parsed.
	Parsed modelsource.Source
	// CacheSize and CompileCacheSize are the claims' sizes (zero without the claim).
	CacheSize, CompileCacheSize resource.Quantity
	// DownloadTimeout is how long the download may take (zero when nothing is downloaded):
	// cache.downloadTimeout, else the size at 50 MiB/s and at least an hour, in whole minutes.
	DownloadTimeout time.Duration
	// Adapters are the model's LoRA adapters whose sources parsed, in the spec's order.
	Adapters []ResolvedAdapter
}

// Downloads reports whether the model is copied into its cache by a download Job.
func (m *ResolvedModel) Downloads() bool {
	return m.Cache != nil && m.Parsed.Downloaded() && m.LoadFormat != RunaiStreamer
}

// ServedName is the model's public name: name, else the source's default.
func (m *ResolvedModel) ServedName() string {
	if m.Name != "" {
		return m.Name
	}
	return m.Parsed.PublicName()
}

// ServerPath is what the servers' --model points at: the cache's directory of the source, the
// directory on a claim, the image volume's root, or, streamed, the bucket URI itself.
func (m *ResolvedModel) ServerPath() string {
	switch {
	case m.LoadFormat == RunaiStreamer:
		return m.Source
	case m.Parsed.Scheme == modelsource.PVC && m.Parsed.Path != "":
		return ModelMountPath + "/" + m.Parsed.Path
	case m.Parsed.Downloaded():
		return ModelMountPath + "/" + m.Parsed.CacheDir()
	}
	return ModelMountPath
}

// AccessModes are the cache claim's access modes.
func (c *ModelCache) AccessModes() []corev1.PersistentVolumeAccessMode {
	if c.AccessMode == corev1.ReadOnlyMany {
		// one node writes (the download Job), then many read: a volume that supports both
		return []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany}
	}
	return []corev1.PersistentVolumeAccessMode{DefaultModelCacheAccessMode}
}

// downloadTimeout is how long the download of a cache of the given size may take: the given
// timeout, else the size at 50 MiB/s and at least an hour, in whole minutes.
func downloadTimeout(given string, size resource.Quantity) (time.Duration, error) {
	if given != "" {
		return time.ParseDuration(given)
	}
	seconds := size.Value() / downloadRate
	if size.Value()%downloadRate != 0 { // rounded up: every byte has its time
		seconds++
	}
	d := time.Duration(seconds) * time.Second
	if d%time.Minute != 0 { // up to the next whole minute; a whole one stays (1500Gi: 8h32m)
		d = d.Truncate(time.Minute) + time.Minute
	}
	return max(MinDownloadTimeout, d), nil
}

// SizeOrDefault is the compile cache's size.
func (c *CompileCache) SizeOrDefault() string {
	if c.Size == "" {
		return DefaultCompileCacheSize
	}
	return c.Size
}

// CompileCacheStorageClass is the compile cache's storage class: its own, else the model cache's.
func (m *Model) CompileCacheStorageClass() string {
	if c := m.CompileCache; c != nil && c.StorageClassName != "" {
		return c.StorageClassName
	}
	if m.Cache != nil {
		return m.Cache.StorageClassName
	}
	return ""
}

// validateModels checks spec.model and every role's model, and resolves each into
// resolved.Models by owner (ModelOwner).
func validateModels(spec *InferenceServiceSpec, serviceName string, fldPath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	if spec.Model != nil {
		errs = append(errs, validateModel(spec.Model, serviceName, "", fldPath.Child("model"), resolved)...)
	}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if role.Model == nil {
			continue
		}
		path := fldPath.Child("roles").Index(i).Child("model")
		if !role.ComponentType.Serving() {
			errs = append(errs, field.Forbidden(path, "only a serving role (worker, prefiller, decoder) loads a model"))
			continue
		}
		errs = append(errs, validateModel(role.Model, serviceName, role.Name, path, resolved)...)
	}
	return errs
}

func validateModel(m *Model, serviceName, owner string, path *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	src, err := modelsource.Parse(m.Source)
	rm := &ResolvedModel{Model: m, Parsed: src}
	resolved.Models[owner] = rm
	if m.Source == "" {
		errs = append(errs, field.Required(path.Child("source"), "hf://org/name[@revision], s3://bucket/prefix, gs://bucket/prefix, pvc://claim/path or oci://image"))
	} else if err != nil {
		return append(errs, field.Invalid(path.Child("source"), m.Source, err.Error()))
	}
	if m.Name != "" && (len(m.Name) > maxModelNameLength || strings.IndexFunc(m.Name, unicode.IsSpace) >= 0) {
		errs = append(errs, field.Invalid(path.Child("name"), m.Name,
			fmt.Sprintf("a model name clients can send: no spaces, at most %d characters", maxModelNameLength)))
	}
	if ref := m.CredentialsSecret; ref != nil {
		switch {
		case ref.Name == "":
			errs = append(errs, field.Required(path.Child("credentialsSecret", "name"), "the Secret in the service's namespace"))
		case !src.Downloaded():
			errs = append(errs, field.Forbidden(path.Child("credentialsSecret"), fmt.Sprintf(
				"a %s:// source is mounted, not fetched: a claim needs no credentials and an image volume is pulled with the pod's imagePullSecrets", src.Scheme)))
		default:
			errs = append(errs, validateWith(path.Child("credentialsSecret", "name"), ref.Name, validation.IsDNS1123Subdomain)...)
		}
	}
	switch m.LoadFormat {
	case "":
	case RunaiStreamer:
		if m.Source != "" && !src.ObjectStorage() {
			errs = append(errs, field.Invalid(path.Child("loadFormat"), m.LoadFormat,
				fmt.Sprintf("the Run:ai streamer reads object storage: it needs an s3:// or gs:// source, not %s://", src.Scheme)))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("loadFormat"), m.LoadFormat, m.LoadFormat.AllowedValues()))
	}
	errs = append(errs, validateModelCache(rm, serviceName, owner, path.Child("cache"))...)
	errs = append(errs, validateCompileCache(rm, path.Child("compileCache"))...)
	return append(errs, validateAdapters(rm, path)...)
}

// validateModelCache checks a model's cache, and resolves its size and download timeout into rm.
func validateModelCache(rm *ResolvedModel, serviceName, owner string, path *field.Path) field.ErrorList {
	m, src, c := rm.Model, rm.Parsed, rm.Model.Cache
	switch {
	case m.Source == "":
		return nil
	case c == nil && src.Downloaded() && m.LoadFormat != RunaiStreamer:
		return field.ErrorList{field.Required(path, fmt.Sprintf("a %s:// source is downloaded once into a cache every server mounts: "+
			"give cache.size and cache.storageClassName%s", src.Scheme, map[bool]string{true: ", or stream it with loadFormat runai_streamer"}[src.ObjectStorage()]))}
	case c == nil:
		return nil
	case m.LoadFormat == RunaiStreamer:
		return field.ErrorList{field.Forbidden(path, "the Run:ai streamer reads the bucket directly: nothing is downloaded, remove cache")}
	case !src.Downloaded():
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("a %s:// source is mounted as it is: nothing is downloaded, remove cache", src.Scheme))}
	}
	size, errs := validateSize(c.Size, true, path.Child("size"))
	rm.CacheSize = size
	if c.StorageClassName == "" {
		errs = append(errs, field.Required(path.Child("storageClassName"), "a storage class whose volumes many nodes can mount"))
	} else {
		errs = append(errs, validateWith(path.Child("storageClassName"), c.StorageClassName, validation.IsDNS1123Subdomain)...)
	}
	if modes := allowedValues[corev1.PersistentVolumeAccessMode](); c.AccessMode != "" && !slices.Contains(modes, string(c.AccessMode)) {
		errs = append(errs, field.NotSupported(path.Child("accessMode"), c.AccessMode, modes))
	}
	d, err := downloadTimeout(c.DownloadTimeout, size)
	if c.DownloadTimeout != "" && (err != nil || d < time.Minute || d > MaxDownloadTimeout || d%time.Second != 0) {
		errs = append(errs, field.Invalid(path.Child("downloadTimeout"), c.DownloadTimeout,
			fmt.Sprintf("must be a duration of whole seconds from 1m to %s, such as \"6h\"", MaxDownloadTimeout)))
	}
	rm.DownloadTimeout = d
	for i, pattern := range c.Exclude {
		if err := modelsource.ValidPattern(pattern); err != nil {
			errs = append(errs, field.Invalid(path.Child("exclude").Index(i), pattern, `must be a glob pattern such as "original" or "*.pth"`))
		}
	}
	if name := ModelDownloadJobName(serviceName, owner); serviceName != "" && len(name) > validation.LabelValueMaxLength {
		errs = append(errs, field.Invalid(path, name, fmt.Sprintf("the download Job's name %q is %d characters; it must be at most %d "+
			"(the Job controller labels its pods with it): shorten metadata.name or the role name", name, len(name), validation.LabelValueMaxLength)))
	}
	return errs
}

// validateCompileCache checks a model's compile cache, and resolves its size into rm.
func validateCompileCache(rm *ResolvedModel, path *field.Path) field.ErrorList {
	m, c := rm.Model, rm.Model.CompileCache
	if c == nil {
		return nil
	}
	size, errs := validateSize(c.SizeOrDefault(), false, path.Child("size"))
	rm.CompileCacheSize = size
	if sc := m.CompileCacheStorageClass(); sc == "" {
		errs = append(errs, field.Required(path.Child("storageClassName"), "a storage class whose volumes many nodes can mount (the model has no cache to take it from)"))
	} else {
		errs = append(errs, validateWith(path.Child("storageClassName"), sc, validation.IsDNS1123Subdomain)...)
	}
	return errs
}

// validateSize checks a claim's size, a positive quantity, and returns it parsed.
func validateSize(v string, required bool, path *field.Path) (resource.Quantity, field.ErrorList) {
	if v == "" {
		if required {
			return resource.Quantity{}, field.ErrorList{field.Required(path, "the claim's size, such as 1500Gi: the model's files, and room for a second revision during a rollout")}
		}
		return resource.Quantity{}, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() <= 0 {
		return resource.Quantity{}, field.ErrorList{field.Invalid(path, v, "must be a positive quantity such as 1500Gi")}
	}
	return q, nil
}

// validateModelServer checks a serving role's template against its model: the model's volume
// names are free, and the server's command line can be pointed at the model without
// contradicting it.
func validateModelServer(spec *InferenceServiceSpec, role *Role, tplPath *field.Path, resolved *Resolved) field.ErrorList {
	m := resolved.Models[ModelOwner(role)]
	if spec.ModelOf(role) == nil || m == nil || role.Template == nil || len(role.Template.Spec.Containers) == 0 || m.Source == "" {
		return nil
	}
	var errs field.ErrorList
	ours := []string{ModelVolumeName, CompileCacheVolumeName, AdaptersVolumeName}
	for _, a := range m.Adapters {
		if a.Mounted() {
			ours = append(ours, AdapterVolumeName(a.Name))
		}
	}
	for i, v := range role.Template.Spec.Volumes {
		if slices.Contains(ours, v.Name) {
			errs = append(errs, field.Invalid(tplPath.Child("spec", "volumes").Index(i).Child("name"), v.Name, "the model's volumes have this name: rename yours"))
		}
	}
	if m.HasAdapters() {
		for i, c := range role.Template.Spec.Containers {
			if c.Name == LoRALoaderContainerName {
				errs = append(errs, field.Invalid(tplPath.Child("spec", "containers").Index(i).Child("name"), c.Name,
					"the adapters' loader sidecar has this name: rename yours"))
			}
		}
	}
	serverIndex := ServingContainerIndex(&role.Template.Spec)
	server := &role.Template.Spec.Containers[serverIndex]
	serverPath := tplPath.Child("spec", "containers").Index(serverIndex)
	for i, mount := range server.VolumeMounts {
		underAdapters := m.MountsAdapters() && (path.Clean(mount.MountPath) == AdaptersMountRoot || strings.HasPrefix(mount.MountPath, AdaptersMountRoot+"/"))
		if mount.MountPath == ModelMountPath || mount.MountPath == CompileCacheMountPath || underAdapters {
			errs = append(errs, field.Invalid(serverPath.Child("volumeMounts").Index(i).Child("mountPath"), mount.MountPath,
				"the model's volumes are mounted here: mount yours elsewhere"))
		}
	}
	if vllm.IsShellScript(server) {
		return append(errs, field.Invalid(serverPath.Child("command"), server.Command,
			"spec.model points the server's --model at the model's files: give the server's own command and args "+
				"(or none, for the vllm/vllm-openai image), not a shell script"))
	}
	if given, found := vllm.Model(server); found && given != m.ServedName() && given != m.Source && given != m.ServerPath() {
		errs = append(errs, field.Invalid(serverPath.Child("args"), given, fmt.Sprintf(
			"the server's model contradicts the model's source %s (served as %q): spec.model wins and sets --model, so remove it "+
				"from the arguments (or make it %q)", m.Source, m.ServedName(), m.ServedName())))
	}
	if format, found := vllm.FlagLoadFormat.Value(vllm.CommandLine(server)); found && m.LoadFormat != "" && format != string(m.LoadFormat) {
		errs = append(errs, field.Invalid(serverPath.Child("args"), format, fmt.Sprintf(
			"--load-format contradicts the model's loadFormat %s: remove it from the arguments", m.LoadFormat)))
	}
	return errs
}

// validateLoaderPort: the LoRA loader beside every server of a model with adapters listens on
// vllm.LoRALoaderPort, so no other process of the pod may: not the server (nor a data parallel
// rank, on the server's port + i, nor the routing sidecar in front of them, on the same ports),
// nor a port another container declares. Refused rather than the loader moved: fusioninfer status
// reads the loader there.
func validateLoaderPort(role *Role, podSpec *corev1.PodSpec, specPath *field.Path, serverIndex int, servingPort int32) field.ErrorList {
	const loader = vllm.LoRALoaderPort
	rule := fmt.Sprintf("the LoRA loader of a model with adapters listens on %d in every server pod", loader)
	var errs field.ErrorList
	ranks := int32(1)
	if role.DataParallel() {
		ranks = role.LocalRanks()
	}
	server := &podSpec.Containers[serverIndex]
	serverPath := specPath.Child("containers").Index(serverIndex)
	serverListens := loader >= servingPort && loader < servingPort+ranks
	if serverListens {
		path := serverPath.Child("ports")
		if _, inArgs := vllm.FlagValue(server.Args, "--port"); inArgs {
			path = serverPath.Child("args")
		} else if _, inCommand := vllm.FlagValue(server.Command, "--port"); inCommand {
			path = serverPath.Child("command")
		}
		errs = append(errs, field.Invalid(path, loader, fmt.Sprintf("%s: the server's ports are %s: choose a --port that keeps them off %d",
			rule, portRange(servingPort, ranks), loader)))
	}
	for kind, containers := range [][]corev1.Container{podSpec.InitContainers, podSpec.Containers} {
		for i := range containers {
			for j, p := range containers[i].Ports {
				if p.ContainerPort == loader && (kind == 0 || i != serverIndex || !serverListens) { // else said above
					errs = append(errs, field.Invalid(specPath.Child([]string{"initContainers", "containers"}[kind]).Index(i).Child("ports").Index(j).Child("containerPort"),
						p.ContainerPort, rule+": choose another port"))
				}
			}
		}
	}
	return errs
}

// HasAdapters reports whether the model serves LoRA adapters.
func (m *Model) HasAdapters() bool { return m != nil && len(m.Adapters) > 0 }

// MaxLorasOrDefault is vLLM's --max-loras for the model.
func (m *Model) MaxLorasOrDefault() int {
	if m.MaxLoras != nil {
		return *m.MaxLoras
	}
	return DefaultModelMaxLoras
}

// MaxLoraRankOrDefault is vLLM's --max-lora-rank for the model.
func (m *Model) MaxLoraRankOrDefault() int {
	if m.MaxLoraRank != nil {
		return *m.MaxLoraRank
	}
	return DefaultModelMaxLoraRank
}

// ResolvedAdapter is an adapter as validation parsed it.
type ResolvedAdapter struct {
	LoRAAdapter
	// Parsed is the adapter's source, parsed.
	Parsed modelsource.Source
}

// ServerPath is where the servers find the adapter: its source's directory in the model's cache,
// or, mounted, the directory on its claim or its image volume's root, under its mount path.
func (a *ResolvedAdapter) ServerPath() string {
	if a.Mounted() {
		return path.Join(a.MountPath(), a.Parsed.Path) // an image volume's Path is ""
	}
	return ModelMountPath + "/" + a.Parsed.CacheDir()
}

// Mounted reports whether the adapter's volume is mounted as it is (pvc://, oci://), read-only
// as the base model's is, not fetched into the model's cache.
func (a *ResolvedAdapter) Mounted() bool { return !a.Parsed.Downloaded() }

// MountPath is where a mounted adapter's volume is in the server's pod.
func (a *ResolvedAdapter) MountPath() string { return AdaptersMountRoot + "/" + a.Name }

// AdapterVolumeName is the server pod's volume of a mounted adapter.
func AdapterVolumeName(adapter string) string { return AdapterContainerPrefix + adapter }

// MountsAdapters reports whether any of the model's adapters is mounted as it is.
func (m *ResolvedModel) MountsAdapters() bool {
	return slices.ContainsFunc(m.Adapters, func(a ResolvedAdapter) bool { return a.Mounted() })
}

// FetchesAdapters reports whether any of the model's adapters is fetched into its cache.
func (m *ResolvedModel) FetchesAdapters() bool {
	return slices.ContainsFunc(m.Adapters, func(a ResolvedAdapter) bool { return !a.Mounted() })
}

// validateAdapters checks a model's adapters and splits, and resolves the adapters into rm.
func validateAdapters(rm *ResolvedModel, path *field.Path) field.ErrorList {
	m := rm.Model
	var errs field.ErrorList
	if m.MaxLoras != nil && *m.MaxLoras < 1 {
		errs = append(errs, field.Invalid(path.Child("maxLoras"), *m.MaxLoras, "must be at least 1"))
	}
	if m.MaxLoraRank != nil && !slices.Contains(LoRARanks, *m.MaxLoraRank) {
		ranks := make([]string, len(LoRARanks))
		for i, r := range LoRARanks {
			ranks[i] = strconv.Itoa(r)
		}
		errs = append(errs, field.NotSupported(path.Child("maxLoraRank"), *m.MaxLoraRank, ranks))
	}
	names := map[string]bool{}
	var adapterNames []string
	for i, a := range m.Adapters {
		p := path.Child("adapters").Index(i)
		errs = append(errs, validatePublicName(a.Name, rm, names, p.Child("name"))...)
		if len(a.Name) > validation.DNS1123LabelMaxLength-len(AdapterContainerPrefix) {
			errs = append(errs, field.TooLong(p.Child("name"), a.Name, validation.DNS1123LabelMaxLength-len(AdapterContainerPrefix)))
		}
		adapterNames = append(adapterNames, a.Name)
		src, err := modelsource.Parse(a.Source)
		switch {
		case a.Source == "":
			errs = append(errs, field.Required(p.Child("source"), "hf://org/name[@revision], s3://bucket/prefix, gs://bucket/prefix, pvc://claim/path or oci://image"))
		case err != nil:
			errs = append(errs, field.Invalid(p.Child("source"), a.Source, err.Error()))
		case src.Downloaded() && m.Source != "" && !rm.Downloads():
			errs = append(errs, field.Forbidden(p.Child("source"), fmt.Sprintf("an %s:// adapter is fetched into the model's cache: "+
				"the model needs a cache (an hf://, s3:// or gs:// source with cache), or give the adapter a pvc:// or oci:// source, mounted as it is",
				src.Scheme)))
		default:
			rm.Adapters = append(rm.Adapters, ResolvedAdapter{LoRAAdapter: a, Parsed: src})
		}
	}
	for i, split := range m.AdapterSplits {
		p := path.Child("adapterSplits").Index(i)
		errs = append(errs, validatePublicName(split.Name, rm, names, p.Child("name"))...)
		if len(split.Targets) == 0 {
			errs = append(errs, field.Required(p.Child("targets"), "the adapters the split's requests go to, each with a weight"))
		}
		for j, target := range split.Targets {
			tp := p.Child("targets").Index(j)
			switch {
			case len(adapterNames) == 0:
				errs = append(errs, field.Invalid(tp.Child("adapter"), target.Adapter,
					"must name one of the model's adapters, and it has none: give "+path.Child("adapters").String()))
			case !slices.Contains(adapterNames, target.Adapter):
				errs = append(errs, field.Invalid(tp.Child("adapter"), target.Adapter,
					"must name one of the model's adapters: "+strings.Join(adapterNames, ", ")))
			}
			if target.Weight < 1 || target.Weight > maxSplitWeight {
				errs = append(errs, field.Invalid(tp.Child("weight"), target.Weight, fmt.Sprintf("must be from 1 to %d", maxSplitWeight)))
			}
		}
	}
	return errs
}

// validatePublicName checks the name of an adapter or split: a DNS label, unique among the
// model's adapters and splits (seen), and not the base model's served name.
func validatePublicName(name string, rm *ResolvedModel, seen map[string]bool, path *field.Path) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(path, "a DNS label unique among the model's adapters and splits")}
	case seen[name]:
		return field.ErrorList{field.Duplicate(path, name)}
	}
	seen[name] = true
	if errs := validateWith(path, name, validation.IsDNS1123Label); len(errs) > 0 {
		return errs
	}
	if rm.Source != "" && name == rm.ServedName() {
		return field.ErrorList{field.Invalid(path, name, fmt.Sprintf("the base model is served as %q: give the adapter another name", name))}
	}
	return nil
}

// validateAdapterFlags: the server's own LoRA flags do not contradict the model's fields, which
// they would silently win over (vLLM reads the flags; the render sets them only when absent), and
// no adapter is named as the args serve the base model (vLLM's --served-model-name, one name or
// more): a request for that name reaches the base model, never the adapter.
func validateAdapterFlags(spec *InferenceServiceSpec, role *Role, rolePath, fldPath *field.Path) field.ErrorList {
	if role.Template == nil || len(role.Template.Spec.Containers) == 0 {
		return nil // reported at the template
	}
	m := spec.ModelOf(role)
	modelPath := fldPath.Child("model")
	if role.Model != nil {
		modelPath = rolePath.Child("model")
	}
	serverIndex := ServingContainerIndex(&role.Template.Spec)
	server := &role.Template.Spec.Containers[serverIndex]
	argsPath := rolePath.Child("template", "spec", "containers").Index(serverIndex).Child("args")
	words := vllm.CommandLine(server)
	var errs field.ErrorList
	for _, size := range []struct {
		field string
		value *int
		flag  vllm.Flag
	}{{"maxLoras", m.MaxLoras, vllm.FlagMaxLoras}, {"maxLoraRank", m.MaxLoraRank, vllm.FlagMaxLoraRank}} {
		if given, found := size.flag.Value(words); found && size.value != nil && given != strconv.Itoa(*size.value) {
			errs = append(errs, field.Invalid(modelPath.Child(size.field), *size.value, fmt.Sprintf(
				"%s give %s %s, which vLLM reads instead: give it once, here or there", argsPath, size.flag.Name, given)))
		}
	}
	served := vllm.FlagServedModelName.Values(words)
	for j, a := range m.Adapters {
		if slices.Contains(served, a.Name) {
			errs = append(errs, field.Invalid(modelPath.Child("adapters").Index(j).Child("name"), a.Name, fmt.Sprintf(
				"%s serve the base model as %q (%s): a request for it reaches the base model, never the adapter: give the adapter another name",
				argsPath, a.Name, vllm.FlagServedModelName.Name)))
		}
	}
	return errs
}

// validateAdapterServers checks what adapters ask of the roles and the router: each role that
// serves a model with adapters is a single-node server of its own (the loader sidecar talks to
// the server in its pod), and splits have a router whose Endpoint Picker reads
// InferenceModelRewrites.
func validateAdapterServers(spec *InferenceServiceSpec, fldPath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() || !spec.ModelOf(role).HasAdapters() {
			continue
		}
		rolePath := fldPath.Child("roles").Index(i)
		errs = append(errs, validateAdapterFlags(spec, role, rolePath, fldPath)...)
		if role.MultiNode() {
			errs = append(errs, field.Forbidden(rolePath.Child("multinode"), "the model's adapters are loaded by a sidecar beside a single-node server"))
		}
		if role.DualPods() {
			errs = append(errs, field.Forbidden(rolePath.Child("modelFlexibility"), "the model's adapters are loaded by a sidecar beside the server, which dual pods run elsewhere"))
		}
	}
	errs = append(errs, validatePoolModelNames(spec, fldPath, resolved)...)
	type modelAt struct {
		model      *Model
		splitsPath *field.Path
	}
	models := []modelAt{{spec.Model, fldPath.Child("model", "adapterSplits")}}
	for i := range spec.Roles {
		models = append(models, modelAt{spec.Roles[i].Model, fldPath.Child("roles").Index(i).Child("model", "adapterSplits")})
	}
	for _, at := range models {
		if at.model == nil || len(at.model.AdapterSplits) == 0 {
			continue
		}
		path := at.splitsPath
		switch {
		case spec.Router() == nil:
			errs = append(errs, field.Forbidden(path, "a split is the router's InferenceModelRewrite: add a router role"))
		case resolved.Routing == nil || resolved.Routing.Selection == nil,
			!slices.Contains(spec.Router().EndpointPickerCRDGroups().AllowedValues(), string(spec.Router().EndpointPickerCRDGroups())):
			// the router's own errors say what is wrong with it (an unknown crdGroups among them)
		default:
			release := resolved.Routing.Selection.Release
			groups, rewrites := release.ObjectiveGroups()
			cluster := spec.Router().EndpointPickerCRDGroups()
			switch _, watched := spec.Router().ModelRewriteGroup(); {
			case !rewrites:
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("the router's Endpoint Picker (%s) reads no InferenceModelRewrite: "+
					"use endpointPicker.release %s or %s", release, eppconfig.ReleaseRouter, eppconfig.ReleaseGIE150)))
			case !watched:
				// the rewrite would be refused by the API server, or ignored by the EPP
				errs = append(errs, field.Forbidden(path, fmt.Sprintf("the router's Endpoint Picker (%s) watches InferenceModelRewrites only in %s, "+
					"and endpointPicker.crdGroups says the cluster has their CRD in %s: install the Inference Extension's CRDs "+
					"(the Platform does) and set endpointPicker.crdGroups to %s or %s, or use endpointPicker.release %s",
					release, strings.Join(groups, ", "), strings.Join(cluster.Groups(), " and "), CRDGroupsInferenceExtension, CRDGroupsBoth, eppconfig.ReleaseRouter)))
			}
		}
	}
	return errs
}

// validatePoolModelNames checks, behind a router, that each name of an adapter or split of one
// model is no other model's: every serving role is in the router's one pool, and the Endpoint
// Picker sends a request for a name to any of the pool's servers (a split's rewrite too: two
// of one name are two InferenceModelRewrites matching it). The same adapter (name and source) of
// the same base model on two roles is allowed: it serves alike wherever a request lands.
func validatePoolModelNames(spec *InferenceServiceSpec, fldPath *field.Path, resolved *Resolved) field.ErrorList {
	if spec.Router() == nil {
		return nil
	}
	// what a name is to the models seen so far
	type named struct {
		model     *field.Path
		what      string // "serves its base model under", "has an adapter of", "has a split of"
		served    string // the base model's served name
		source    string // an adapter's source
		isAdapter bool
	}
	names := map[string]named{}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		owner := ModelOwner(role)
		rm := resolved.Models[owner]
		if !role.ComponentType.Serving() || spec.ModelOf(role) == nil || rm == nil || seen[owner] {
			continue
		}
		seen[owner] = true
		path := fldPath.Child("model")
		if owner != "" {
			path = fldPath.Child("roles").Index(i).Child("model")
		}
		served := rm.ServedName()
		check := func(name string, at *field.Path, adapter *LoRAAdapter) {
			other, found := names[name]
			switch {
			case !found:
				n := named{model: path, what: "has a split of", served: served}
				if adapter != nil {
					n.what, n.source, n.isAdapter = "has an adapter of", adapter.Source, true
				}
				names[name] = n
			case other.model.String() == path.String():
				// the model's own base name: validateAdapters says so
			case adapter != nil && other.isAdapter && other.served == served && other.source == adapter.Source:
				// the same adapter of the same base model: served alike wherever a request lands
			default:
				errs = append(errs, field.Invalid(at, name, fmt.Sprintf("%s %s this name, and the router's pool sends a request for it "+
					"to any server of either model: give it another name", other.model, other.what)))
			}
		}
		if _, found := names[served]; !found {
			names[served] = named{model: path, what: "serves its base model under", served: served}
		}
		for j := range rm.Model.Adapters {
			check(rm.Model.Adapters[j].Name, path.Child("adapters").Index(j).Child("name"), &rm.Model.Adapters[j])
		}
		for j, split := range rm.Model.AdapterSplits {
			check(split.Name, path.Child("adapterSplits").Index(j).Child("name"), nil)
		}
	}
	return errs
}
