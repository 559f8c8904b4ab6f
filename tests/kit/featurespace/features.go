// SPDX-License-Identifier: Apache-2.0

// Package featurespace generates InferenceServices that combine the project's features (roles and
// prefill/decode, multi-node Ray, data and expert parallelism, routers, LoRA adapters, dual pods,
// model sources, monitoring, autoscaling, rollouts, the server's port) and checks invariants that
// must hold on every pod the render makes of any of them (issue 42, "The check that keeps the
// class closed"; issue 45's and 47's invariants). The generator gives both all pairs of features
// (CoveringArray) and random combinations (Draw, for pgregory.net/rapid); the checks
// (Invariants) read the rendered objects as the cluster's programs would, not the render's code.
package featurespace

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// A Dimension is one feature and the values a service may take for it; the first value is the
// feature left out.
type Dimension struct {
	Name   string
	Values []string
}

// Dimensions are the features a generated service combines.
var Dimensions = []Dimension{
	// the serving roles: one worker role, or a prefill and a decode role
	{"topology", []string{"worker", "prefill-decode"}},
	// how a replica runs: one pod; two pods on Ray; vLLM's data parallel in one pod (2 ranks);
	// data x expert parallel over two pods (2 ranks a pod)
	{"launch", []string{"single", "ray-multinode", "data-parallel", "wide-ep"}},
	// where the weights come from: the server's --model, the Hub into a cache, a claim, S3 streamed
	{"model", []string{"args", "hf-cache", "pvc", "s3-streamer"}},
	// the router and its Endpoint Picker release and strategy
	{"router", []string{"none", "llm-d-router", "llm-d-router-prefix-cache", "llm-d-router-lora-affinity", "llm-d-router-precise-prefix-cache",
		"gie-v1.5.0", "gie-v1.2.0", "lwepp"}},
	// where the router's requests enter: an HTTPRoute to a Gateway, or the picker's own proxy
	// (routerMode left to default from the absent httproute); with one Endpoint Picker or two
	{"routerMode", []string{"gateway", "standalone", "gateway-2-pickers", "standalone-2-pickers"}},
	// LoRA adapters of the model: fetched into the cache, or mounted from a claim
	{"adapters", []string{"none", "fetched", "mounted"}},
	{"dualPods", []string{"off", "on"}},
	{"monitoring", []string{"off", "podMonitors", "podMonitors-dashboard"}},
	// on: the last serving role 1 to 3 replicas on vLLM's waiting requests; zero: from none, on
	// the router's default (the picker's requests), behind the default router where the router
	// dimension has none; a prefill role follows either
	{"autoscaling", []string{"off", "on", "zero"}},
	{"rollout", []string{"default", "surge", "partition-order"}},
	// the server's port: 8000 declared as http, 8000 undeclared, --port 8090 declared (whose
	// rank 1 is 8091), --port 8091 declared (8091 is the LoRA loader's)
	{"port", []string{"8000-declared", "8000-undeclared", "8090-flag", "8091-flag"}},
	// the template's own readiness probe on the server's port, or none
	{"probe", []string{"given", "none"}},
	// each server keeps 8Gi of KV blocks in CPU memory (its memory request 24Gi a rank), or none
	{"offload", []string{"off", "on"}},
}

// Features is one value of each Dimension, by index.
type Features []int

// Value is the feature's value, by the dimension's name.
func (f Features) Value(dimension string) string {
	for i, d := range Dimensions {
		if d.Name == dimension {
			return d.Values[f[i]]
		}
	}
	panic("no dimension " + dimension)
}

// String names the features that are not left out, for failure messages.
func (f Features) String() string {
	var parts []string
	for i, d := range Dimensions {
		if f[i] != 0 {
			parts = append(parts, d.Name+"="+d.Values[f[i]])
		}
	}
	if len(parts) == 0 {
		return "{plain worker}"
	}
	return "{" + strings.Join(parts, " ") + "}"
}

const (
	serverImage = "vllm/vllm-openai:v0.33.0"
	baseModel   = "meta-llama/Llama-3.1-8B-Instruct"
)

// Service is the InferenceService of a combination of features. It may be one validation
// refuses (a dual-pods prefill role, adapters of a model named only in the arguments): callers
// keep those api.Resolve accepts.
func Service(f Features) *api.InferenceService {
	svc := &api.InferenceService{}
	svc.APIVersion, svc.Kind = api.APIVersion, api.Kind
	svc.Name, svc.Namespace = "fs", "featurespace"
	spec := &svc.Spec
	kinds := []api.ComponentType{api.ComponentTypeWorker}
	if f.Value("topology") == "prefill-decode" {
		kinds = []api.ComponentType{api.ComponentTypePrefiller, api.ComponentTypeDecoder}
	}
	spec.Model = model(f)
	for _, kind := range kinds {
		spec.Roles = append(spec.Roles, servingRole(f, kind))
	}
	if f.Value("dualPods") == "on" {
		spec.DualPodsController = &api.DualPodsController{Install: true}
	}
	if r := router(f); r != nil {
		spec.Roles = append(spec.Roles, *r)
	}
	switch f.Value("monitoring") {
	case "podMonitors":
		spec.Monitoring = &api.Monitoring{PodMonitors: true}
	case "podMonitors-dashboard":
		spec.Monitoring = &api.Monitoring{PodMonitors: true, Dashboard: true}
	}
	if scaling := f.Value("autoscaling"); scaling != "off" {
		if spec.Monitoring == nil {
			spec.Monitoring = &api.Monitoring{}
		}
		spec.Monitoring.PrometheusAddress = "http://prometheus.monitoring:9090"
		last := &spec.Roles[len(kinds)-1] // the worker, or the decode role
		last.Autoscaling = &api.Autoscaling{MaxReplicas: 3, Metric: api.MetricRequestsWaiting, Target: 4}
		if len(kinds) == 2 {
			spec.Roles[0].Autoscaling = &api.Autoscaling{MaxReplicas: 2, Follow: &api.AutoscalingFollow{Role: last.Name, Ratio: 0.5}}
		}
		if scaling == "zero" {
			last.Autoscaling.Metric, last.Autoscaling.WakeTimeout = "", "20m"
			for i := range kinds {
				spec.Roles[i].Replicas, spec.Roles[i].Autoscaling.MinReplicas = nil, ptr.To(0)
			}
		}
	}
	if f.Value("rollout") == "partition-order" {
		for i := len(kinds) - 1; i >= 0; i-- {
			spec.RolloutOrder = append(spec.RolloutOrder, spec.Roles[i].Name)
		}
	}
	return svc
}

var roleNames = map[api.ComponentType]string{api.ComponentTypeWorker: "server", api.ComponentTypePrefiller: "prefill", api.ComponentTypeDecoder: "decode"}

// servingRole is a serving role of the features: its launch's GPUs and flags, its port and probe.
func servingRole(f Features, kind api.ComponentType) api.Role {
	role := api.Role{Name: roleNames[kind], ComponentType: kind}
	server := corev1.Container{Name: "vllm", Image: serverImage}
	if f.Value("model") == "args" {
		server.Args = append(server.Args, "--model", baseModel)
	}
	gpus := 1
	switch f.Value("launch") {
	case "ray-multinode":
		// tensor 2 x pipeline 2 over 2 pods of 2 GPUs
		role.Multinode = &api.Multinode{NodeCount: 2}
		server.Args = append(server.Args, "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2")
		gpus = 2
	case "data-parallel":
		role.Parallelism = &api.Parallelism{Data: 2}
		gpus = 2
	case "wide-ep":
		role.Multinode = &api.Multinode{NodeCount: 2}
		role.Parallelism = &api.Parallelism{Data: 4, DataLocal: 2, Expert: true}
		gpus = 2
	}
	if kind != api.ComponentTypeWorker {
		server.Args = append(server.Args, "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`)
	}
	port := int32(8000)
	switch f.Value("port") {
	case "8000-declared":
		server.Ports = []corev1.ContainerPort{{Name: api.ServingPortName, ContainerPort: port}}
	case "8090-flag", "8091-flag":
		port = atoi32(strings.TrimSuffix(f.Value("port"), "-flag"))
		server.Args = append(server.Args, "--port", strconv.Itoa(int(port)))
		server.Ports = []corev1.ContainerPort{{Name: api.ServingPortName, ContainerPort: port}}
	}
	if f.Value("probe") == "given" {
		server.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(port)}},
			PeriodSeconds: 5}
	}
	server.Resources.Limits = corev1.ResourceList{api.GPUResourceName: *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	if f.Value("offload") == "on" {
		role.KVCacheOffload = &api.KVCacheOffload{CPUMemory: "8Gi"}
		ranks := int64(1)
		if role.Parallelism != nil {
			ranks = int64(role.LocalRanks())
		}
		server.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(ranks*24<<30, resource.BinarySI)}
	}
	role.Template = &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{server}}}
	if f.Value("dualPods") == "on" && kind == api.ComponentTypeWorker {
		role.ModelFlexibility = &api.ModelFlexibility{Mode: api.DualPods}
		// FMA's server pod does not inherit the requester's small requests (api/dualpods.go)
		role.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("16Gi")}
	}
	switch f.Value("rollout") {
	case "surge":
		role.RolloutStrategy = &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(1)}
	case "partition-order":
		role.Replicas = ptr.To(2)
		if f.Value("autoscaling") != "zero" { // no base replica to hold back
			role.RolloutStrategy = &api.RolloutStrategy{Partition: ptr.To(1)}
		}
	}
	return role
}

// model is the service's model of the features; nil when the servers' arguments name it.
func model(f Features) *api.Model {
	var m *api.Model
	switch f.Value("model") {
	case "hf-cache":
		m = &api.Model{Source: "hf://" + baseModel + "@0e9e39f249a16976918f6564b8830bc894c89659",
			Cache: &api.ModelCache{Size: "100Gi", StorageClassName: "shared-rwx"}}
	case "pvc":
		m = &api.Model{Source: "pvc://weights/llama"}
	case "s3-streamer":
		m = &api.Model{Source: "s3://models/llama", LoadFormat: api.RunaiStreamer}
	case "args":
		if f.Value("adapters") == "none" {
			return nil
		}
		m = &api.Model{} // no source: adapters need a model, so validation refuses it
	}
	switch f.Value("adapters") {
	case "fetched":
		m.Adapters = []api.LoRAAdapter{{Name: "sql", Source: "hf://example-org/sql-lora@v1"}, {Name: "support", Source: "s3://adapters/support/v1"}}
	case "mounted":
		m.Adapters = []api.LoRAAdapter{{Name: "sql", Source: "pvc://adapters/sql"}}
	}
	return m
}

// router is the router role of the features, nil for none.
func router(f Features) *api.Role {
	value := f.Value("router")
	if value == "none" && f.Value("autoscaling") != "zero" { // a role at zero needs a router: the default one
		return nil
	}
	r := &api.Role{Name: "router", ComponentType: api.ComponentTypeRouter}
	mode, pickers, _ := strings.Cut(f.Value("routerMode"), "-")
	if mode == "gateway" {
		r.HTTPRoute = map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}
	}
	release := map[string]api.EndpointPickerRelease{"gie-v1.5.0": api.EPPReleaseGIE150, "gie-v1.2.0": api.EPPReleaseGIE, "lwepp": api.EPPReleaseLWEPP}[value]
	if release != "" || pickers != "" {
		r.EndpointPicker = &api.EndpointPicker{Release: release}
	}
	if pickers == "2-pickers" {
		r.EndpointPicker.Replicas = ptr.To(2)
	}
	if strategy, ok := strings.CutPrefix(value, "llm-d-router-"); ok {
		r.Strategy = strategy
	}
	return r
}

// Describe is a generated service's features and name, for messages.
func Describe(f Features, svc *api.InferenceService) string {
	return fmt.Sprintf("service %s/%s %s", svc.Namespace, svc.Name, f)
}
