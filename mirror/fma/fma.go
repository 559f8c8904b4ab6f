// SPDX-License-Identifier: Apache-2.0

// Package fma mirrors, for tests, what llm-d fast model actuation's dual-pods controller
// (FMA v0.6.4, github.com/llm-d-incubation/llm-d-fast-model-actuation) does to pods: the
// server-providing pod it makes from a requester, and what it does to that pod when the requester
// goes and the server is put to sleep. The controller itself cannot run in the tests: it asks each
// requester's SPI which GPUs it holds. Files and functions cited are FMA v0.6.4's.
package fma

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"sigs.k8s.io/yaml"
)

// FMA's names (pkg/api/interface.go; pkg/controller/dual-pods/controller.go).
const (
	ServerPatchAnnotation = "dual-pods.llm-d.ai/server-patch"
	DualLabel             = "dual-pods.llm-d.ai/dual"
	SleepingLabel         = "dual-pods.llm-d.ai/sleeping"
	requesterAnnotation   = "dual-pods.llm-d.ai/requester"
	providerFinalizer     = "dual-pods.llm-d.ai/provider"
	ServerContainer       = "inference-server" // the requester's and the server's container
)

// apiAccessVolume is the ServiceAccount token volume, which is the pod's own
// (pkg/controller/utils/pod-helper.go apiAccessRE).
var apiAccessVolume = regexp.MustCompile(`^kube-api-access-[a-z0-9]+$`)

// PatchedServer is the requester's labels, namespace and spec without what is the pod's own
// (pod-helper.go DeIndividualize), with its server patch (a Go template of the node's name)
// applied as a strategic-merge patch: the first step of the nominal server-providing pod
// (pkg/controller/dual-pods/inference-server.go getNominalServerProvidingPod).
func PatchedServer(requester *corev1.Pod, nodeName string) (*corev1.Pod, error) {
	raw, ok := requester.Annotations[ServerPatchAnnotation]
	if !ok {
		return nil, fmt.Errorf("pod %s has no %s", requester.Name, ServerPatchAnnotation)
	}
	tmpl, err := template.New("serverPatch").Option("missingkey=error").Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	var rendered bytes.Buffer
	if err := tmpl.Execute(&rendered, struct{ NodeName string }{nodeName}); err != nil {
		return nil, err
	}
	patch, err := yaml.YAMLToJSON(rendered.Bytes())
	if err != nil {
		return nil, err
	}
	spec := requester.Spec.DeepCopy()
	spec.EphemeralContainers = nil
	if i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return apiAccessVolume.MatchString(v.Name) }); i >= 0 {
		name := spec.Volumes[i].Name
		spec.Volumes = slices.Delete(spec.Volumes, i, i+1)
		for c := range spec.Containers {
			spec.Containers[c].VolumeMounts = slices.DeleteFunc(spec.Containers[c].VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == name })
		}
	}
	base := &corev1.Pod{TypeMeta: requester.TypeMeta, ObjectMeta: metav1.ObjectMeta{Labels: requester.Labels, Namespace: requester.Namespace}, Spec: *spec}
	original, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(original, patch, &corev1.Pod{})
	if err != nil {
		return nil, fmt.Errorf("failed to apply server patch: %w", err)
	}
	var server corev1.Pod
	return &server, json.Unmarshal(merged, &server)
}

// ServerProvidingPod is the pod the controller creates for a requester bound to gpus (their
// indices on its node): PatchedServer, held on the requester's node, its server's GPU requests
// and limits zeroed (the requester holds them) and CUDA_VISIBLE_DEVICES naming gpus, named after
// the requester, with the provider finalizer, the requester's annotation and the labels of a bound,
// awake server (getNominalServerProvidingPod).
func ServerProvidingPod(requester *corev1.Pod, gpus string) (*corev1.Pod, error) {
	pod, err := PatchedServer(requester, requester.Spec.NodeName)
	if err != nil {
		return nil, err
	}
	if pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = map[string]string{}
	}
	pod.Spec.NodeSelector["kubernetes.io/hostname"] = requester.Spec.NodeName
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == ServerContainer })
	if i < 0 {
		return nil, fmt.Errorf("the server pod has no container %s", ServerContainer)
	}
	c := &pod.Spec.Containers[i]
	c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "CUDA_VISIBLE_DEVICES" })
	c.Env = append(c.Env, corev1.EnvVar{Name: "CUDA_VISIBLE_DEVICES", Value: gpus})
	for _, list := range []*corev1.ResourceList{&c.Resources.Limits, &c.Resources.Requests} {
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)["nvidia.com/gpu"] = resource.Quantity{}
	}
	pod.GenerateName = requester.Name + "-dual-"
	pod.Finalizers = append(pod.Finalizers, providerFinalizer)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[requesterAnnotation] = string(requester.UID) + " " + requester.Name
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[DualLabel] = requester.Name
	pod.Labels[SleepingLabel] = "false"
	return pod, nil
}

// Unbind is what the controller does to a server-providing pod (not launcher-based) whose
// requester has gone, once it has put the server to sleep (POST /sleep on its port): labelled
// sleeping, no longer naming the requester, its finalizer gone (inference-server.go ensureUnbound).
// The pod keeps the server patch's labels: FMA takes routing labels off a launcher only.
func Unbind(pod *corev1.Pod) {
	pod.Labels[SleepingLabel] = "true"
	delete(pod.Labels, DualLabel)
	delete(pod.Annotations, requesterAnnotation)
	pod.Finalizers = slices.DeleteFunc(pod.Finalizers, func(f string) bool { return f == providerFinalizer })
}
