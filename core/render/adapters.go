// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// LoRA adapters (docs/design/0027-lora-adapters.md): the servers run with LoRA on and a loader
// sidecar that loads the adapters of a ConfigMap into the server of its pod; the ConfigMap, not
// the LeaderWorkerSet, holds the list, so changing adapters restarts no server.
const (
	// LoRALoaderContainerName is the loader sidecar's container.
	LoRALoaderContainerName = api.LoRALoaderContainerName
	// LoRALoaderCommand is the loader's command in the downloader's image (cmd/fusioninfer-lora-loader).
	LoRALoaderCommand = "fusioninfer-lora-loader"
	// AdapterListFile is the ConfigMap's key, the file the loader reads.
	AdapterListFile = "adapters.json"
	// adaptersMountPath is where the loader mounts the ConfigMap: the whole volume, not a subPath,
	// or kubelet would never refresh the file when the ConfigMap changes.
	adaptersMountPath = "/etc/fusioninfer/adapters"
)

// KindInferenceModelRewrite is a split's object, requests for one name spread over adapters, in
// the API group the router's Endpoint Picker watches (api.Role.ModelRewriteGroup): llm-d.ai's
// kind has the same version and fields as the Inference Extension's (llm-d-router v0.10.0
// apix/v1alpha2/inferencemodelrewrite_types.go).
func KindInferenceModelRewrite(group string) TypeMeta {
	return TypeMeta{APIVersion: group + "/" + inferencev1alpha2.GroupVersion.Version, Kind: eppconfig.KindModelRewrite}
}

// The loader's container resources: a few HTTP calls every few seconds.
var loraLoaderResources = corev1.ResourceRequirements{
	Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
	Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
}

// serveAdapters turns LoRA on in a pod's server and adds the loader beside it: vLLM's flags
// (unless the template sets them), its runtime adapter API, the loader reading the adapter list
// mounted from the model's ConfigMap and calling the server on each of its ports: one a local
// rank of a data parallel pod (DataParallelScript), each of which the pool routes to.
func serveAdapters(serviceName, owner string, m *api.ResolvedModel, port, ranks int32, pod *corev1.PodSpec) {
	server := &pod.Containers[api.ServingContainerIndex(pod)]
	if !vllm.FlagEnableLoRA.In(vllm.CommandLine(server)) {
		server.Args = append(server.Args, vllm.FlagEnableLoRA.Name)
	}
	for _, flag := range []struct {
		flag  vllm.Flag
		value int
	}{{vllm.FlagMaxLoras, m.MaxLorasOrDefault()}, {vllm.FlagMaxLoraRank, m.MaxLoraRankOrDefault()}} {
		if !flag.flag.In(vllm.CommandLine(server)) {
			server.Args = append(server.Args, flag.flag.Name, strconv.Itoa(flag.value))
		}
	}
	server.Env = setEnv(server.Env, vllm.EnvAllowRuntimeLoRAUpdating, "True")
	image := DownloaderImage
	if m.Cache != nil && m.Cache.DownloaderImage != "" {
		image = m.Cache.DownloaderImage // a mirror of the downloader's image, which holds the loader
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: api.AdaptersVolumeName, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: api.AdaptersConfigMapName(serviceName, owner)}}}})
	// the loader reads the list, and checks each adapter's files are there before asking the
	// server to load it: it sees the adapters' volumes, read-only, where the server does
	loaderMounts := []corev1.VolumeMount{{Name: api.AdaptersVolumeName, MountPath: adaptersMountPath, ReadOnly: true}}
	if m.FetchesAdapters() {
		loaderMounts = append(loaderMounts, corev1.VolumeMount{Name: api.ModelVolumeName, MountPath: api.ModelMountPath, ReadOnly: true})
	}
	for _, a := range m.Adapters {
		if !a.Mounted() {
			continue
		}
		// mounted as the base model's pvc:// and oci:// are (modelVolume); a volume of the
		// template, so adding one rolls the replicas, unlike an adapter fetched into the cache
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: api.AdapterVolumeName(a.Name), VolumeSource: mountedVolume(a.Parsed)})
		mount := corev1.VolumeMount{Name: api.AdapterVolumeName(a.Name), MountPath: a.MountPath(), ReadOnly: true}
		server.VolumeMounts = append(server.VolumeMounts, mount)
		loaderMounts = append(loaderMounts, mount)
	}
	args := []string{"--adapters", adaptersMountPath + "/" + AdapterListFile}
	for _, rankPort := range api.RankPorts(port, ranks) {
		args = append(args, vllm.FlagLoaderServer.Name, fmt.Sprintf("http://localhost:%d", rankPort))
	}
	pod.Containers = append(pod.Containers, corev1.Container{
		Name:         LoRALoaderContainerName,
		Image:        image,
		Command:      []string{LoRALoaderCommand},
		Args:         args,
		Resources:    *loraLoaderResources.DeepCopy(),
		VolumeMounts: loaderMounts,
		// ready once every adapter of the list it read was tried against the answering server: a new
		// pod takes no request for an adapter still loading; one that failed holds nothing back.
		// An exec probe, not an HTTP one: the kubelet's event carries an exec probe's output (why
		// the list could not be tried), and fusioninfer status reads it.
		ReadinessProbe: &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{LoRALoaderCommand, "--probe"}}},
			PeriodSeconds:  5,
			TimeoutSeconds: 5,
		},
	})
}

// buildAdapterList is the ConfigMap of a model's adapters, as the loader reads it.
func buildAdapterList(svc *api.InferenceService, ref Ref, m *api.ResolvedModel) (*corev1.ConfigMap, error) {
	list := vllm.AdapterList{Adapters: []vllm.Adapter{}}
	for _, a := range m.Adapters {
		list.Adapters = append(list.Adapters, vllm.Adapter{Name: a.Name, Path: a.ServerPath()})
	}
	data, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{
		TypeMeta:   typeMeta(KindConfigMap),
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: svc.Namespace, Labels: modelLabels(svc, ref)},
		Data:       map[string]string{AdapterListFile: string(data) + "\n"},
	}, nil
}

// adapterSplit is one split of a model's adapters, as the router's objects name it.
type adapterSplit struct {
	api.AdapterSplit
	name, suffix string
}

// adapterSplits are the splits of the service's model and of every role's own, in spec order.
func adapterSplits(svc *api.InferenceService) []adapterSplit {
	var out []adapterSplit
	for _, owner := range modelOwners(&svc.Spec) {
		m := svc.Spec.Model
		if owner != "" {
			m = svc.Spec.RoleNamed(owner).Model
		}
		for _, split := range m.AdapterSplits {
			name := api.ModelRewriteName(svc.Name, owner, split.Name)
			out = append(out, adapterSplit{AdapterSplit: split, name: name, suffix: "rewrite-" + modelSuffix(svc.Name, name)})
		}
	}
	return out
}

// modelRewrite is a split's InferenceModelRewrite on the router's pool: requests whose model is
// the split's name go to its adapters by weight (GIE v1.5.0 pkg/epp/requestcontrol/director.go
// applies it before scheduling).
func (r *routing) modelRewrite(ref Ref) (runtime.Object, error) {
	for _, split := range adapterSplits(r.svc) {
		if split.suffix != ref.Suffix {
			continue
		}
		rule := InferenceModelRewriteRule{Matches: []inferencev1alpha2.Match{{Model: &inferencev1alpha2.ModelMatch{
			Type: ptr.To(inferencev1alpha2.MatchExact), Value: split.Name}}}}
		for _, t := range split.Targets {
			rule.Targets = append(rule.Targets, inferencev1alpha2.TargetModel{ModelRewrite: t.Adapter, Weight: int32(t.Weight)})
		}
		return &InferenceModelRewrite{
			TypeMeta:   typeMeta(ref.TypeMeta),
			ObjectMeta: r.meta(ref),
			Spec: InferenceModelRewriteSpec{
				PoolRef: &inferencev1alpha2.PoolObjectReference{Group: inferencev1alpha2.Group(r.router.PoolGroup()),
					Kind: inferencePoolKind, Name: inferencev1alpha2.ObjectName(api.PoolName(r.svc.Name))},
				Rules: []InferenceModelRewriteRule{rule},
			},
		}, nil
	}
	return nil, fmt.Errorf("no adapter split has the suffix %q", strings.TrimPrefix(ref.Suffix, "rewrite-"))
}

// InferenceModelRewrite is GIE v1.5.0's (apix/v1alpha2/inferencemodelrewrite_types.go), which
// the Endpoint Pickers that read rewrites decode (GIE v1.5.0, llm-d-router v0.10.0). The module
// this project links, v1.2.0, names a rule's targets "split"; v1.5.0 renamed the field
// "targets", so v1.2.0's type would write a field those EPPs never read. The rest is v1.2.0's,
// unchanged in v1.5.0.
type InferenceModelRewrite struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InferenceModelRewriteSpec `json:"spec,omitempty"`
}

// InferenceModelRewriteSpec is the rewrite's pool and rules.
type InferenceModelRewriteSpec struct {
	PoolRef *inferencev1alpha2.PoolObjectReference `json:"poolRef"`
	Rules   []InferenceModelRewriteRule            `json:"rules"`
}

// InferenceModelRewriteRule rewrites the models it matches to its targets, by weight.
type InferenceModelRewriteRule struct {
	Matches []inferencev1alpha2.Match       `json:"matches,omitempty"`
	Targets []inferencev1alpha2.TargetModel `json:"targets,omitempty"`
}

// DeepCopyObject is runtime.Object's.
func (in *InferenceModelRewrite) DeepCopyObject() runtime.Object {
	out := &InferenceModelRewrite{TypeMeta: in.TypeMeta}
	in.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if in.Spec.PoolRef != nil {
		out.Spec.PoolRef = ptr.To(*in.Spec.PoolRef)
	}
	for _, rule := range in.Spec.Rules {
		c := InferenceModelRewriteRule{Targets: append([]inferencev1alpha2.TargetModel(nil), rule.Targets...)}
		for _, m := range rule.Matches {
			c.Matches = append(c.Matches, *m.DeepCopy())
		}
		out.Spec.Rules = append(out.Spec.Rules, c)
	}
	return out
}
