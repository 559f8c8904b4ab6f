// SPDX-License-Identifier: Apache-2.0

// Package api is the input model: the InferenceService spec users write (YAML for the CLI, the Go
// component's Args, a TypeScript, Python or YAML program's inputs through the provider), its
// defaults, the name of every object, strict decoding and validation. It imports Kubernetes and
// Gateway API types, vllm (the server's command line) and the Endpoint Picker's configuration
// checks (eppconfig), nothing of ours above it, so every other package can depend on it.
package api

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
)

const (
	// Group and Version of the manifest (the fusioninfer InferenceService design, docs/design/0000-the-fusioninfer-design.md).
	Group      = "fusioninfer.io"
	Version    = "v1alpha1"
	APIVersion = Group + "/" + Version
	Kind       = "InferenceService"
)

// Every field carries a `pulumi` tag beside its `json` tag: this is the only hand-written
// definition of the inputs. The Go component's Args are generated from it (make gen), the
// provider's schema is made from it, and every front door decodes into it
// (docs/design/0012-one-input-model.md).

// InferenceService is one LLM inference service: the document the CLI reads.
type InferenceService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              InferenceServiceSpec `json:"spec" pulumi:"spec"`
}

// ComponentType is the semantic role of a component in the inference pipeline.
type ComponentType string

const (
	ComponentTypeRouter    ComponentType = "router"
	ComponentTypePrefiller ComponentType = "prefiller"
	ComponentTypeDecoder   ComponentType = "decoder"
	ComponentTypeWorker    ComponentType = "worker"
)

// Serving reports whether pods of this type serve model traffic (worker, prefiller, decoder).
func (c ComponentType) Serving() bool {
	return c == ComponentTypeWorker || c == ComponentTypePrefiller || c == ComponentTypeDecoder
}

// InferenceServiceSpec is the fusioninfer InferenceService design's spec (docs/design/0000-the-fusioninfer-design.md)
// with what this project adds: gang policy, await, node pools, the router's and rollouts' fields.
type InferenceServiceSpec struct {
	// Roles are the logical components of the service, each with a unique name.
	Roles []Role `json:"roles" pulumi:"roles"`
	// Model is where the serving roles' weights come from and where they are kept: downloaded
	// once into a cache volume that every server mounts, streamed from object storage, or mounted
	// from a volume or an image (docs/model-weights.md). A role may set its own.
	Model *Model `json:"model,omitempty" pulumi:"model,optional"`
	// SchedulingStrategy applies service-wide scheduling policies.
	SchedulingStrategy *SchedulingStrategy `json:"schedulingStrategy,omitempty" pulumi:"schedulingStrategy,optional"`
	// GangPolicy shapes the shared Volcano PodGroup when gang scheduling is on.
	GangPolicy *GangPolicy `json:"gangPolicy,omitempty" pulumi:"gangPolicy,optional"`
	// Await chooses what `pulumi up` waits for: all (default), minimal or none.
	Await AwaitMode `json:"await,omitempty" pulumi:"await,optional" default:"all"`
	// AwaitTimeout is how long `pulumi up` waits for each awaited replica to be Available before it
	// fails: a duration ("90m", "2h"), default 60m. A large model takes minutes to download and
	// load; the kubernetes provider's own default is 10 minutes. A role may set its own. It is also
	// the load the servers' default startup probe allows, with await none too: a server that does
	// not answer vLLM's /health by then is restarted by the kubelet, so a download from the Hub
	// without spec.model's cache must fit in it (or give the server a startupProbe of your own).
	AwaitTimeout string `json:"awaitTimeout,omitempty" pulumi:"awaitTimeout,optional" default:"60m"`
	// NodePools are the GPU node pools the roles run on.
	NodePools []NodePool `json:"nodePools,omitempty" pulumi:"nodePools,optional"`
	// DualPodsController installs (or names the namespace of) FMA's dual-pods controller, for
	// roles with modelFlexibility.
	DualPodsController *DualPodsController `json:"dualPodsController,omitempty" pulumi:"dualPodsController,optional"`
	// RolloutOrder names the roles in the order a rollout updates them; roles it leaves out follow
	// in the default order: decoders, prefillers, workers, then the router.
	RolloutOrder []string `json:"rolloutOrder,omitempty" pulumi:"rolloutOrder,optional"`
	// Monitoring connects the service to the platform's metrics: the Prometheus autoscaled roles
	// read, PodMonitors for the servers and the Endpoint Picker, a Grafana dashboard.
	Monitoring *Monitoring `json:"monitoring,omitempty" pulumi:"monitoring,optional"`
}

// Monitoring is the platform's metrics stack as the service uses it (docs/monitoring.md).
type Monitoring struct {
	// PrometheusAddress is the URL of the Prometheus (or Thanos, Mimir: any server of Prometheus'
	// query API) that scrapes the model servers, e.g. http://prometheus.monitoring:9090. KEDA
	// queries it for the metric of every autoscaled role.
	PrometheusAddress string `json:"prometheusAddress,omitempty" pulumi:"prometheusAddress,optional"`
	// PodMonitors adds prometheus-operator PodMonitors (monitoring.coreos.com/v1): one per serving
	// role for its servers' /metrics (the leader pods; every pod and rank with parallelism), one for the router's Endpoint Picker, with
	// the labels service, role and replica that a dashboard groups by. Dual-pods roles are left out:
	// their servers run in pods FMA makes.
	PodMonitors bool `json:"podMonitors,omitempty" pulumi:"podMonitors,optional"`
	// Dashboard adds a Grafana dashboard of the service: a ConfigMap with the grafana_dashboard
	// label that the Grafana chart's dashboard sidecar loads. Its queries read the labels the
	// PodMonitors add, so it needs podMonitors.
	Dashboard bool `json:"dashboard,omitempty" pulumi:"dashboard,optional"`
}

// NodePoolKind says who makes a pool's nodes.
type NodePoolKind string

const (
	// NodePoolKarpenter: a Karpenter NodePool (karpenter.sh/v1) sized for the service provisions them.
	NodePoolKarpenter NodePoolKind = "karpenter"
	// NodePoolExisting: the cluster has them; the pods only get the pool's selectors and tolerations.
	NodePoolExisting NodePoolKind = "existing"
)

// NodePool is a pool of GPU nodes for some of the service's roles. A field tagged
// pools:"karpenter" makes or shapes nodes, so only a karpenter pool may set it (validation reads
// the tag: fieldsNotForPool).
type NodePool struct {
	// Name is a DNS label, unique among the pools; roles name it in their nodePool field.
	Name string `json:"name" pulumi:"name"`
	// Kind is the pool's kind: karpenter (default) or existing.
	Kind NodePoolKind `json:"kind,omitempty" pulumi:"kind,optional" default:"karpenter"`
	// GPUsPerNode is the nvidia.com/gpu capacity of each node.
	GPUsPerNode int `json:"gpusPerNode" pulumi:"gpusPerNode"`
	// Accelerators are GPU product names as GPU feature discovery labels them
	// (nvidia.com/gpu.product, e.g. NVIDIA-H100-80GB-HBM3).
	Accelerators []string `json:"accelerators,omitempty" pulumi:"accelerators,optional"`
	// InstanceTypes are the node.kubernetes.io/instance-type values the nodes may have.
	InstanceTypes []string `json:"instanceTypes,omitempty" pulumi:"instanceTypes,optional"`
	// InstanceFamilies are the families (karpenter.k8s.aws/instance-family) a Karpenter pool's nodes may be of.
	InstanceFamilies []string `json:"instanceFamilies,omitempty" pulumi:"instanceFamilies,optional" pools:"karpenter"`
	// CapacityTypes are what Karpenter may buy the nodes as: on-demand (default for a Karpenter
	// pool), spot or reserved.
	CapacityTypes []CapacityType `json:"capacityTypes,omitempty" pulumi:"capacityTypes,optional" pools:"karpenter"`
	// Taints are the taints of a Karpenter pool's nodes, which the pods tolerate; nvidia.com/gpu is
	// always one.
	Taints []Taint `json:"taints,omitempty" pulumi:"taints,optional" pools:"karpenter"`
	// Labels are the labels of a Karpenter pool's nodes; for an existing pool, those that select its nodes.
	Labels map[string]string `json:"labels,omitempty" pulumi:"labels,optional"`
	// NodeClassRef is the cloud node class a Karpenter pool's nodes are made from (e.g. an EC2NodeClass).
	NodeClassRef *NodeClassRef `json:"nodeClassRef,omitempty" pulumi:"nodeClassRef,optional" pools:"karpenter"`
	// ConsolidateAfter is how long a node of a Karpenter pool stays empty before Karpenter removes
	// it (a duration in whole seconds, "10m" or "90s", at most a day): longer keeps nodes for load that returns,
	// shorter pays for fewer idle GPUs. Karpenter only ever removes empty nodes of the pool, a tenth
	// of them at a time.
	ConsolidateAfter string `json:"consolidateAfter,omitempty" pulumi:"consolidateAfter,optional" default:"10m" pools:"karpenter"`
}

// CapacityType is a kind of capacity Karpenter buys a node as (its karpenter.sh/capacity-type).
type CapacityType string

// Taint is a node taint.
type Taint struct {
	// Key is the taint's key.
	Key string `json:"key" pulumi:"key"`
	// Value is the taint's value, if any.
	Value string `json:"value,omitempty" pulumi:"value,optional"`
	// Effect is the taint's effect: NoSchedule, PreferNoSchedule or NoExecute.
	Effect corev1.TaintEffect `json:"effect" pulumi:"effect"`
}

// NodeClassRef names a Karpenter node class.
type NodeClassRef struct {
	// Group is the node class's API group, e.g. karpenter.k8s.aws.
	Group string `json:"group" pulumi:"group"`
	// Kind is the node class's kind, e.g. EC2NodeClass.
	Kind string `json:"kind" pulumi:"kind"`
	// Name is the node class's name.
	Name string `json:"name" pulumi:"name"`
}

// SchedulingStrategy defines service-wide scheduling behaviour.
type SchedulingStrategy struct {
	// SchedulerName is the Kubernetes scheduler; "volcano" turns gang scheduling on.
	SchedulerName string `json:"schedulerName,omitempty" pulumi:"schedulerName,optional"`
	// Queue is the Volcano queue of the service's PodGroup.
	Queue string `json:"queue,omitempty" pulumi:"queue,optional"`
	// PriorityClassName is the priority class of the PodGroup (Volcano orders gangs by it) and of
	// every model server and Endpoint Picker pod (preemption).
	PriorityClassName string `json:"priorityClassName,omitempty" pulumi:"priorityClassName,optional"`
	// MinResources is what the PodGroup's minResources are: none (default) or auto, the resources
	// of the gang's minimal set (minRoleReplicas of every role), never the whole service's.
	MinResources MinResourcesMode `json:"minResources,omitempty" pulumi:"minResources,optional"`
	// NetworkTopology asks Volcano to keep the service, and each replica, within a network tier.
	NetworkTopology *NetworkTopology `json:"networkTopology,omitempty" pulumi:"networkTopology,optional"`
}

// MinResourcesMode chooses the PodGroup's minResources.
type MinResourcesMode string

const (
	MinResourcesNone MinResourcesMode = "none"
	MinResourcesAuto MinResourcesMode = "auto"
)

// NetworkTopology holds the service-level and replica-level topology policies (Kthena's subGroup network topology proposal).
type NetworkTopology struct {
	// GroupPolicy constrains all the service's pods together (PodGroup spec.networkTopology).
	GroupPolicy *NetworkTopologyPolicy `json:"groupPolicy,omitempty" pulumi:"groupPolicy,optional"`
	// RolePolicy constrains the pods of each replica of every role (the networkTopology of each of
	// its subGroupPolicy entries), unless the role sets its own networkTopology.
	RolePolicy *NetworkTopologyPolicy `json:"rolePolicy,omitempty" pulumi:"rolePolicy,optional"`
}

// NetworkTopologyPolicy is Volcano's NetworkTopologySpec: how far apart, in network tiers, the
// pods it covers may be.
type NetworkTopologyPolicy struct {
	// Mode is how strictly the pods keep within the tier: hard (default: never cross it) or soft
	// (prefer not to).
	Mode NetworkTopologyMode `json:"mode,omitempty" pulumi:"mode,optional" default:"hard"`
	// HighestTierAllowed is the highest tier the pods may span (1 = the closest).
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty" pulumi:"highestTierAllowed,optional"`
	// HighestTierName names that tier instead (Volcano HyperNode tier names).
	HighestTierName string `json:"highestTierName,omitempty" pulumi:"highestTierName,optional"`
}

// NetworkTopologyMode is hard or soft.
type NetworkTopologyMode string

const (
	NetworkTopologyHard NetworkTopologyMode = "hard"
	NetworkTopologySoft NetworkTopologyMode = "soft"
)

// GangMode selects how the shared PodGroup expresses the gang.
type GangMode string

const (
	// GangModeSubGroup (default, Volcano >= 1.14): each replica all-or-nothing, at least
	// minRoleReplicas of every role together, extra replicas placed whole when room appears.
	GangModeSubGroup GangMode = "subGroup"
	// GangModeTaskMember is the fusioninfer design's literal minTaskMember PodGroup for Volcano < 1.14:
	// nothing is scheduled until the whole service fits.
	GangModeTaskMember GangMode = "taskMember"
)

// GangPolicy configures gang scheduling.
type GangPolicy struct {
	// Mode is how the shared PodGroup expresses the gang: subGroup (default) or taskMember.
	Mode GangMode `json:"mode,omitempty" pulumi:"mode,optional" default:"subGroup"`
	// MinRoleReplicas is, per serving role name, how many replicas must be placed together
	// before any runs (default 1 for each serving role).
	MinRoleReplicas map[string]int `json:"minRoleReplicas,omitempty" pulumi:"minRoleReplicas,optional"`
}

// AwaitMode chooses what a deployment waits for.
type AwaitMode string

const (
	// AwaitAll waits for every replica to be Available, like a Deployment.
	AwaitAll AwaitMode = "all"
	// AwaitMinimal waits only for the replicas the gang policy requires; the rest are created
	// after them and come up when capacity appears.
	AwaitMinimal AwaitMode = "minimal"
	// AwaitNone waits for nothing.
	AwaitNone AwaitMode = "none"
)

// Role describes one logical component of the inference pipeline.
type Role struct {
	// Name is a user-chosen unique identifier (e.g. "prefill"); a DNS label.
	Name string `json:"name" pulumi:"name" roles:"any"`
	// ComponentType is what the role does: worker, prefiller, decoder or router.
	ComponentType ComponentType `json:"componentType" pulumi:"componentType" roles:"any"`

	// KVCacheOffload keeps the KV blocks a server evicts from its GPUs in CPU memory, where prefix
	// caching finds them again (vLLM's OffloadingConnector, beside the server's own KV connector in
	// a MultiConnector). Its memory is the pod's: the server's memory request must hold it.
	KVCacheOffload *KVCacheOffload `json:"kvCacheOffload,omitempty" pulumi:"kvCacheOffload,optional" roles:"serving"`

	// Router fields (componentType: router).

	// Strategy is the routing strategy, a preset of the Endpoint Picker's configuration:
	// prefix-cache, kv-cache-utilization, queue-size, lora-affinity or pd-disaggregation; unset,
	// the upstream default mix (pd-disaggregation for a prefill/decode service).
	// precise-prefix-cache (llm-d-router-v0.10.0 only; prefill/decode too) routes on the KV-cache
	// events every server publishes: the servers get the events flags and ports, a tokenizer
	// Deployment serves the model's tokens, and the picker indexes which pod holds which block.
	Strategy string `json:"strategy,omitempty" pulumi:"strategy,optional" roles:"router"`
	// RouterMode is where requests enter: standalone (the Endpoint Picker's pod runs an Envoy
	// proxy and a Service clients call, no Gateway needed) or gateway (an HTTPRoute attaches the
	// service's InferencePool to a Gateway). Unset, gateway when httproute is given, standalone
	// when it is not, as llm-d's router charts do.
	RouterMode RouterMode `json:"routerMode,omitempty" pulumi:"routerMode,optional" roles:"router"`
	// HTTPRoute is the spec of the service's Gateway API HTTPRoute (gateway mode): its parentRefs,
	// hostnames and rules are kept, and every rule's backend is the service's InferencePool.
	HTTPRoute map[string]any `json:"httproute,omitempty" pulumi:"httproute,optional" roles:"router"`
	// EndpointPickerConfig is a raw EndpointPickerConfig (YAML) that replaces the strategy's preset.
	EndpointPickerConfig string `json:"endpointPickerConfig,omitempty" pulumi:"endpointPickerConfig,optional" roles:"router"`
	// PoolAPIVersion is the InferencePool's version: v1 (default, inference.networking.k8s.io)
	// or v1alpha2 (inference.networking.x-k8s.io, for gateways that have not moved to v1).
	PoolAPIVersion PoolAPIVersion `json:"poolApiVersion,omitempty" pulumi:"poolApiVersion,optional" roles:"router" default:"v1"`
	// FailureMode is what the gateway does when the Endpoint Picker does not answer: FailClose
	// (default: refuse the request) or FailOpen (send it to a pod of its choosing; gateway mode
	// only: a standalone router's proxy has no destination but the one the picker names).
	FailureMode FailureMode `json:"failureMode,omitempty" pulumi:"failureMode,optional" roles:"router" default:"FailClose"`
	// ShadowService adds a headless Service selecting the pool's pods, for gateways that route
	// to Services but not to InferencePools (the Inference Extension implementer's guide, option 1).
	ShadowService bool `json:"shadowService,omitempty" pulumi:"shadowService,optional" roles:"router"`
	// EndpointPicker sets the Endpoint Picker's image, replicas and resources, and a standalone
	// router's proxy.
	EndpointPicker *EndpointPicker `json:"endpointPicker,omitempty" pulumi:"endpointPicker,optional" roles:"router"`

	// Serving fields (worker, prefiller, decoder).

	// Replicas is the number of independent instances (default 1).
	Replicas *int `json:"replicas,omitempty" pulumi:"replicas,optional" roles:"serving" default:"1"`
	// Multinode spreads each replica across nodeCount pods (one leader, nodeCount-1 workers).
	Multinode *Multinode `json:"multinode,omitempty" pulumi:"multinode,optional" roles:"serving"`
	// Template is the pod template of every pod of the role.
	Template *corev1.PodTemplateSpec `json:"template,omitempty" pulumi:"template,optional" roles:"serving"`
	// NetworkTopology constrains the pods of each replica of this role, overriding
	// schedulingStrategy.networkTopology.rolePolicy.
	NetworkTopology *NetworkTopologyPolicy `json:"networkTopology,omitempty" pulumi:"networkTopology,optional" roles:"serving"`
	// NodePool names the spec.nodePools entry the role's pods run on.
	NodePool string `json:"nodePool,omitempty" pulumi:"nodePool,optional" roles:"serving"`
	// RolloutStrategy shapes how a changed pod template reaches the role's replicas.
	RolloutStrategy *RolloutStrategy `json:"rolloutStrategy,omitempty" pulumi:"rolloutStrategy,optional" roles:"serving"`
	// RestartPolicy is what LWS does when a pod of a replica restarts: RecreateGroupOnPodRestart
	// (default: the whole replica restarts, as a multi-node server needs) or None.
	RestartPolicy lwsv1.RestartPolicyType `json:"restartPolicy,omitempty" pulumi:"restartPolicy,optional" roles:"serving" default:"RecreateGroupOnPodRestart"`
	// StartupPolicy is when LWS creates a replica's workers: LeaderCreated (default, with the
	// leader) or LeaderReady (once the leader pod is ready).
	StartupPolicy lwsv1.StartupPolicyType `json:"startupPolicy,omitempty" pulumi:"startupPolicy,optional" roles:"serving" default:"LeaderCreated"`
	// AwaitTimeout replaces spec.awaitTimeout for this role's replicas (a role whose model loads
	// slower than the others'): the wait of `pulumi up` and its servers' startup probe.
	AwaitTimeout string `json:"awaitTimeout,omitempty" pulumi:"awaitTimeout,optional" roles:"serving"`
	// TerminationGracePeriodSeconds is how long a model server's pods get to finish the requests
	// they are generating when they stop (a rollout, a scale-down): long generations need more than
	// Kubernetes' 30 s. Unset, the template's own value holds.
	TerminationGracePeriodSeconds *int `json:"terminationGracePeriodSeconds,omitempty" pulumi:"terminationGracePeriodSeconds,optional" roles:"serving"`
	// Model replaces spec.model for this role, whole: a role that serves another model (a draft
	// model, a different size) gets its own cache and download.
	Model *Model `json:"model,omitempty" pulumi:"model,optional" roles:"serving"`
	// Autoscaling lets a metric move the role's replicas between minReplicas and maxReplicas
	// (docs/autoscaling.md): the base replicas stay one LWS each, and KEDA scales one extra LWS,
	// "{service}-{role}-elastic", whose groups are each placed whole.
	Autoscaling *Autoscaling `json:"autoscaling,omitempty" pulumi:"autoscaling,optional" roles:"serving"`
	// Parallelism runs vLLM's own data parallel (and expert parallel) across a replica's pods in
	// place of Ray, every rank with an HTTP server of its own that the router reaches
	// (docs/wide-ep.md). Unset, a multi-node replica runs vLLM on Ray.
	Parallelism *Parallelism `json:"parallelism,omitempty" pulumi:"parallelism,optional" roles:"serving"`
	// ModelFlexibility runs a worker role's servers through llm-d's dual pods (llm-d's dual-pod architecture): the
	// LWS pods only hold the GPUs, and FMA's dual-pods controller runs vLLM beside them, putting
	// idle servers to sleep and waking them in seconds.
	ModelFlexibility *ModelFlexibility `json:"modelFlexibility,omitempty" pulumi:"modelFlexibility,optional" roles:"serving"`
}

// Parallelism is how one replica's model is split, in the words of KServe's LLMInferenceService
// (its spec.parallelism): data parallel ranks, dataLocal of them in each pod, each rank spanning
// tensor x pipeline GPUs, the experts of a MoE model spread over the ranks when expert is set.
// Each pod runs one `vllm serve` per local rank in vLLM's external load-balancing mode
// (docs/design/0026-wide-expert-parallelism.md).
type Parallelism struct {
	// Data is the data parallel size: the ranks of one replica (vLLM's --data-parallel-size). It
	// equals dataLocal x multinode.nodeCount.
	Data int `json:"data" pulumi:"data"`
	// DataLocal is the ranks each pod runs, local rank i serving HTTP on the server's port + i
	// (default: data / multinode.nodeCount). At most 8 behind a router: an InferencePool lists at
	// most 8 ports.
	DataLocal int `json:"dataLocal,omitempty" pulumi:"dataLocal,optional"`
	// Tensor is the tensor parallel size of each rank (vLLM's --tensor-parallel-size, default 1).
	Tensor int `json:"tensor,omitempty" pulumi:"tensor,optional" default:"1"`
	// Pipeline is the pipeline parallel size of each rank (vLLM's --pipeline-parallel-size, default 1).
	Pipeline int `json:"pipeline,omitempty" pulumi:"pipeline,optional" default:"1"`
	// DataRPCPort is the port on the leader pod where the ranks meet (vLLM's
	// --data-parallel-rpc-port, default 29550, vLLM's own).
	DataRPCPort int `json:"dataRPCPort,omitempty" pulumi:"dataRPCPort,optional" default:"29550"`
	// Expert spreads a MoE model's experts over the ranks instead of splitting each expert (vLLM's
	// --enable-expert-parallel); it needs data x tensor > 1.
	Expert bool `json:"expert,omitempty" pulumi:"expert,optional"`
}

// Model is one model's weights: where they come from, where they are kept, how vLLM loads them
// (docs/design/0015-model-weights.md).
type Model struct {
	// Source is where the weights are: hf://org/name[@revision] (the Hugging Face Hub; pin a
	// commit, main moves), s3://bucket/prefix, gs://bucket/prefix, pvc://claim/path (a volume that
	// already holds them) or oci://registry/repository:tag (an image mounted as a Kubernetes image
	// volume, Kubernetes 1.33+ with the ImageVolume feature).
	Source string `json:"source" pulumi:"source"`
	// Name is the model's public name, what requests ask for (vLLM's --served-model-name): default
	// the Hub repository, else the last element of the source's path. A --served-model-name in
	// the server's arguments wins.
	Name string `json:"name,omitempty" pulumi:"name,optional"`
	// CredentialsSecret names a Secret in the service's namespace whose keys become the
	// downloader's (and, for the Run:ai streamer, the servers') environment: HF_TOKEN for the Hub;
	// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and optionally AWS_REGION, AWS_ENDPOINT_URL for S3
	// and GCS (its HMAC keys). Never inline.
	CredentialsSecret *corev1.LocalObjectReference `json:"credentialsSecret,omitempty" pulumi:"credentialsSecret,optional"`
	// Cache is the volume the weights are downloaded to once, by the Job
	// "{service}-model-download", before any server starts; every server mounts it read-only.
	// Required for hf://, s3:// and gs:// sources unless loadFormat is runai_streamer.
	Cache *ModelCache `json:"cache,omitempty" pulumi:"cache,optional"`
	// LoadFormat is how vLLM loads the weights: runai_streamer streams the safetensors of an s3://
	// or gs:// source straight into GPU memory (--load-format runai_streamer), with no cache and
	// no download.
	LoadFormat ModelLoadFormat `json:"loadFormat,omitempty" pulumi:"loadFormat,optional"`
	// CompileCache keeps vLLM's torch.compile and Triton kernels on a shared volume, so that a
	// server's second start of the same model skips compilation.
	CompileCache *CompileCache `json:"compileCache,omitempty" pulumi:"compileCache,optional"`
	// Adapters are LoRA adapters of the model, each served under its own name beside the base
	// model (docs/lora.md): fetched into the model's cache by the download Job (hf://, s3://,
	// gs://) or mounted read-only (pvc://, oci://), and loaded into the running servers without a
	// restart, so adding a fetched one changes no server (a mounted one is a volume of the pods:
	// they roll).
	Adapters []LoRAAdapter `json:"adapters,omitempty" pulumi:"adapters,optional"`
	// MaxLoras is how many adapters one batch of a server may mix (vLLM's --max-loras), default 4.
	MaxLoras *int `json:"maxLoras,omitempty" pulumi:"maxLoras,optional" default:"4"`
	// MaxLoraRank is the largest rank of the adapters (vLLM's --max-lora-rank): 1, 8, 16 (default),
	// 32, 64, 128, 256, 320 or 512.
	MaxLoraRank *int `json:"maxLoraRank,omitempty" pulumi:"maxLoraRank,optional" default:"16"`
	// AdapterSplits give a public name whose requests the router spreads over adapters by weight
	// (a canary between two versions of an adapter): an InferenceModelRewrite of the router's pool.
	AdapterSplits []AdapterSplit `json:"adapterSplits,omitempty" pulumi:"adapterSplits,optional"`
}

// LoRAAdapter is one LoRA adapter of a model.
type LoRAAdapter struct {
	// Name is the adapter's public name, what requests ask for: a DNS label (lowercase letters,
	// digits and '-'), unique among the model's adapters and splits; behind a router, no other
	// model's name, adapter or split (every serving role is in its one pool), unless that is the
	// same adapter (name and source) of the same base model.
	Name string `json:"name" pulumi:"name"`
	// Source is where the adapter's files are: hf://org/name[@revision], s3://bucket/prefix or
	// gs://bucket/prefix, fetched into the model's cache beside the base model (which then needs a
	// cache); or pvc://claim/path (a claim in the service's namespace) or oci://image (an image
	// volume), mounted read-only in the server's pod at /adapters/{name}, as the base model's are.
	Source string `json:"source" pulumi:"source"`
}

// AdapterSplit is a public name served by several adapters, each getting a share of its requests.
type AdapterSplit struct {
	// Name is the public name requests ask for: a DNS label, not an adapter's name, nor, behind a
	// router, any other model's name, adapter or split (one InferenceModelRewrite a name in the pool).
	Name string `json:"name" pulumi:"name"`
	// Targets are the adapters the requests go to, with their weights.
	Targets []AdapterSplitTarget `json:"targets" pulumi:"targets"`
}

// AdapterSplitTarget is one adapter of a split and its share.
type AdapterSplitTarget struct {
	// Adapter names one of the model's adapters.
	Adapter string `json:"adapter" pulumi:"adapter"`
	// Weight is the adapter's share of the split's requests, relative to the others' (90 and 10:
	// nine in ten requests go to the first), from 1 to 1000000.
	Weight int `json:"weight" pulumi:"weight"`
}

// ModelLoadFormat is how vLLM reads the weights.
type ModelLoadFormat string

// RunaiStreamer is vLLM's --load-format runai_streamer: object storage straight to GPU memory.
const RunaiStreamer ModelLoadFormat = "runai_streamer"

// ModelCache is the PersistentVolumeClaim "{service}-model" the weights are downloaded to.
type ModelCache struct {
	// Size of the claim, a quantity such as 1500Gi: the model's files, and room for a second
	// revision while a rollout replaces the first.
	Size string `json:"size" pulumi:"size"`
	// StorageClassName is a storage class whose volumes many nodes can mount (NFS, Lustre, EFS,
	// Filestore, CephFS...).
	StorageClassName string `json:"storageClassName" pulumi:"storageClassName"`
	// AccessMode is the claim's access mode: ReadWriteMany (default: the download Job writes, every
	// server reads) or ReadOnlyMany, for volumes that one node writes and many nodes then read (the claim asks for
	// ReadWriteOnce too; no server mounts it before the download is complete).
	AccessMode corev1.PersistentVolumeAccessMode `json:"accessMode,omitempty" pulumi:"accessMode,optional" default:"ReadWriteMany"`
	// DownloadTimeout is how long `pulumi up` waits for the download Job, and how long the Job may
	// run: a duration ("2h"); default the size at 50 MiB/s, at least 1h (1500Gi: 8h32m).
	DownloadTimeout string `json:"downloadTimeout,omitempty" pulumi:"downloadTimeout,optional"`
	// Exclude are files of the source not to download: glob patterns (a * or ? never
	// matches a /) matched against each file's path and each of its folders, e.g. "original" (the consolidated
	// checkpoints some Hub repositories carry beside the safetensors) or "*.pth".
	Exclude []string `json:"exclude,omitempty" pulumi:"exclude,optional"`
	// DownloaderImage replaces the download Job's image (ghcr.io/fusioninfer/fusioninfer-download
	// of this release): a mirror of it.
	DownloaderImage string `json:"downloaderImage,omitempty" pulumi:"downloaderImage,optional"`
}

// CompileCache is the PersistentVolumeClaim "{service}-compile-cache" the servers keep their
// compiled kernels on.
type CompileCache struct {
	// Size of the claim, default 20Gi.
	Size string `json:"size,omitempty" pulumi:"size,optional" default:"20Gi"`
	// StorageClassName is a storage class whose volumes many nodes can mount; default the model
	// cache's.
	StorageClassName string `json:"storageClassName,omitempty" pulumi:"storageClassName,optional"`
}

// Autoscaling is how a role's replicas follow load (docs/design/0014-autoscaling.md).
type Autoscaling struct {
	// MinReplicas is the base: that many replicas are the role's own LWSs, in the gang's minimal
	// set and rolled in batches, never scaled down (default the role's replicas, else 1). 0 scales
	// the role to zero while idle (docs/autoscaling.md): behind a router whose Endpoint Picker
	// holds the requests that arrive meanwhile (llm-d-router v0.10.0, GIE v1.5.0), on a metric
	// that exists with no server running (epp:requests, a query of yours, or follow).
	MinReplicas *int `json:"minReplicas,omitempty" pulumi:"minReplicas,optional"`
	// MaxReplicas is the most replicas the role may have; node pools and the planner count them.
	MaxReplicas int `json:"maxReplicas" pulumi:"maxReplicas"`
	// Metric is what the replicas follow: vllm:num_requests_waiting (requests queued per replica),
	// vllm:kv_cache_usage_perc (KV-cache use per replica, 0 to 1), epp:requests (requests the
	// router's Endpoint Picker holds in its queue or has running on the servers, per replica: the
	// one that exists at zero replicas), or a PromQL query of yours that gives the role's whole
	// load in units of target. Unset when follow is set.
	Metric string `json:"metric,omitempty" pulumi:"metric,optional"`
	// Target is the metric's value one replica should carry: the role runs ceil(load / target)
	// replicas, within minReplicas and maxReplicas.
	Target float64 `json:"target,omitempty" pulumi:"target,optional"`
	// ScaleDownDelay is how long the load must stay low before replicas go: a duration ("90s"),
	// default 5m. A model takes minutes to load, so a replica removed too soon is expensive.
	ScaleDownDelay string `json:"scaleDownDelay,omitempty" pulumi:"scaleDownDelay,optional" default:"5m"`
	// Follow scales this role with another autoscaled role's load instead of a metric of its own:
	// a prefill role that keeps a ratio to its decode role.
	Follow *AutoscalingFollow `json:"follow,omitempty" pulumi:"follow,optional"`
	// WakeTimeout is how long the router holds a request that arrives while the role is at zero
	// replicas, for one to start and load its model: a duration ("10m"), default 10m, at most 1h.
	// It is the Endpoint Picker's flow-control TTL (flowControl.defaultRequestTTL), which every
	// queued request then has; a request held longer is answered 429 or 503 to retry. Only for
	// minReplicas 0; of several such roles, the longest.
	WakeTimeout string `json:"wakeTimeout,omitempty" pulumi:"wakeTimeout,optional" default:"10m"`
}

// AutoscalingFollow ties a role's replicas to another role's.
type AutoscalingFollow struct {
	// Role names the serving role whose metric and target this role scales with; it must
	// autoscale on a metric of its own.
	Role string `json:"role" pulumi:"role"`
	// Ratio is this role's replicas per replica of that role (0.5: one prefill per two decodes).
	Ratio float64 `json:"ratio" pulumi:"ratio"`
}

// ModelFlexibilityMode is how a role's servers run.
type ModelFlexibilityMode string

// DualPods: llm-d fast model actuation's server-requesting and server-running pods.
const DualPods ModelFlexibilityMode = "dualPods"

// ModelFlexibility configures a role's dual pods (FMA v0.6.4).
type ModelFlexibility struct {
	// Mode is the kind of model flexibility: dualPods.
	Mode ModelFlexibilityMode `json:"mode" pulumi:"mode"`
	// RequesterImage replaces FMA's requester image (ghcr.io/llm-d-incubation/llm-d-fast-model-actuation/requester:v0.6.4).
	RequesterImage string `json:"requesterImage,omitempty" pulumi:"requesterImage,optional"`
	// AdminPort is the requester's SPI port, which the controller calls (default 8081).
	AdminPort *int `json:"adminPort,omitempty" pulumi:"adminPort,optional" default:"8081"`
	// ProbesPort is the requester's probes port (default 8080).
	ProbesPort *int `json:"probesPort,omitempty" pulumi:"probesPort,optional" default:"8080"`
}

// DualPodsController installs FMA's dual-pods controller with the service.
type DualPodsController struct {
	// Install adds the controller, its permissions, FMA's CRDs and admission policies to the tree.
	Install bool `json:"install,omitempty" pulumi:"install,optional"`
	// Version is the FMA release of the controller image (default v0.6.4, the contract this
	// project emits; the CRDs and policies are v0.6.4's).
	Version string `json:"version,omitempty" pulumi:"version,optional" default:"v0.6.4"`
	// SleeperLimit is how many sleeping servers the controller keeps per GPU (default 2).
	SleeperLimit *int `json:"sleeperLimit,omitempty" pulumi:"sleeperLimit,optional" default:"2"`
	// Namespace is the namespace the controller manages (default the service's); FMA's controller
	// watches one namespace, so it must be the service's.
	Namespace string `json:"namespace,omitempty" pulumi:"namespace,optional"`
}

// Multinode enables multi-node distributed inference.
type Multinode struct {
	// NodeCount is the number of pods (on distinct nodes) per replica.
	NodeCount int `json:"nodeCount" pulumi:"nodeCount"`
}

// PoolAPIVersion is the version of the InferencePool a router creates.
type PoolAPIVersion string

const (
	PoolV1       PoolAPIVersion = "v1"
	PoolV1Alpha2 PoolAPIVersion = "v1alpha2"
)

// RouterMode is where a router's requests enter: its own proxy (standalone) or a Gateway.
type RouterMode string

const (
	// RouterStandalone: an Envoy proxy beside the Endpoint Picker, reached through a Service.
	RouterStandalone RouterMode = "standalone"
	// RouterGateway: a Gateway API HTTPRoute to the InferencePool.
	RouterGateway RouterMode = "gateway"
)

// FailureMode is the gateway's behaviour when the Endpoint Picker does not answer.
type FailureMode string

const (
	FailClose FailureMode = "FailClose"
	FailOpen  FailureMode = "FailOpen"
)

// EndpointPickerRelease is the Endpoint Picker generation a router targets: eppconfig's, which
// knows what each release is.
type EndpointPickerRelease = eppconfig.Release

// The releases, as a Go program names them beside the other fields of the input model.
const (
	EPPReleaseLLMDRouter = eppconfig.ReleaseRouter
	EPPReleaseGIE150     = eppconfig.ReleaseGIE150
	EPPReleaseGIE        = eppconfig.ReleaseGIE
	EPPReleaseLWEPP      = eppconfig.ReleaseLWEPP
)

// EndpointPicker sets the router's Endpoint Picker Deployment.
type EndpointPicker struct {
	// Release is the Endpoint Picker generation the router targets: llm-d-router-v0.10.0
	// (default: llm-d-router's endpoint picker, and its disaggregation sidecar on decode servers,
	// configuration llm-d.ai/v1alpha1), gie-v1.5.0 (GIE v1.5.0's reference EPP, its last; no
	// prefill/decode), gie-v1.2.0 (GIE v1.2.0's reference EPP, or llm-d's inference scheduler
	// v0.4.0 with its routing sidecar v0.4.0 for prefill/decode; the only one that reads a v1alpha2
	// pool) or gie-lwepp-v1.6.0 (GIE's lightweight round-robin EPP for conformance tests: no
	// strategy, no configuration). The configuration is checked by that release's loader rules.
	Release EndpointPickerRelease `json:"release,omitempty" pulumi:"release,optional" default:"llm-d-router-v0.10.0"`
	// Image replaces the release's image: a mirror or a patched build of the same one.
	Image string `json:"image,omitempty" pulumi:"image,optional"`
	// Replicas of the Endpoint Picker (default 1). Behind a Gateway, more than one elect a leader
	// and only it serves (gie-lwepp-v1.6.0 has no leader election: every replica serves); a
	// standalone router's replicas all serve, each with its own proxy, and roll one at a time.
	Replicas *int `json:"replicas,omitempty" pulumi:"replicas,optional" default:"1"`
	// Resources of the Endpoint Picker container.
	Resources *corev1.ResourceRequirements `json:"resources,omitempty" pulumi:"resources,optional"`
	// Proxy sets the Envoy proxy beside each Endpoint Picker of a standalone router (routerMode
	// standalone), the router's entrance.
	Proxy *RouterProxy `json:"proxy,omitempty" pulumi:"proxy,optional"`
	// Tokenizer sets the render (tokenizer) Deployment of strategy precise-prefix-cache: CPU-only
	// `vllm launch render` servers of the model's tokenizer, which the picker's token producer
	// calls to tokenize each prompt into the servers' own tokens.
	Tokenizer *RouterTokenizer `json:"tokenizer,omitempty" pulumi:"tokenizer,optional"`
	// CRDGroups are the API groups in which the cluster has the InferenceObjective and
	// InferenceModelRewrite CRDs: both (default: the Platform installs the Inference Extension's
	// and llm-d-router's, as llm-d's install leaves a cluster that had the Inference Extension's),
	// inference.networking.x-k8s.io (the Inference Extension's only) or llm-d.ai (llm-d-router's
	// only). An adapter split's InferenceModelRewrite is rendered in the group the release's
	// Endpoint Picker watches on such a cluster, so by default in the release's own:
	// llm-d-router-v0.10.0 prefers llm-d.ai, gie-v1.5.0 knows only inference.networking.x-k8s.io.
	CRDGroups InferenceCRDGroups `json:"crdGroups,omitempty" pulumi:"crdGroups,optional" default:"both"`
}

// RouterProxy sets a standalone router's Envoy proxy container.
type RouterProxy struct {
	// Image replaces the proxy's image (docker.io/envoyproxy/envoy:v1.33.2, the Envoy release both
	// standalone charts run): a mirror or another Envoy build. It must have bash, which the
	// proxy's preStop hook drains Envoy with; a distroless Envoy image has none, and its pods
	// would then cut their streams when they stop.
	Image string `json:"image,omitempty" pulumi:"image,optional"`
	// Resources of the proxy container (default: llm-d-router v0.10.0's standalone chart's,
	// 4 CPU and 8Gi requested, 16Gi memory limit).
	Resources *corev1.ResourceRequirements `json:"resources,omitempty" pulumi:"resources,optional"`
}

// KVCacheOffload sets a serving role's KV cache offloading to CPU memory.
type KVCacheOffload struct {
	// CPUMemory is the CPU memory each server (each data parallel rank) keeps KV blocks in, a
	// quantity ("64Gi"); vLLM's cpu_bytes_to_use. The server container's memory request must be
	// at least this, times its ranks.
	CPUMemory string `json:"cpuMemory" pulumi:"cpuMemory"`
}

// RouterTokenizer sets the tokenizer Deployment of strategy precise-prefix-cache.
type RouterTokenizer struct {
	// Image replaces the tokenizer's image (docker.io/vllm/vllm-openai-cpu:v0.23.0, vLLM's CPU
	// image, which KServe runs beside llm-d-router v0.10.0 for its render pods): any image whose
	// `vllm launch render` serves /v1/completions/render and /v1/chat/completions/render.
	Image string `json:"image,omitempty" pulumi:"image,optional"`
	// Replicas of the tokenizer (default 3, llm-d's dedicated render pool): every picker calls
	// them for each request, before it picks an endpoint.
	Replicas *int `json:"replicas,omitempty" pulumi:"replicas,optional" default:"3"`
	// Resources of the tokenizer container (default 1 CPU and 4Gi requested, 4 CPU and 12Gi
	// limits, as llm-d's render pods of the guide's deployments are sized).
	Resources *corev1.ResourceRequirements `json:"resources,omitempty" pulumi:"resources,optional"`
}

// InferenceCRDGroups names the API groups in which a cluster has the InferenceObjective and
// InferenceModelRewrite CRDs.
type InferenceCRDGroups string

const (
	CRDGroupsInferenceExtension InferenceCRDGroups = eppconfig.GroupInferenceX
	CRDGroupsLLMD               InferenceCRDGroups = eppconfig.GroupLLMD
	CRDGroupsBoth               InferenceCRDGroups = "both"
)

// RolloutStrategy shapes how a changed pod template reaches a role's replicas.
type RolloutStrategy struct {
	// MaxUnavailable is how many of the role's replicas a rollout updates at once: a count, or a
	// percent of the replicas rounded down ("25%", the default); at least 1. The replicas' LWSs
	// update in batches of this size, each batch after the previous one is Available.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" pulumi:"maxUnavailable,optional" default:"25%"`
	// MaxSurge is how many extra groups a replica may have during a rollout: 0 (default: a
	// replica's old group goes before its new one comes) or 1 (the new group comes up first, on
	// extra GPUs, so the replica keeps serving). Each replica's LWS gets it
	// as rollingUpdateConfiguration.maxSurge.
	MaxSurge *int `json:"maxSurge,omitempty" pulumi:"maxSurge,optional" default:"0"`
	// Partition keeps the replicas with an index below it on their current pod template (Pulumi
	// ignores template changes on them): a canary on the others. Lower it to roll on.
	Partition *int `json:"partition,omitempty" pulumi:"partition,optional"`
}
