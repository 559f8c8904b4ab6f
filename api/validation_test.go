// SPDX-License-Identifier: Apache-2.0

package api

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func server(args ...string) *corev1.PodTemplateSpec {
	return &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "vllm", Image: "vllm/vllm-openai:v0.33.0", Args: args,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResourceName: resource.MustParse("8")}},
	}}}}
}

// validService is story 4 of the fusioninfer InferenceService design.
func validService() *InferenceService {
	return &InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deepseek-r1-disagg"},
		Spec: InferenceServiceSpec{Roles: []Role{
			{Name: "prefill", ComponentType: ComponentTypePrefiller, Replicas: ptr.To(1), Multinode: &Multinode{NodeCount: 2},
				Template: server("--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "16")},
			{Name: "decode", ComponentType: ComponentTypeDecoder, Replicas: ptr.To(2), Multinode: &Multinode{NodeCount: 4},
				Template: server("--model", "deepseek-ai/DeepSeek-R1", "--tensor-parallel-size", "32")},
		}},
	}
}

func karpenterPool(name string, gpus int) NodePool {
	return NodePool{Name: name, GPUsPerNode: gpus, NodeClassRef: &NodeClassRef{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "gpu"}}
}

func TestValidServicePasses(t *testing.T) {
	assert.Empty(t, Validate(validService()))
}

func TestValidationRules(t *testing.T) {
	router := Role{Name: "router", ComponentType: ComponentTypeRouter}
	worker := Role{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}
	cases := []struct {
		name   string
		mutate func(s *InferenceService)
		want   string
	}{
		{"name required", func(s *InferenceService) { s.Name = "" }, "metadata.name: Required value"},
		{"name is a DNS-1035 label", func(s *InferenceService) { s.Name = "1-DeepSeek" }, `metadata.name: Invalid value: "1-DeepSeek"`},
		{"namespace is a DNS label", func(s *InferenceService) { s.Namespace = "LLM" }, `metadata.namespace: Invalid value: "LLM"`},
		{"service labels are not reserved", func(s *InferenceService) { s.Labels = map[string]string{"fusioninfer.io/service": "x"} },
			"metadata.labels[fusioninfer.io/service]: Forbidden"},
		{"roles required", func(s *InferenceService) { s.Spec.Roles = nil }, "spec.roles: Required value"},
		{"role name required", func(s *InferenceService) { s.Spec.Roles[0].Name = "" }, "spec.roles[0].name: Required value"},
		{"role name is a DNS label", func(s *InferenceService) { s.Spec.Roles[0].Name = "Pre_fill" }, `spec.roles[0].name: Invalid value: "Pre_fill"`},
		{"role names are unique", func(s *InferenceService) { s.Spec.Roles[1].Name = "prefill" }, `spec.roles[1].name: Duplicate value: "prefill"`},
		{"componentType required", func(s *InferenceService) { s.Spec.Roles[0].ComponentType = "" }, "spec.roles[0].componentType: Required value"},
		{"componentType known", func(s *InferenceService) { s.Spec.Roles[0].ComponentType = "encoder" },
			`spec.roles[0].componentType: Unsupported value: "encoder": supported values: "worker", "prefiller", "decoder", "router"`},
		{"at most one router", func(s *InferenceService) {
			r2 := router
			r2.Name = "r2"
			s.Spec.Roles = append(s.Spec.Roles, router, r2)
		},
			"spec.roles[componentType=router]: Too many: 2: must have at most 1 item"},
		{"router only beside a serving role", func(s *InferenceService) { s.Spec.Roles = []Role{router} },
			"spec.roles: Required value: a router needs a serving role"},
		{"router has no replicas", func(s *InferenceService) {
			r := router
			r.Replicas = ptr.To(2)
			s.Spec.Roles = append(s.Spec.Roles, r)
		},
			"spec.roles[2].replicas: Forbidden: a router runs the Endpoint Picker, not model servers: only serving roles have replicas"},
		{"router is not multi-node", func(s *InferenceService) {
			r := router
			r.Multinode = &Multinode{NodeCount: 2}
			s.Spec.Roles = append(s.Spec.Roles, r)
		},
			"spec.roles[2].multinode: Forbidden"},
		{"serving roles have no router fields", func(s *InferenceService) { s.Spec.Roles[0].Strategy = "prefix-cache" },
			"spec.roles[0].strategy: Forbidden: only a router role has strategy"},
		{"replicas >= 1", func(s *InferenceService) { s.Spec.Roles[1].Replicas = ptr.To(0) }, "spec.roles[1].replicas: Invalid value: 0: must be >= 1 and <= 10000"},
		{"replicas bounded", func(s *InferenceService) { s.Spec.Roles[1].Replicas = ptr.To(2147483647) },
			"spec.roles[1].replicas: Invalid value: 2147483647: must be >= 1 and <= 10000"},
		{"nodeCount bounded", func(s *InferenceService) { s.Spec.Roles[1].Multinode.NodeCount = 4096 },
			"spec.roles[1].multinode.nodeCount: Invalid value: 4096: must be >= 1 and <= 1024"},
		{"await timeout is a duration", func(s *InferenceService) { s.Spec.AwaitTimeout = "an hour" },
			`spec.awaitTimeout: Invalid value: "an hour": must be a duration such as "90m" or "2h"`},
		{"await timeout bounded", func(s *InferenceService) { s.Spec.Roles[1].AwaitTimeout = "48h" },
			`spec.roles[1].awaitTimeout: Invalid value: "48h": must be whole seconds from 1s to 24h0m0s`},
		{"await timeout in whole seconds", func(s *InferenceService) { s.Spec.AwaitTimeout = "1500ms" },
			`spec.awaitTimeout: Invalid value: "1500ms": must be whole seconds`},
		{"grace period bounded", func(s *InferenceService) { s.Spec.Roles[1].TerminationGracePeriodSeconds = ptr.To(7200) },
			"spec.roles[1].terminationGracePeriodSeconds: Invalid value: 7200: must be >= 0 and <= 3600 (one hour)"},
		{"grace period not negative", func(s *InferenceService) { s.Spec.Roles[1].TerminationGracePeriodSeconds = ptr.To(-1) },
			"spec.roles[1].terminationGracePeriodSeconds: Invalid value: -1"},
		{"nodeCount >= 1", func(s *InferenceService) { s.Spec.Roles[1].Multinode.NodeCount = 0 }, "spec.roles[1].multinode.nodeCount: Invalid value: 0: must be >= 1 and <= 1024"},
		{"prefillers need decoders", func(s *InferenceService) { s.Spec.Roles = s.Spec.Roles[:1] }, "spec.roles: Required value: a prefiller role needs a decoder role"},
		{"decoders need prefillers", func(s *InferenceService) { s.Spec.Roles = s.Spec.Roles[1:] }, "spec.roles: Required value: a decoder role needs a prefiller role"},
		{"monolithic or disaggregated", func(s *InferenceService) { s.Spec.Roles = append(s.Spec.Roles, worker) },
			"spec.roles: Invalid value: \"worker + prefiller/decoder\""},
		{"LWS name fits (multi-node)", func(s *InferenceService) { s.Name = strings.Repeat("d", 50-len("-prefill-0")+1) },
			"spec.roles[0].name: Invalid value: \"prefill\": the LeaderWorkerSet name"},
		{"LWS name fits (single-node)", func(s *InferenceService) {
			s.Spec.Roles = []Role{worker}
			s.Name = strings.Repeat("w", 52-len("-w-0")+1)
		}, "must be at most 52"},
		{"LWS name counts the last replica", func(s *InferenceService) {
			s.Spec.Roles[0].Name = "p"
			s.Name = strings.Repeat("d", 50-len("-decode-9"))
			s.Spec.Roles[1].Replicas = ptr.To(11)
		}, `"` + strings.Repeat("d", 41) + `-decode-10" is 51 characters; it must be at most 50`},
		{"template required", func(s *InferenceService) { s.Spec.Roles[0].Template = nil }, "spec.roles[0].template: Required value"},
		{"a container required", func(s *InferenceService) { s.Spec.Roles[0].Template.Spec.Containers = nil },
			"spec.roles[0].template.spec.containers: Required value"},
		{"image required", func(s *InferenceService) { s.Spec.Roles[0].Template.Spec.Containers[0].Image = "" },
			"spec.roles[0].template.spec.containers[0].image: Required value"},
		{"template labels are not reserved", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Labels = map[string]string{"fusioninfer.io/replica-index": "7"}
		}, "spec.roles[0].template.metadata.labels[fusioninfer.io/replica-index]: Forbidden"},
		{"template label values are valid", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Labels = map[string]string{"model": "deepseek-ai/DeepSeek-R1"}
		}, `spec.roles[0].template.metadata.labels[model]: Invalid value: "deepseek-ai/DeepSeek-R1"`},
		{"gang pods use volcano", func(s *InferenceService) { s.Spec.Roles[0].Template.Spec.SchedulerName = "default-scheduler" },
			`spec.roles[0].template.spec.schedulerName: Invalid value: "default-scheduler"`},
		{"service scheduler is volcano when gang scheduled", func(s *InferenceService) {
			s.Spec.SchedulingStrategy = &SchedulingStrategy{SchedulerName: "default-scheduler"}
		}, `spec.schedulingStrategy.schedulerName: Invalid value: "default-scheduler": multi-node and prefill/decode services are gang scheduled`},
		{"multi-node server is not a shell script", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Command, c.Args = []string{"/bin/bash", "-c"}, []string{"vllm serve --model x"}
		}, "spec.roles[0].template.spec.containers[0].command: Invalid value"},
		{"multi-node server runs on Ray", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "--distributed-executor-backend=mp")
		}, `spec.roles[0].template.spec.containers[0].args: Invalid value: "mp"`},
		{"tensor parallel matches the GPUs", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--tensor-parallel-size", "16")
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "--tensor-parallel-size 16": tensor x pipeline x data parallel size is 16, but each replica has multinode.nodeCount (4) x nvidia.com/gpu per pod (8) = 32 GPUs`},
		{"a serving port that parses, with or without a router", func(s *InferenceService) {
			c := &s.Spec.Roles[0].Template.Spec.Containers[0]
			c.Args = append(c.Args, "--port", "abc")
		}, `spec.roles[0].template.spec.containers[0].args: Invalid value: "abc": --port must be a port, a whole number from 1 to 65535`},
		{"a GPU count is not negative", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.Containers[0].Resources.Limits[GPUResourceName] = resource.MustParse("-2")
		}, `spec.roles[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "-2": a GPU count is a whole number of devices, at least 1`},
		{"a GPU count is whole", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.Containers[0].Resources.Limits[GPUResourceName] = resource.MustParse("1.5")
		}, `spec.roles[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "1.5": a GPU count is a whole number of devices`},
		{"a GPU count is not zero", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{GPUResourceName: resource.MustParse("0")}
		}, `spec.roles[0].template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "0": a GPU count is a whole number of devices, at least 1`},
		{"a sidecar's GPU count is whole too", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.InitContainers = []corev1.Container{{Name: "warm", Image: "x",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResourceName: resource.MustParse("0.5")}}}}
		}, `spec.roles[0].template.spec.initContainers[0].resources.limits[nvidia.com/gpu]: Invalid value: "0.5"`},
		{"a GPU request equals the limit", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{GPUResourceName: resource.MustParse("4")}
		}, `spec.roles[1].template.spec.containers[0].resources.requests[nvidia.com/gpu]: Invalid value: "4": must equal the limit (8)`},
		{"a multi-node Ray replica uses its pods' GPUs", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--model", "deepseek-ai/DeepSeek-R1")
		}, `spec.roles[1].template.spec.containers[0].args: Required value: a multi-node replica spreads one model over multinode.nodeCount (4) x ` +
			`nvidia.com/gpu per pod (8) = 32 GPUs, but without --tensor-parallel-size or --pipeline-parallel-size vLLM uses one: ` +
			`give tensor x pipeline parallel size = 32 (or a --config file that does)`},
		{"a GPU request has a limit", func(s *InferenceService) { // the API server's rule for extended resources
			s.Spec.Roles[0].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{GPUResourceName: resource.MustParse("1")}}
		}, `spec.roles[0].template.spec.containers[0].resources.limits: Required value: give nvidia.com/gpu a limit equal to its request (1)`},
		{"multi-node pods request GPUs", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--model", "m")
			s.Spec.Roles[1].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}, `spec.roles[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Required value: a multi-node replica spreads one model over the GPUs of its pods`},
		{"tensor parallel needs GPUs", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--tensor-parallel-size", "16")
			s.Spec.Roles[1].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}, `resources.limits[nvidia.com/gpu]: Required value: --tensor-parallel-size 16 needs 16 GPUs a replica`},
		{"single-node tensor parallel needs GPUs", func(s *InferenceService) {
			s.Spec.Roles[1].Multinode = nil
			s.Spec.Roles[1].Template = server("-tp", "2")
			s.Spec.Roles[1].Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		}, `spec.roles[1].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Required value: --tensor-parallel-size 2 needs 2 GPUs a replica`},
		{"tensor x pipeline matches the GPUs", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("-tp=8", "--pipeline-parallel-size=2")
		}, `Invalid value: "--tensor-parallel-size 8 x --pipeline-parallel-size 2": tensor x pipeline x data parallel size is 16`},
		{"data parallel counts too", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--tensor-parallel-size", "32", "--data-parallel-size", "2")
		}, "parallel size is 64"},
		{"vLLM reads a flag's underscores as dashes", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--tensor_parallel_size", "16")
		}, `spec.roles[1].template.spec.containers[0].args: Invalid value: "--tensor-parallel-size 16": tensor x pipeline x data parallel size is 16, but each replica has multinode.nodeCount (4) x nvidia.com/gpu per pod (8) = 32 GPUs`},
		{"parallel sizes are positive integers", func(s *InferenceService) {
			s.Spec.Roles[1].Template = server("--tensor-parallel-size", "thirty-two")
		}, `args: Invalid value: "thirty-two": --tensor-parallel-size "thirty-two": must be a positive integer`},
		{"gang mode known", func(s *InferenceService) { s.Spec.GangPolicy = &GangPolicy{Mode: "all"} },
			`spec.gangPolicy.mode: Unsupported value: "all": supported values: "subGroup", "taskMember"`},
		{"minRoleReplicas names a serving role", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{MinRoleReplicas: map[string]int{"decoder": 1}}
		}, `spec.gangPolicy.minRoleReplicas[decoder]: Not found: "decoder"`},
		{"minRoleReplicas >= 1", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{MinRoleReplicas: map[string]int{"decode": 0}}
		},
			"spec.gangPolicy.minRoleReplicas[decode]: Invalid value: 0: must be >= 1"},
		{"minRoleReplicas <= replicas", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{MinRoleReplicas: map[string]int{"decode": 3}}
		},
			"spec.gangPolicy.minRoleReplicas[decode]: Invalid value: 3: must be <= the role's replicas (2)"},
		{"minRoleReplicas needs subGroup mode", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{Mode: GangModeTaskMember, MinRoleReplicas: map[string]int{"decode": 1}}
		}, "spec.gangPolicy.minRoleReplicas: Forbidden: taskMember mode gangs the whole service"},
		{"await known", func(s *InferenceService) { s.Spec.Await = "ready" }, `spec.await: Unsupported value: "ready"`},
		{"queue needs gang scheduling", func(s *InferenceService) {
			s.Spec.Roles = []Role{worker}
			s.Spec.SchedulingStrategy = &SchedulingStrategy{Queue: "llm"}
		}, "spec.schedulingStrategy.queue: Forbidden: a queue belongs to the service's Volcano PodGroup"},
		{"queue is a DNS subdomain", func(s *InferenceService) { s.Spec.SchedulingStrategy = &SchedulingStrategy{Queue: "LLM Queue"} },
			`spec.schedulingStrategy.queue: Invalid value: "LLM Queue"`},
		{"minResources known", func(s *InferenceService) { s.Spec.SchedulingStrategy = &SchedulingStrategy{MinResources: "all"} },
			`spec.schedulingStrategy.minResources: Unsupported value: "all": supported values: "auto", "none"`},
		{"template priorityClassName agrees", func(s *InferenceService) {
			s.Spec.SchedulingStrategy = &SchedulingStrategy{PriorityClassName: "high"}
			s.Spec.Roles[0].Template.Spec.PriorityClassName = "low"
		}, `spec.roles[0].template.spec.priorityClassName: Invalid value: "low": differs from schedulingStrategy.priorityClassName "high"`},
		{"tier allowed and tier name not both", func(s *InferenceService) {
			s.Spec.SchedulingStrategy = &SchedulingStrategy{NetworkTopology: &NetworkTopology{
				GroupPolicy: &NetworkTopologyPolicy{HighestTierAllowed: ptr.To(2), HighestTierName: "spine"}}}
		}, `spec.schedulingStrategy.networkTopology.groupPolicy: Invalid value: "highestTierAllowed and highestTierName": give one of them, not both`},
		{"a tier is required", func(s *InferenceService) {
			s.Spec.SchedulingStrategy = &SchedulingStrategy{NetworkTopology: &NetworkTopology{RolePolicy: &NetworkTopologyPolicy{Mode: "hard"}}}
		}, "spec.schedulingStrategy.networkTopology.rolePolicy.highestTierAllowed: Required value"},
		{"tiers start at 1", func(s *InferenceService) {
			s.Spec.Roles[1].NetworkTopology = &NetworkTopologyPolicy{HighestTierAllowed: ptr.To(0)}
		},
			"spec.roles[1].networkTopology.highestTierAllowed: Invalid value: 0: must be >= 1"},
		{"topology mode known", func(s *InferenceService) {
			s.Spec.Roles[1].NetworkTopology = &NetworkTopologyPolicy{Mode: "strict", HighestTierAllowed: ptr.To(1)}
		}, `spec.roles[1].networkTopology.mode: Unsupported value: "strict": supported values: "hard", "soft"`},
		{"no network topology in taskMember mode", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{Mode: GangModeTaskMember}
			s.Spec.SchedulingStrategy = &SchedulingStrategy{NetworkTopology: &NetworkTopology{GroupPolicy: &NetworkTopologyPolicy{HighestTierAllowed: ptr.To(2)}}}
		}, "spec.schedulingStrategy.networkTopology: Forbidden: gangPolicy.mode taskMember (for Volcano < 1.14) cannot express network topology: a per-role policy needs the PodGroup's subGroupPolicy"},
		{"no role topology in taskMember mode", func(s *InferenceService) {
			s.Spec.GangPolicy = &GangPolicy{Mode: GangModeTaskMember}
			s.Spec.Roles[0].NetworkTopology = &NetworkTopologyPolicy{HighestTierAllowed: ptr.To(1)}
		}, "spec.roles[0].networkTopology: Forbidden: a per-role policy needs the PodGroup's subGroupPolicy"},
		{"a role's pool exists", func(s *InferenceService) { s.Spec.Roles[0].NodePool = "h100" },
			`spec.roles[0].nodePool: Not found: "h100"`},
		{"GPUs per pod fit the pool's nodes", func(s *InferenceService) {
			s.Spec.NodePools = []NodePool{karpenterPool("l4", 4)}
			s.Spec.Roles[0].NodePool = "l4"
		}, `spec.roles[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: 8: a pod cannot have more GPUs than a node of pool "l4" has (4)`},
		{"multi-node pods take whole nodes", func(s *InferenceService) {
			s.Spec.NodePools = []NodePool{karpenterPool("big", 16)}
			s.Spec.Roles[0].NodePool = "big"
		}, "a multi-node replica spreads over nodes: each of its pods takes a whole node"},
		{"pool names are unique", func(s *InferenceService) { s.Spec.NodePools = []NodePool{karpenterPool("a", 8), karpenterPool("a", 8)} },
			`spec.nodePools[1].name: Duplicate value: "a"`},
		{"a karpenter pool needs a node class", func(s *InferenceService) { s.Spec.NodePools = []NodePool{{Name: "a", GPUsPerNode: 8}} },
			"spec.nodePools[0].nodeClassRef: Required value"},
		{"an existing pool makes no nodes", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Kind = NodePoolExisting
			s.Spec.NodePools = []NodePool{p}
		}, "spec.nodePools[0].nodeClassRef: Forbidden: only a karpenter pool makes nodes"},
		{"an existing pool selects its nodes", func(s *InferenceService) {
			s.Spec.NodePools = []NodePool{{Name: "a", Kind: NodePoolExisting, GPUsPerNode: 8}}
		}, "spec.nodePools[0].labels: Required value: how to select the existing nodes"},
		{"capacity types known", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.CapacityTypes = []CapacityType{"preemptible"}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].capacityTypes[0]: Unsupported value: "preemptible"`},
		{"taint effects known", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Taints = []Taint{{Key: "k", Effect: "NoWay"}}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].taints[0].effect: Unsupported value: "NoWay"`},
		{"pools have GPUs", func(s *InferenceService) { s.Spec.NodePools = []NodePool{karpenterPool("a", 0)} },
			"spec.nodePools[0].gpusPerNode: Invalid value: 0: must be >= 1"},
		{"consolidateAfter a duration", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.ConsolidateAfter = "ten minutes"
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].consolidateAfter: Invalid value: "ten minutes": must be a duration in whole seconds such as "10m" or "90s", at most 24h0m0s`},
		{"consolidateAfter in whole seconds, as Karpenter's NodePool schema takes it", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.ConsolidateAfter = "1.5s"
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].consolidateAfter: Invalid value: "1.5s": must be a duration in whole seconds`},
		{"consolidateAfter at most a day", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.ConsolidateAfter = "720h"
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].consolidateAfter: Invalid value: "720h"`},
		{"an existing pool's nodes are not Karpenter's to remove", func(s *InferenceService) {
			s.Spec.NodePools = []NodePool{{Name: "a", Kind: NodePoolExisting, GPUsPerNode: 8, Labels: map[string]string{"pool": "a"}, ConsolidateAfter: "1m"}}
		}, "spec.nodePools[0].consolidateAfter: Forbidden: only a karpenter pool makes nodes"},
		{"a karpenter pool's labels are Karpenter's to take", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Labels = map[string]string{"beta.kubernetes.io/arch": "amd64"}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].labels[beta.kubernetes.io/arch]: Invalid value: "beta.kubernetes.io/arch": Karpenter refuses a NodePool label ` +
			`in the domains it keeps for the kubelet and itself (kubernetes.io, k8s.io, karpenter.sh) unless it knows it`},
		{"a mistyped zone label is named", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Labels = map[string]string{"topology.kubernetes.io/zones": "us-east-1a"}
			s.Spec.NodePools = []NodePool{p}
		}, `such a NodePool is never ready and launches no node; use a key of your own domain (did you mean "topology.kubernetes.io/zone"?)`},
		{"Karpenter names the pool's nodes", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Labels = map[string]string{"karpenter.sh/nodepool": "other"}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].labels[karpenter.sh/nodepool]: Invalid value: "karpenter.sh/nodepool": Karpenter sets it to the NodePool's name`},
		{"a label contradicts the pool's instance types", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.InstanceTypes = []string{"p5.48xlarge"}
			p.Labels = map[string]string{"node.kubernetes.io/instance-type": "p4d.24xlarge"}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].labels[node.kubernetes.io/instance-type]: Invalid value: "p4d.24xlarge": contradicts instanceTypes p5.48xlarge: ` +
			`Karpenter gives every node of the pool both, and no instance type has both; set instanceTypes instead`},
		{"a label contradicts the default capacity type", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Labels = map[string]string{"karpenter.sh/capacity-type": "spot"}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].labels[karpenter.sh/capacity-type]: Invalid value: "spot": contradicts capacityTypes on-demand`},
		{"a taint value is a qualified name", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Taints = []Taint{{Key: "dedicated", Value: "llm serving", Effect: "NoSchedule"}}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].taints[0].value: Invalid value: "llm serving": Karpenter takes a qualified name here`},
		{"the GPU taint is there already", func(s *InferenceService) {
			p := karpenterPool("a", 8)
			p.Taints = []Taint{{Key: "nvidia.com/gpu", Effect: "NoSchedule"}}
			s.Spec.NodePools = []NodePool{p}
		}, `spec.nodePools[0].taints[0]: Invalid value: "nvidia.com/gpu:NoSchedule": Karpenter refuses a key and effect twice: ` +
			`every node of a karpenter pool has nvidia.com/gpu=true:NoSchedule already`},
		{"maxSurge is 0 or 1", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = &RolloutStrategy{MaxSurge: ptr.To(2)} },
			"spec.roles[1].rolloutStrategy.maxSurge: Invalid value: 2: must be 0 or 1"},
		{"partition within the replicas", func(s *InferenceService) { s.Spec.Roles[1].RolloutStrategy = &RolloutStrategy{Partition: ptr.To(3)} },
			"spec.roles[1].rolloutStrategy.partition: Invalid value: 3: must be >= 0 and <= replicas (2)"},
		{"restartPolicy known to LWS", func(s *InferenceService) { s.Spec.Roles[0].RestartPolicy = "Always" },
			`spec.roles[0].restartPolicy: Unsupported value: "Always": supported values: "RecreateGroupOnPodRestart", "None"`},
		{"the deprecated Default restart policy", func(s *InferenceService) { s.Spec.Roles[0].RestartPolicy = "Default" },
			`spec.roles[0].restartPolicy: Unsupported value: "Default"`},
		{"startupPolicy known to LWS", func(s *InferenceService) { s.Spec.Roles[0].StartupPolicy = "WorkersFirst" },
			`spec.roles[0].startupPolicy: Unsupported value: "WorkersFirst": supported values: "LeaderCreated", "LeaderReady"`},
		{"LeaderReady never starts a leader without a probe of its own either: the render gives it GET /health", func(s *InferenceService) {
			s.Spec.Roles[0].StartupPolicy = "LeaderReady"
			s.Spec.Roles[0].Template.Spec.Containers[0].ReadinessProbe = nil
		}, "spec.roles[0].startupPolicy: Invalid value: \"LeaderReady\": would never start"},
		{"LeaderReady with a probed leader never starts", func(s *InferenceService) {
			s.Spec.Roles[0].StartupPolicy = "LeaderReady"
			s.Spec.Roles[0].Template.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000)}}}
		}, "spec.roles[0].startupPolicy: Invalid value: \"LeaderReady\": would never start"},
		{"LeaderReady needs workers", func(s *InferenceService) {
			s.Spec.Roles = []Role{worker}
			s.Spec.Roles[0].StartupPolicy = "LeaderReady"
		},
			"spec.roles[0].startupPolicy: Forbidden: a single-node replica has no workers"},
		{"role topology needs gang scheduling", func(s *InferenceService) {
			w := worker
			w.NetworkTopology = &NetworkTopologyPolicy{HighestTierAllowed: ptr.To(1)}
			s.Spec.Roles = []Role{w}
		}, "spec.roles[0].networkTopology: Forbidden: network topology belongs to the service's Volcano PodGroup"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { assertRefused(t, validService, tc.mutate, tc.want) })
	}
}

// assertRefused: the valid service, changed, is refused with an error that says want.
func assertRefused(t *testing.T, valid func() *InferenceService, mutate func(*InferenceService), want string) {
	t.Helper()
	svc := valid()
	mutate(svc)
	errs := Validate(svc)
	require.NotEmpty(t, errs, "the rule must refuse this input")
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	assert.Contains(t, strings.Join(all, "\n"), want)
}

func TestLongestNamesThatFitPass(t *testing.T) {
	svc := validService()
	svc.Spec.Roles[0].Name = "p"
	svc.Name = strings.Repeat("d", 50-len("-decode-9"))
	svc.Spec.Roles[1].Replicas = ptr.To(10)
	assert.Empty(t, Validate(svc), "multi-node LWS names of exactly 50 characters fit")
	svc.Spec.Roles = []Role{{Name: "w", ComponentType: ComponentTypeWorker, Template: server()}}
	svc.Name = strings.Repeat("w", 52-len("-w-0"))
	assert.Empty(t, Validate(svc), "single-node LWS names of exactly 52 characters fit")
}

func TestEveryErrorIsReportedAtOnce(t *testing.T) {
	svc := validService()
	svc.Name = ""
	svc.Spec.Roles[0].Multinode.NodeCount = 0
	svc.Spec.Roles[1].Template.Spec.Containers[0].Image = ""
	svc.Spec.Await = "x"
	errs := Validate(svc)
	var fields []string
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	assert.ElementsMatch(t, []string{"metadata.name", "spec.roles[0].multinode.nodeCount",
		"spec.roles[1].template.spec.containers[0].image", "spec.await"}, fields)
}

func TestResolveShapeIgnoresTemplates(t *testing.T) {
	svc := validService()
	svc.Spec.Roles[0].Template = nil
	_, errs := ResolveShape(svc)
	assert.Empty(t, errs)
	svc.Spec.Roles[0].Multinode.NodeCount = 0
	_, errs = ResolveShape(svc)
	assert.Len(t, errs, 1)
}

// TestErrorsComeInADeterministicOrder: errors from maps (labels, resources) come in key order, so
// the same input always prints the same list.
func TestErrorsComeInADeterministicOrder(t *testing.T) {
	svc := validService()
	svc.Labels = map[string]string{}
	for _, k := range []string{"b!", "a!", "d!", "c!", "f!", "e!"} {
		svc.Labels[k] = "v"
	}
	first := Validate(svc).ToAggregate().Error()
	for i := 0; i < 20; i++ {
		assert.Equal(t, first, Validate(svc).ToAggregate().Error())
	}
	assert.Less(t, strings.Index(first, `"a!"`), strings.Index(first, `"f!"`))
}
