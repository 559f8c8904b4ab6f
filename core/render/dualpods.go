// SPDX-License-Identifier: Apache-2.0

package render

import (
	"encoding/json"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// The dual-pods contract of FMA v0.6.4 (llm-d's dual-pod architecture, with the annotation keys of the release).
const (
	AnnotationDualPodsAdminPort   = "dual-pods.llm-d.ai/admin-port"
	AnnotationDualPodsServerPatch = "dual-pods.llm-d.ai/server-patch"
	// DualPodsContainerName names the requester's container and the patch's: they must match to merge.
	DualPodsContainerName = "inference-server"
	// LabelServing marks the pods that serve model traffic: what a router's pool selects. A
	// dual-pods role's server-running pods get it from the server patch; its requesters never do.
	LabelServing = api.ReservedLabelPrefix + "serving"
	// LabelDualPodsSleeping is FMA's: its controller labels a server-running pod "false" while a
	// requester is bound to it and "true" once it has put the server to sleep as a standby
	// (FMA v0.6.4 pkg/controller/dual-pods/inference-server.go, ensureUnbound). A sleeping server
	// keeps the serving label, so the pool of a service with dual pods also selects "false".
	LabelDualPodsSleeping = "dual-pods.llm-d.ai/sleeping"

	envProbesPort        = "PROBES_PORT"
	envSPIPort           = "SPI_PORT"
	envVLLMServerDevMode = "VLLM_SERVER_DEV_MODE"
)

// Requests of the requester container: it only holds the GPUs and answers the controller.
var requesterRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}

// perPodLabels are the labels that the server-running pod must not keep from its requester: those
// LWS and its StatefulSets select on (or the pod would be adopted by them) and those that differ
// from pod to pod (or a sleeping server could never be reused by another requester of the role).
var perPodLabels = []string{
	lwsv1.SetNameLabelKey, lwsv1.GroupIndexLabelKey, lwsv1.WorkerIndexLabelKey, lwsv1.GroupUniqueHashLabelKey,
	lwsv1.RevisionKey, lwsv1.SubGroupIndexLabelKey, lwsv1.SubGroupUniqueHashLabelKey,
	appsv1.ControllerRevisionHashLabelKey, appsv1.StatefulSetPodNameLabel, appsv1.PodIndexLabel,
	LabelReplicaIndex, LabelAppInstance,
}

// perPodEnv are the variables LWS gives each group's containers.
var perPodEnv = []string{lwsv1.LwsLeaderAddress, lwsv1.LwsGroupSize, lwsv1.LwsWorkerIndex}

// dualPodsTemplate turns a dual-pods role's template into the requester's: the user's pod with
// FMA's requester container holding the server's GPUs, and the server patch that makes FMA's
// server-running pod from it (the user's server, in sleep mode).
func dualPodsTemplate(role *api.Role, readinessPort int32, tpl *corev1.PodTemplateSpec) error {
	mf := role.ModelFlexibility
	server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	probes, admin := mf.ProbesPortOrDefault(), mf.AdminPortOrDefault()
	patch, err := serverPatch(&server, readinessPort, tpl.Spec.Volumes, probes, admin)
	if err != nil {
		return err
	}
	tpl.Annotations = merged(tpl.Annotations, map[string]string{
		AnnotationDualPodsAdminPort:   strconv.Itoa(int(admin)),
		AnnotationDualPodsServerPatch: patch,
	})
	tpl.Spec.Volumes = nil // the server's; the requester mounts none
	tpl.Spec.Containers = []corev1.Container{{
		Name:            DualPodsContainerName,
		Image:           mf.RequesterImageOrDefault(),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Env: []corev1.EnvVar{
			{Name: envProbesPort, Value: strconv.Itoa(int(probes))},
			{Name: envSPIPort, Value: strconv.Itoa(int(admin))},
		},
		Ports: []corev1.ContainerPort{
			{Name: "probes", ContainerPort: probes, Protocol: corev1.ProtocolTCP},
			{Name: "spi", ContainerPort: admin, Protocol: corev1.ProtocolTCP},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/ready", Port: intstr.FromInt32(probes),
		}}, PeriodSeconds: 5},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{api.GPUResourceName: *resource.NewQuantity(api.ContainerGPUs(&server), resource.DecimalSI)},
			Requests: requesterRequests.DeepCopy(),
		},
	}}
	return nil
}

// serverPatch is the strategic-merge patch, as FMA's Go template, that turns a requester pod into
// the server-running pod: the user's server container (same name, so it replaces the
// requester's in the merge) with sleep mode and its own explicit requests, the user's volumes,
// without the requester's variables and ports, without any per-pod label, field or variable, and
// with the serving label.
func serverPatch(server *corev1.Container, readinessPort int32, volumes []corev1.Volume, probesPort, adminPort int32) (string, error) {
	c := server.DeepCopy()
	c.Name = DualPodsContainerName
	if !vllm.FlagEnableSleepMode.In(vllm.CommandLine(c)) {
		c.Args = append(c.Args, vllm.FlagEnableSleepMode.Name)
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: envVLLMServerDevMode, Value: "1"})
	c.ReadinessProbe = c.ReadinessProbe.DeepCopy()                  // the template's, or defaultServerProbes'
	c.ReadinessProbe.HTTPGet.Port = intstr.FromInt32(readinessPort) // FMA reads the server's port from it, as a number
	c.Resources = serverResources(server)

	container, err := toMap(c)
	if err != nil {
		return "", err
	}
	for _, name := range append([]string{envProbesPort, envSPIPort}, perPodEnv...) {
		container["env"] = append(container["env"].([]any), map[string]any{"name": name, "$patch": "delete"})
	}
	declared := map[int32]bool{}
	for _, p := range c.Ports {
		declared[p.ContainerPort] = true
	}
	for _, p := range []int32{probesPort, adminPort} {
		if !declared[p] {
			ports, _ := container["ports"].([]any)
			container["ports"] = append(ports, map[string]any{"containerPort": p, "$patch": "delete"})
		}
	}
	labels := map[string]any{LabelServing: "true"}
	for _, l := range perPodLabels {
		labels[l] = nil
	}
	spec := map[string]any{"containers": []any{container}, "hostname": nil, "subdomain": nil}
	if len(volumes) > 0 {
		podSpec, err := toMap(&corev1.PodSpec{Volumes: volumes})
		if err != nil {
			return "", err
		}
		spec["volumes"] = podSpec["volumes"]
	}
	data, err := yaml.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}, "spec": spec})
	if err != nil {
		return "", err
	}
	// FMA runs the annotation through text/template (with .NodeName): braces of the user's own,
	// say in a chat template argument, must come out as they are.
	return strings.ReplaceAll(string(data), "{{", `{{"{{"}}`), nil
}

// serverResources are the server's requests and limits without GPUs (the requester holds them,
// and FMA gives the server the requester's): cpu and memory requests explicit, a limit standing
// in for a missing request, as Kubernetes defaults it.
func serverResources(server *corev1.Container) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{Requests: api.ContainerRequests(server), Limits: server.Resources.Limits.DeepCopy()}
	delete(out.Requests, api.GPUResourceName)
	delete(out.Limits, api.GPUResourceName)
	if len(out.Limits) == 0 {
		out.Limits = nil
	}
	return out
}

// toMap is an API value as the plain map its JSON is.
func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	pruneTypedZeroValues(m)
	return m, nil
}
