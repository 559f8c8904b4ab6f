// SPDX-License-Identifier: Apache-2.0

package render

import (
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// The tokenizer of strategy precise-prefix-cache: llm-d-router's token producer tokenizes every
// prompt by calling vLLM's /v1/completions/render and /v1/chat/completions/render (its
// requestcontrol/dataproducer/tokenizer README, the vllm backend), so the picker hashes the
// servers' own tokens; its default estimate backend "silently degrades precise cache
// correlation". This is the README's "dedicated Service shared by multiple EPP replicas", as
// llm-d's precise-prefix-cache-routing guide deploys it for a render pool of its own: CPU-only
// `vllm launch render` pods of the model, without the pool's labels (the picker would take them
// for model servers and subscribe to their events).

// Suffixes and names of the tokenizer's objects.
const (
	suffixTokenizerDeployment = "tokenizer-deployment"
	suffixTokenizerService    = "tokenizer-service"
	tokenizerContainerName    = "vllm-render"
	tokenizerPortName         = "render-http"
	// TokenizerImage is vLLM's CPU image, which KServe's llm-d configuration runs beside
	// llm-d-router v0.10.0's picker for its render pods (files/llmisvcconfigs/resources.yaml).
	TokenizerImage = "docker.io/vllm/vllm-openai-cpu:v0.23.0"
	// tokenizerComponent tells the tokenizer's pods from the picker's and the servers'.
	tokenizerComponent = "tokenizer"
)

// tokenizerRefs are the tokenizer's Deployment and Service, once its model's files are in place
// (after: what the model's servers wait for).
func tokenizerRefs(svc *api.InferenceService, after []string) []Ref {
	name := api.TokenizerName(svc.Name)
	deployment := routerRef(svc, KindDeployment, name, suffixTokenizerDeployment, after...)
	service := routerRef(svc, KindService, name, suffixTokenizerService)
	deployment.Awaited = svc.Spec.AwaitMode() != api.AwaitNone // as the picker's
	service.Awaited = deployment.Awaited
	return []Ref{deployment, service}
}

// tokenizerOwner is the first serving role, whose model is the pool's (validation made it one
// for every serving role: api/kvevents.go), and the owner of its model.
func tokenizerOwner(spec *api.InferenceServiceSpec) (string, *api.Role) {
	for i := range spec.Roles {
		if role := &spec.Roles[i]; role.ComponentType.Serving() {
			return api.ModelOwner(role), role
		}
	}
	return "", nil
}

// tokenizerSelector selects the tokenizer's pods, and no other pod of the service.
func (r *routing) tokenizerSelector() map[string]string {
	return map[string]string{LabelService: r.svc.Name, LabelAppComponent: tokenizerComponent}
}

func (r *routing) tokenizerLabels() map[string]string {
	return merged(serviceObjectLabels(r.svc), map[string]string{LabelAppName: api.TokenizerName(r.svc.Name), LabelAppComponent: tokenizerComponent})
}

// tokenizerDeployment serves the model's tokenizer from its files (the servers' volume, read-only,
// with the Hub offline: the files are all there) under the model's served name, which the token
// producer's requests name. Sized by endpointPicker.tokenizer, else 3 replicas of 1 CPU and 4Gi
// requested (4 CPU and 12Gi at most).
func (r *routing) tokenizerDeployment(ref Ref) *appsv1.Deployment {
	settings := r.router.EndpointPickerTokenizer()
	replicas := int32(api.DefaultRouterTokenizerReplicas)
	if settings.Replicas != nil {
		replicas = int32(*settings.Replicas)
	}
	image := TokenizerImage
	if settings.Image != "" {
		image = settings.Image
	}
	resources := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("12Gi")},
	}
	if settings.Resources != nil {
		resources = *settings.Resources.DeepCopy()
	}
	container := corev1.Container{
		Name:            tokenizerContainerName,
		Image:           image,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"vllm", "launch", "render"},
		Args:            []string{"", "--port=" + strconv.Itoa(api.TokenizerPort), "--served-model-name=" + r.KVEvents.Model},
		Env:             []corev1.EnvVar{{Name: "DO_NOT_TRACK", Value: "1"}},
		Ports:           []corev1.ContainerPort{{Name: tokenizerPortName, ContainerPort: api.TokenizerPort, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString(tokenizerPortName)}},
			PeriodSeconds: 5},
		Resources: resources,
	}
	volumes := r.tokenizerModel(&container)
	labels := r.tokenizerLabels()
	return &appsv1.Deployment{
		TypeMeta:   typeMeta(KindDeployment),
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: labels, Annotations: skipAwaitUnless(ref.Awaited)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: r.tokenizerSelector()},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: ptr.To(false),
					PriorityClassName:            r.svc.Spec.PriorityClassName(),
					Containers:                   []corev1.Container{container},
					Volumes:                      volumes,
				},
			},
		},
	}
}

// tokenizerModel points the tokenizer at the pool's model as its servers have it: a model of the
// spec's on its volume, read-only, with the Hub offline (the files are all there); else the model
// the server's command line names, from the Hub with the server's credentials (its HF_*
// variables and the sources of its environment).
func (r *routing) tokenizerModel(c *corev1.Container) []corev1.Volume {
	owner, role := tokenizerOwner(&r.svc.Spec)
	if m := r.models[owner]; r.svc.Spec.ModelOf(role) != nil && m != nil {
		c.Args[0] = m.ServerPath()
		volume := modelVolume(r.svc.Name, owner, m)
		if volume == nil { // streamed: validation refuses it
			return nil
		}
		c.VolumeMounts = []corev1.VolumeMount{{Name: api.ModelVolumeName, MountPath: api.ModelMountPath, ReadOnly: true}}
		c.Env = append(c.Env, corev1.EnvVar{Name: "HF_HUB_OFFLINE", Value: "1"})
		return []corev1.Volume{{Name: api.ModelVolumeName, VolumeSource: *volume}}
	}
	server := &role.Template.Spec.Containers[api.ServingContainerIndex(&role.Template.Spec)]
	c.Args[0], _ = vllm.Model(server)
	for _, e := range server.Env {
		if strings.HasPrefix(e.Name, "HF_") || e.Name == "HUGGING_FACE_HUB_TOKEN" {
			c.Env = append(c.Env, e)
		}
	}
	c.EnvFrom = slices.Clone(server.EnvFrom)
	return nil
}

func (r *routing) tokenizerService(ref Ref) *corev1.Service {
	meta := metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: r.tokenizerLabels(), Annotations: skipAwaitUnless(ref.Awaited)}
	return &corev1.Service{
		TypeMeta:   typeMeta(KindService),
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: r.tokenizerSelector(), Ports: []corev1.ServicePort{{
			Name: "http", Port: api.TokenizerPort, TargetPort: intstr.FromString(tokenizerPortName), Protocol: corev1.ProtocolTCP}}},
	}
}
