// SPDX-License-Identifier: Apache-2.0

package api

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// ReservedLabelPrefix marks the labels the project sets; users may not set them.
const ReservedLabelPrefix = "fusioninfer.io/"

// ServiceLabel names, on every object the render makes, the InferenceService it was rendered from.
const ServiceLabel = ReservedLabelPrefix + "service"

// LWS names its leader StatefulSet after itself and its worker StatefulSets "{lws}-{group}";
// Kubernetes labels each StatefulSet's pods with "controller-revision-hash: {sts}-{hash}", a
// label value of at most 63 characters with a hash of up to 10 characters and a dash.
const (
	maxLeaderWorkerSetNameSingleNode = validation.DNS1035LabelMaxLength - 11
	maxLeaderWorkerSetNameMultiNode  = maxLeaderWorkerSetNameSingleNode - 2 // "-0" for the one group
)

// Bounds on a role's size: far above any real deployment, low enough that a typo (an extra zero,
// a stray digit) is refused instead of building millions of objects.
const (
	MaxReplicas  = 10000
	MaxNodeCount = 1024
)

// MaxTerminationGracePeriodSeconds bounds a model server's drain time.
const MaxTerminationGracePeriodSeconds = 3600

// Validate checks every rule of the spec (docs/reference.md, Bad input) and returns all violations, each
// with its field path. Nothing may be built from a service that does not validate.
func Validate(svc *InferenceService) field.ErrorList {
	_, errs := Resolve(svc)
	return errs
}

// Resolved is what validation parsed of a valid service, for the renderer to read rather than
// parse again: a router's Endpoint Picker selection, route and pool port, the servers' ports, the
// models.
type Resolved struct {
	// Routing is nil without a router.
	Routing *Routing
	// ServingPorts are the serving roles' servers' ports, by role name.
	ServingPorts map[string]int32
	// DualPodsReadinessPorts are the dual-pods roles' servers' readiness ports, by role name.
	DualPodsReadinessPorts map[string]int32
	// Models are the spec's models, parsed, by owner (ModelOwner: "" for spec.model).
	Models map[string]*ResolvedModel
}

// Resolve checks every rule, as Validate, and returns what it parsed on the way; the Resolved is
// complete only when there are no errors.
func Resolve(svc *InferenceService) (*Resolved, field.ErrorList) {
	return validate(svc, true)
}

// ResolveShape checks every rule that does not read the pod templates' contents: all a caller
// can check while templates are still unknown (a Pulumi preview whose templates depend on other
// resources). Resolve must still pass once they are known. Its Resolved holds what the shape
// alone gives (the models), enough for render.Plan.
func ResolveShape(svc *InferenceService) (*Resolved, field.ErrorList) {
	return validate(svc, false)
}

func validate(svc *InferenceService, withTemplates bool) (*Resolved, field.ErrorList) {
	resolved := &Resolved{ServingPorts: map[string]int32{}, DualPodsReadinessPorts: map[string]int32{}, Models: map[string]*ResolvedModel{}}
	var errs field.ErrorList
	errs = append(errs, validateMetadata(svc)...)
	errs = append(errs, validateSpec(&svc.Spec, svc.Name, withTemplates, field.NewPath("spec"), resolved)...)
	errs = append(errs, validateDualPodsController(&svc.Spec, svc.Namespace, field.NewPath("spec", "dualPodsController"))...)
	return resolved, errs
}

func validateMetadata(svc *InferenceService) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if svc.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "the service name"))
	} else {
		errs = append(errs, validateWith(meta.Child("name"), svc.Name, validation.IsDNS1035Label)...)
	}
	if svc.Namespace != "" {
		errs = append(errs, validateWith(meta.Child("namespace"), svc.Namespace, validation.IsDNS1123Label)...)
	}
	errs = append(errs, apivalidation.ValidateAnnotations(svc.Annotations, meta.Child("annotations"))...)
	for _, k := range slices.Sorted(maps.Keys(svc.Labels)) {
		errs = append(errs, validateLabel(k, svc.Labels[k], meta.Child("labels"))...)
	}
	return errs
}

func validateLabel(key, value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateWith(fldPath, key, validation.IsQualifiedName)...)
	errs = append(errs, validateWith(fldPath.Key(key), value, validation.IsValidLabelValue)...)
	if strings.HasPrefix(key, ReservedLabelPrefix) {
		errs = append(errs, field.Forbidden(fldPath.Key(key), "labels with the prefix "+ReservedLabelPrefix+" are set by fusioninfer"))
	}
	return errs
}

// validateWith is an error at path for each message apimachinery's check (validation.IsDNS1123Label,
// IsQualifiedName, ...) has for value.
func validateWith(path *field.Path, value string, check func(string) []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range check(value) {
		errs = append(errs, field.Invalid(path, value, withoutRegexp(msg)))
	}
	return errs
}

// withoutRegexp is an apimachinery message without the regular expression its RegexError
// appends (k8s.io/apimachinery/pkg/util/validation/validation.go): the rule's words and its
// examples say what is allowed.
func withoutRegexp(msg string) string {
	for _, marker := range []string{", regex used for validation is '", " (regex used for validation is '"} {
		if before, _, found := strings.Cut(msg, marker); found {
			if strings.HasPrefix(marker, ",") {
				return before + ")"
			}
			return before
		}
	}
	return msg
}

func validateSpec(spec *InferenceServiceSpec, serviceName string, withTemplates bool, fldPath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	rolesPath := fldPath.Child("roles")
	if len(spec.Roles) == 0 {
		errs = append(errs, field.Required(rolesPath, "at least one serving role (worker, or prefiller and decoder)"))
	}
	names := sets.New[string]()
	counts := map[ComponentType]int{}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		rolePath := rolesPath.Index(i)
		if role.Name != "" {
			if names.Has(role.Name) {
				errs = append(errs, field.Duplicate(rolePath.Child("name"), role.Name))
			}
			names.Insert(role.Name)
		}
		counts[role.ComponentType]++
		errs = append(errs, validateRole(spec, role, serviceName, withTemplates, rolePath, resolved)...)
	}
	errs = append(errs, validateTopology(spec, counts, rolesPath)...)
	if withTemplates && spec.Router() != nil {
		errs = append(errs, validateRoutedServers(spec, rolesPath, resolved)...)
	}
	errs = append(errs, validateScheduling(spec, fldPath)...)
	errs = append(errs, validateGangPolicy(spec, fldPath.Child("gangPolicy"))...)
	errs = append(errs, validateNodePools(spec, serviceName, withTemplates, fldPath)...)
	errs = append(errs, validateRolloutOrder(spec, fldPath.Child("rolloutOrder"))...)
	errs = append(errs, validateMonitoring(spec, fldPath.Child("monitoring"))...)
	errs = append(errs, validateModels(spec, serviceName, fldPath, resolved)...)
	errs = append(errs, validateAdapterServers(spec, fldPath, resolved)...)
	if withTemplates {
		errs = append(errs, validateKVEvents(spec, serviceName, rolesPath, resolved)...)
	}
	if withTemplates {
		for i := range spec.Roles {
			if role := &spec.Roles[i]; role.ComponentType.Serving() {
				errs = append(errs, validateModelServer(spec, role, rolesPath.Index(i).Child("template"), resolved)...)
			}
		}
	}
	errs = append(errs, validateElasticNames(spec, fldPath.Child("roles"))...)
	errs = append(errs, validateAwaitTimeout(spec.AwaitTimeout, fldPath.Child("awaitTimeout"))...)
	switch spec.Await {
	case "", AwaitAll, AwaitMinimal, AwaitNone:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("await"), spec.Await, spec.Await.AllowedValues()))
	}
	return errs
}

func validateTopology(spec *InferenceServiceSpec, counts map[ComponentType]int, rolesPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	prefillers, decoders, workers := counts[ComponentTypePrefiller], counts[ComponentTypeDecoder], counts[ComponentTypeWorker]
	switch {
	case prefillers > 0 && decoders == 0:
		errs = append(errs, field.Required(rolesPath, "a prefiller role needs a decoder role to hand its KV cache to"))
	case decoders > 0 && prefillers == 0:
		errs = append(errs, field.Required(rolesPath, "a decoder role needs a prefiller role to receive KV caches from"))
	}
	if workers > 0 && prefillers+decoders > 0 {
		errs = append(errs, field.Invalid(rolesPath, "worker + prefiller/decoder",
			"a service is either monolithic (worker roles) or disaggregated (prefiller and decoder roles), not both"))
	}
	if counts[ComponentTypeRouter] > 1 {
		errs = append(errs, field.TooMany(rolesPath.Key("componentType=router"), counts[ComponentTypeRouter], 1))
	}
	if counts[ComponentTypeRouter] > 0 && workers+prefillers+decoders == 0 {
		errs = append(errs, field.Required(rolesPath, "a router needs a serving role (worker, or prefiller and decoder) to route to"))
	}
	return errs
}

func validateRole(spec *InferenceServiceSpec, role *Role, serviceName string, withTemplates bool, rolePath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	if role.Name == "" {
		errs = append(errs, field.Required(rolePath.Child("name"), "a DNS label unique among the roles"))
	} else {
		errs = append(errs, validateWith(rolePath.Child("name"), role.Name, validation.IsDNS1123Label)...)
	}
	switch role.ComponentType {
	case ComponentTypeWorker, ComponentTypePrefiller, ComponentTypeDecoder:
		errs = append(errs, validateServingRole(spec, role, serviceName, withTemplates, rolePath, resolved)...)
	case ComponentTypeRouter:
		errs = append(errs, validateRouterRole(spec, role, serviceName, rolePath, resolved)...)
	case "":
		errs = append(errs, field.Required(rolePath.Child("componentType"), "one of worker, prefiller, decoder, router"))
	default:
		errs = append(errs, field.NotSupported(rolePath.Child("componentType"), role.ComponentType, role.ComponentType.AllowedValues()))
	}
	return errs
}

func validateServingRole(spec *InferenceServiceSpec, role *Role, serviceName string, withTemplates bool, rolePath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	for _, fld := range fieldsNotFor(role) {
		errs = append(errs, field.Forbidden(rolePath.Child(fld), "only a router role has "+fld))
	}
	if role.Replicas != nil && (*role.Replicas < 1 || *role.Replicas > MaxReplicas) {
		errs = append(errs, field.Invalid(rolePath.Child("replicas"), *role.Replicas, fmt.Sprintf("must be >= 1 and <= %d", MaxReplicas)))
	}
	if role.Multinode != nil && (role.Multinode.NodeCount < 1 || role.Multinode.NodeCount > MaxNodeCount) {
		errs = append(errs, field.Invalid(rolePath.Child("multinode", "nodeCount"), role.Multinode.NodeCount,
			fmt.Sprintf("must be >= 1 and <= %d", MaxNodeCount)))
	}
	if g := role.TerminationGracePeriodSeconds; g != nil && (*g < 0 || *g > MaxTerminationGracePeriodSeconds) {
		errs = append(errs, field.Invalid(rolePath.Child("terminationGracePeriodSeconds"), *g,
			fmt.Sprintf("must be >= 0 and <= %d (one hour)", MaxTerminationGracePeriodSeconds)))
	}
	errs = append(errs, validateAwaitTimeout(role.AwaitTimeout, rolePath.Child("awaitTimeout"))...)
	errs = append(errs, validateLeaderWorkerSetName(serviceName, role, rolePath)...)
	errs = append(errs, validateModelFlexibility(spec, role, rolePath)...)
	errs = append(errs, validateLifecycle(role, rolePath)...)
	errs = append(errs, validateRolloutStrategy(spec, role, rolePath.Child("rolloutStrategy"))...)
	errs = append(errs, validateAutoscaling(spec, role, rolePath)...)
	errs = append(errs, validateParallelismShape(spec, role, rolePath)...)
	if withTemplates {
		errs = append(errs, validateKVCacheOffload(role, rolePath)...)
		errs = append(errs, validateTemplate(spec, role, rolePath.Child("template"), resolved)...)
		if role.DataParallel() && role.Template != nil && len(role.Template.Spec.Containers) > 0 {
			errs = append(errs, validateParallelismServer(role, &role.Template.Spec, rolePath.Child("template", "spec"),
				resolved.ServingPorts[role.Name], rolePath)...)
		}
		errs = append(errs, validateDualPodsServer(role, rolePath.Child("template"), resolved)...)
	}
	return errs
}

// validateLeaderWorkerSetName checks that the longest name the role produces fits the limits of
// LWS and of the StatefulSets and pods LWS derives from it.
func validateLeaderWorkerSetName(serviceName string, role *Role, rolePath *field.Path) field.ErrorList {
	if serviceName == "" || role.Name == "" || role.baseReplicas() < 1 || role.baseReplicas() > MaxReplicas {
		return nil
	}
	longest := LeaderWorkerSetName(serviceName, role.Name, role.ReplicaCount()-1)
	limit := maxLeaderWorkerSetNameSingleNode
	if role.MultiNode() {
		limit = maxLeaderWorkerSetNameMultiNode
	}
	if elastic := role.ElasticReplicaLimit(); role.Autoscaled() && elastic > 0 && role.MaxReplicaCount() <= MaxReplicas &&
		len(ElasticLeaderWorkerSetName(serviceName, role.Name)) > len(longest) {
		longest = ElasticLeaderWorkerSetName(serviceName, role.Name)
		if role.MultiNode() { // its worker StatefulSets are "{lws}-{group}", for every group the autoscaler may add
			limit = maxLeaderWorkerSetNameSingleNode - len(fmt.Sprintf("-%d", elastic-1))
		}
	}
	if len(longest) > limit {
		return field.ErrorList{field.Invalid(rolePath.Child("name"), role.Name, fmt.Sprintf(
			"the LeaderWorkerSet name %q is %d characters; it must be at most %d (LWS derives StatefulSet names and "+
				"63-character revision labels from it): shorten metadata.name or the role name",
			longest, len(longest), limit))}
	}
	return nil
}

// validateTemplate checks a serving role's pod template, and resolves its server's port into
// resolved.ServingPorts.
func validateTemplate(spec *InferenceServiceSpec, role *Role, tplPath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	if role.Template == nil {
		return field.ErrorList{field.Required(tplPath, "the pod template of the model server")}
	}
	for _, k := range slices.Sorted(maps.Keys(role.Template.Labels)) {
		errs = append(errs, validateLabel(k, role.Template.Labels[k], tplPath.Child("metadata", "labels"))...)
	}
	errs = append(errs, apivalidation.ValidateAnnotations(role.Template.Annotations, tplPath.Child("metadata", "annotations"))...)
	podSpec := &role.Template.Spec
	specPath := tplPath.Child("spec")
	if spec.GangScheduled() && podSpec.SchedulerName != "" && podSpec.SchedulerName != VolcanoSchedulerName {
		errs = append(errs, field.Invalid(specPath.Child("schedulerName"), podSpec.SchedulerName,
			"this service is gang scheduled and its pods must use the volcano scheduler; remove the field"))
	}
	if pc := spec.SchedulingStrategy; pc != nil && pc.PriorityClassName != "" && podSpec.PriorityClassName != "" &&
		podSpec.PriorityClassName != pc.PriorityClassName {
		errs = append(errs, field.Invalid(specPath.Child("priorityClassName"), podSpec.PriorityClassName,
			fmt.Sprintf("differs from schedulingStrategy.priorityClassName %q; remove one", pc.PriorityClassName)))
	}
	errs = append(errs, validatePodTemplateSpec(podSpec, specPath)...)
	if len(podSpec.Containers) == 0 {
		return append(errs, field.Required(specPath.Child("containers"), "the model-server container"))
	}
	errs = append(errs, validateGPUQuantities(podSpec, specPath)...)
	serverIndex := ServingContainerIndex(podSpec)
	server := &podSpec.Containers[serverIndex]
	serverPath := specPath.Child("containers").Index(serverIndex)
	var portFlagErr *PortFlagError
	if port, err := ServingPort(server); errors.As(err, &portFlagErr) {
		flagPath := serverPath.Child("command")
		if portFlagErr.InArgs {
			flagPath = serverPath.Child("args")
		}
		errs = append(errs, field.Invalid(flagPath, portFlagErr.Value, "--port "+portRule))
	} else if namedErr := (*NamedPortError)(nil); errors.As(err, &namedErr) {
		errs = append(errs, field.Invalid(serverPath.Child("ports").Index(namedErr.Index).Child("containerPort"), namedErr.Port, namedErr.Error()))
	} else if err != nil {
		errs = append(errs, field.Invalid(serverPath.Child("ports"), declaredPorts(server), err.Error()))
	} else {
		resolved.ServingPorts[role.Name] = port
		if spec.ModelOf(role).HasAdapters() {
			errs = append(errs, validateLoaderPort(role, podSpec, specPath, serverIndex, port)...)
		}
	}
	if role.DataParallel() { // vLLM's own launch, no Ray: validateParallelismServer
		return errs
	}
	if role.MultiNode() {
		errs = append(errs, validateRayLaunch(server, serverPath)...)
		errs = append(errs, validateRayPorts(server, serverPath)...)
	}
	return append(errs, validateParallelism(role, server, serverPath)...)
}

// validateGPUQuantities: a container's nvidia.com/gpu is a whole number of devices, at least 1
// (an extended resource cannot be overcommitted or split: Kubernetes' own rule, which the API
// server applies only at pod creation, after every replica was already planned from the count).
// Its request has a limit, and equals it.
func validateGPUQuantities(podSpec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", podSpec.InitContainers}, {"containers", podSpec.Containers}} {
		for i := range list.containers {
			resources := &list.containers[i].Resources
			resourcesPath := specPath.Child(list.name).Index(i).Child("resources")
			for _, kind := range []string{"limits", "requests"} {
				values := resources.Limits
				if kind == "requests" {
					values = resources.Requests
				}
				q, found := values[GPUResourceName]
				if !found {
					continue
				}
				if n, whole := q.AsInt64(); !whole || n < 1 {
					errs = append(errs, field.Invalid(resourcesPath.Child(kind).Key(string(GPUResourceName)), gpuCountText(q),
						"a GPU count is a whole number of devices, at least 1 (remove it for a pod without GPUs)"))
				}
			}
			limit, hasLimit := resources.Limits[GPUResourceName]
			request, hasRequest := resources.Requests[GPUResourceName]
			if hasRequest && !hasLimit { // at the API server's path (ValidateResourceRequirements), where the limit goes
				errs = append(errs, field.Required(resourcesPath.Child("limits"), fmt.Sprintf(
					"give %s a limit equal to its request (%s): GPUs are not overcommitted, and the API server refuses a request without a limit "+
						"(Limit must be set for non overcommitable resources)", GPUResourceName, gpuCountText(request))))
			}
			if hasLimit && hasRequest && limit.Cmp(request) != 0 {
				errs = append(errs, field.Invalid(resourcesPath.Child("requests").Key(string(GPUResourceName)), gpuCountText(request),
					fmt.Sprintf("must equal the limit (%s): GPUs are not overcommitted", gpuCountText(limit))))
			}
		}
	}
	return errs
}

// validateRayLaunch checks that a multi-node server's command line can be wrapped by the Ray
// launcher (docs/design/0000-the-fusioninfer-design.md).
func validateRayLaunch(server *corev1.Container, serverPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if vllm.IsShellScript(server) {
		errs = append(errs, field.Invalid(serverPath.Child("command"), server.Command,
			"a multi-node role wraps the server command in a Ray launcher; give the server's own command and args "+
				"(or none, for the vllm/vllm-openai image), not a shell script"))
	}
	if backend, found := vllm.FlagDistributedExecutorBackend.Value(vllm.CommandLine(server)); found && backend != "ray" {
		errs = append(errs, field.Invalid(serverPath.Child("args"), backend,
			"a multi-node role runs vLLM on Ray: --distributed-executor-backend must be ray or unset"))
	}
	return errs
}

// validateParallelism checks tensor x pipeline x data parallel size against the GPUs of one
// replica, when the flags and the GPU count are both given.
func validateParallelism(role *Role, server *corev1.Container, serverPath *field.Path) field.ErrorList {
	args := vllm.CommandLine(server)
	argsPath := serverPath.Child("args")
	var errs field.ErrorList
	product := int64(1)
	var given []string
	for _, flag := range []vllm.Flag{vllm.FlagTensorParallelSize, vllm.FlagPipelineParallelSize, vllm.FlagDataParallelSize} {
		n, found, err := vllm.ParallelSize(args, flag)
		if err != nil {
			errs = append(errs, field.Invalid(argsPath, err.(*vllm.ParallelSizeError).Value, err.Error()))
			continue
		}
		if found {
			product *= n
			given = append(given, fmt.Sprintf("%s %d", flag.Name, n))
		}
	}
	gpus := ContainerGPUs(server) // the devices vLLM sees
	// An invalid nodeCount is reported on its own field; comparing against it would only echo it.
	if len(errs) > 0 || role.NodeCount() < 1 || role.NodeCount() > MaxNodeCount {
		return errs
	}
	if gpus == 0 && (role.MultiNode() || product > 1) {
		// Without a GPU request the scheduler places the pods anywhere and vLLM finds no GPU.
		need := "a multi-node replica spreads one model over the GPUs of its pods"
		if len(given) > 0 {
			need = fmt.Sprintf("%s needs %d GPUs a replica", strings.Join(given, " x "), product)
		}
		return append(errs, field.Required(serverPath.Child("resources", "limits").Key(string(GPUResourceName)),
			need+": give each pod's GPUs as a "+string(GPUResourceName)+" limit"))
	}
	if len(given) == 0 && role.MultiNode() && !vllm.FlagConfig.In(args) {
		// vLLM's default is one GPU: the Ray workers would join and sit idle.
		return append(errs, field.Required(argsPath, fmt.Sprintf(
			"a multi-node replica spreads one model over multinode.nodeCount (%d) x %s per pod (%d) = %d GPUs, but without %s or %s vLLM uses one: "+
				"give tensor x pipeline parallel size = %d (or a %s file that does)",
			role.NodeCount(), GPUResourceName, gpus, int64(role.NodeCount())*gpus, vllm.FlagTensorParallelSize.Name, vllm.FlagPipelineParallelSize.Name,
			int64(role.NodeCount())*gpus, vllm.FlagConfig.Name)))
	}
	if len(given) == 0 || gpus == 0 {
		return errs
	}
	if want := int64(role.NodeCount()) * gpus; product != want {
		errs = append(errs, field.Invalid(argsPath, strings.Join(given, " x "), fmt.Sprintf(
			"tensor x pipeline x data parallel size is %d, but each replica has multinode.nodeCount (%d) x %s per pod (%d) = %d GPUs",
			product, role.NodeCount(), GPUResourceName, gpus, want)))
	}
	return errs
}

func validateScheduling(spec *InferenceServiceSpec, fldPath *field.Path) field.ErrorList {
	strategy := spec.SchedulingStrategy
	if strategy == nil {
		return validateRoleTopologies(spec, fldPath)
	}
	var errs field.ErrorList
	path := fldPath.Child("schedulingStrategy")
	gang := spec.GangScheduled()
	if name := strategy.SchedulerName; name != "" && name != VolcanoSchedulerName && gang {
		errs = append(errs, field.Invalid(path.Child("schedulerName"), name,
			"multi-node and prefill/decode services are gang scheduled and need the volcano scheduler"))
	}
	needsGang := func(fld, what string) {
		if !gang {
			errs = append(errs, field.Forbidden(path.Child(fld), what+" belongs to the service's Volcano PodGroup, which exists only "+
				"when the service is gang scheduled (multi-node or prefill/decode roles, or schedulerName: volcano)"))
		}
	}
	if strategy.Queue != "" {
		errs = append(errs, validateWith(path.Child("queue"), strategy.Queue, validation.IsDNS1123Subdomain)...)
		needsGang("queue", "a queue")
	}
	if strategy.PriorityClassName != "" {
		errs = append(errs, validateWith(path.Child("priorityClassName"), strategy.PriorityClassName, validation.IsDNS1123Subdomain)...)
	}
	switch strategy.MinResources {
	case "", MinResourcesNone:
	case MinResourcesAuto:
		needsGang("minResources", "minResources")
	default:
		errs = append(errs, field.NotSupported(path.Child("minResources"), strategy.MinResources, strategy.MinResources.AllowedValues()))
	}
	if nt := strategy.NetworkTopology; nt != nil {
		ntPath := path.Child("networkTopology")
		needsGang("networkTopology", "network topology")
		if spec.GangMode() == GangModeTaskMember {
			errs = append(errs, field.Forbidden(ntPath, "gangPolicy.mode taskMember (for Volcano < 1.14) cannot express network "+
				"topology: a per-role policy needs the PodGroup's subGroupPolicy, which only mode subGroup (Volcano >= 1.14) emits"))
		}
		errs = append(errs, validateTopologyPolicy(nt.GroupPolicy, ntPath.Child("groupPolicy"))...)
		errs = append(errs, validateTopologyPolicy(nt.RolePolicy, ntPath.Child("rolePolicy"))...)
	}
	return append(errs, validateRoleTopologies(spec, fldPath)...)
}

// validateRoleTopologies checks each role's own network topology policy.
func validateRoleTopologies(spec *InferenceServiceSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if role.NetworkTopology == nil {
			continue
		}
		p := fldPath.Child("roles").Index(i).Child("networkTopology")
		switch {
		case !role.ComponentType.Serving():
			errs = append(errs, field.Forbidden(p, "only serving roles have replicas to keep together"))
		case !spec.GangScheduled():
			errs = append(errs, field.Forbidden(p, "network topology belongs to the service's Volcano PodGroup, which exists only when the "+
				"service is gang scheduled (multi-node or prefill/decode roles, or schedulerName: volcano)"))
		case spec.GangMode() == GangModeTaskMember:
			errs = append(errs, field.Forbidden(p, "a per-role policy needs the PodGroup's subGroupPolicy, which gangPolicy.mode "+
				"taskMember (for Volcano < 1.14) does not emit; use mode subGroup"))
		}
		errs = append(errs, validateTopologyPolicy(role.NetworkTopology, p)...)
	}
	return errs
}

func validateTopologyPolicy(policy *NetworkTopologyPolicy, p *field.Path) field.ErrorList {
	if policy == nil {
		return nil
	}
	var errs field.ErrorList
	switch policy.Mode {
	case "", NetworkTopologyHard, NetworkTopologySoft:
	default:
		errs = append(errs, field.NotSupported(p.Child("mode"), policy.Mode, policy.Mode.AllowedValues()))
	}
	switch {
	case policy.HighestTierAllowed != nil && policy.HighestTierName != "":
		errs = append(errs, field.Invalid(p, "highestTierAllowed and highestTierName", "give one of them, not both"))
	case policy.HighestTierAllowed == nil && policy.HighestTierName == "":
		errs = append(errs, field.Required(p.Child("highestTierAllowed"), "the highest tier the pods may span (or highestTierName)"))
	case policy.HighestTierAllowed != nil && *policy.HighestTierAllowed < 1:
		errs = append(errs, field.Invalid(p.Child("highestTierAllowed"), *policy.HighestTierAllowed, "must be >= 1 (tier 1 is the closest)"))
	}
	return errs
}

func validateGangPolicy(spec *InferenceServiceSpec, fldPath *field.Path) field.ErrorList {
	if spec.GangPolicy == nil {
		return nil
	}
	var errs field.ErrorList
	switch spec.GangPolicy.Mode {
	case "", GangModeSubGroup, GangModeTaskMember:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("mode"), spec.GangPolicy.Mode, spec.GangPolicy.Mode.AllowedValues()))
	}
	roles := map[string]*Role{}
	for i := range spec.Roles {
		if spec.Roles[i].ComponentType.Serving() {
			roles[spec.Roles[i].Name] = &spec.Roles[i]
		}
	}
	names := make([]string, 0, len(spec.GangPolicy.MinRoleReplicas))
	for name := range spec.GangPolicy.MinRoleReplicas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := spec.GangPolicy.MinRoleReplicas[name]
		p := fldPath.Child("minRoleReplicas").Key(name)
		role, ok := roles[name]
		switch {
		case !ok:
			errs = append(errs, field.NotFound(p, name))
		case n < 1:
			errs = append(errs, field.Invalid(p, n, "must be >= 1"))
		case n > int(role.ReplicaCount()):
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("must be <= the role's replicas (%d)", role.ReplicaCount())))
		}
	}
	if spec.GangPolicy.Mode == GangModeTaskMember && len(spec.GangPolicy.MinRoleReplicas) > 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("minRoleReplicas"),
			"taskMember mode gangs the whole service; minRoleReplicas needs mode subGroup (Volcano >= 1.14)"))
	}
	return errs
}

// ValidationError carries every violation of one service.
type ValidationError struct {
	Service string
	Errors  field.ErrorList
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Errors))
	for i, err := range e.Errors {
		lines[i] = "  " + err.Error()
	}
	return fmt.Sprintf("invalid InferenceService %q:\n%s", e.Service, strings.Join(lines, "\n"))
}

func validateNodePools(spec *InferenceServiceSpec, serviceName string, withTemplates bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	poolsPath := fldPath.Child("nodePools")
	names := sets.New[string]()
	for i := range spec.NodePools {
		pool := &spec.NodePools[i]
		p := poolsPath.Index(i)
		if pool.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a DNS label unique among the pools"))
		} else {
			errs = append(errs, validateWith(p.Child("name"), pool.Name, validation.IsDNS1123Label)...)
			if names.Has(pool.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), pool.Name))
			}
			names.Insert(pool.Name)
			// Karpenter labels every node with karpenter.sh/nodepool: a 63-character label value.
			if full := KarpenterNodePoolName(serviceName, pool.Name); pool.PoolKind() == NodePoolKarpenter && len(full) > validation.LabelValueMaxLength {
				errs = append(errs, field.Invalid(p.Child("name"), pool.Name, fmt.Sprintf(
					"the NodePool name %q is %d characters; Karpenter labels nodes with it, at most %d", full, len(full), validation.LabelValueMaxLength)))
			}
		}
		if pool.GPUsPerNode < 1 {
			errs = append(errs, field.Invalid(p.Child("gpusPerNode"), pool.GPUsPerNode, "must be >= 1: a pool of GPU nodes"))
		}
		for j, ct := range pool.CapacityTypes {
			if !slices.Contains(ct.AllowedValues(), string(ct)) {
				errs = append(errs, field.NotSupported(p.Child("capacityTypes").Index(j), ct, ct.AllowedValues()))
			}
		}
		for j, taint := range pool.Taints {
			tp := p.Child("taints").Index(j)
			errs = append(errs, validateWith(tp.Child("key"), taint.Key, validation.IsQualifiedName)...)
			if effects := allowedValues[corev1.TaintEffect](); !slices.Contains(effects, string(taint.Effect)) {
				errs = append(errs, field.NotSupported(tp.Child("effect"), taint.Effect, effects))
			}
		}
		for _, k := range slices.Sorted(maps.Keys(pool.Labels)) {
			v := pool.Labels[k]
			errs = append(errs, validateWith(p.Child("labels"), k, validation.IsQualifiedName)...)
			errs = append(errs, validateWith(p.Child("labels").Key(k), v, validation.IsValidLabelValue)...)
		}
		switch pool.PoolKind() {
		case NodePoolKarpenter:
			if ref := pool.NodeClassRef; ref == nil || ref.Group == "" || ref.Kind == "" || ref.Name == "" {
				errs = append(errs, field.Required(p.Child("nodeClassRef"),
					"the cloud node class the nodes are made from: group, kind and name (e.g. karpenter.k8s.aws, EC2NodeClass, default)"))
			}
			errs = append(errs, validateKarpenterPool(pool, p)...)
		case NodePoolExisting:
			for _, name := range fieldsNotForPool(pool) {
				errs = append(errs, field.Forbidden(p.Child(name), "only a karpenter pool makes nodes; an existing pool only selects them"))
			}
			if len(pool.Labels) == 0 && len(pool.InstanceTypes) == 0 && len(pool.Accelerators) == 0 {
				errs = append(errs, field.Required(p.Child("labels"), "how to select the existing nodes: labels, instanceTypes or accelerators"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), pool.Kind, pool.Kind.AllowedValues()))
		}
	}
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if role.NodePool == "" {
			continue
		}
		rp := fldPath.Child("roles").Index(i).Child("nodePool")
		pool := spec.NodePoolNamed(role.NodePool)
		switch {
		case !role.ComponentType.Serving():
			errs = append(errs, field.Forbidden(rp, "only serving roles run on GPU node pools"))
		case pool == nil:
			errs = append(errs, field.NotFound(rp, role.NodePool))
		case withTemplates && role.Template != nil && len(role.Template.Spec.Containers) > 0 && pool.GPUsPerNode >= 1:
			gpus := PodGPUs(&role.Template.Spec)
			gpuPath := podGPUsPath(&role.Template.Spec, fldPath.Child("roles").Index(i).Child("template", "spec"))
			switch {
			case gpus > int64(pool.GPUsPerNode):
				errs = append(errs, field.Invalid(gpuPath, gpus, fmt.Sprintf("a pod cannot have more GPUs than a node of pool %q has (%d)", pool.Name, pool.GPUsPerNode)))
			case role.MultiNode() && gpus != int64(pool.GPUsPerNode):
				errs = append(errs, field.Invalid(gpuPath, gpus, fmt.Sprintf(
					"a multi-node replica spreads over nodes: each of its pods takes a whole node of pool %q (%d GPUs), "+
						"or two pods of one replica could share a node", pool.Name, pool.GPUsPerNode)))
			}
		}
	}
	return errs
}

// validateLifecycle checks the LWS restart and startup policies of a serving role.
func validateLifecycle(role *Role, rolePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policies := allowedValues[lwsv1.RestartPolicyType](); role.RestartPolicy != "" && !slices.Contains(policies, string(role.RestartPolicy)) {
		errs = append(errs, field.NotSupported(rolePath.Child("restartPolicy"), role.RestartPolicy, policies))
	}
	switch role.StartupPolicy {
	case "", lwsv1.LeaderCreatedStartupPolicy:
	case lwsv1.LeaderReadyStartupPolicy:
		switch {
		case !role.MultiNode():
			errs = append(errs, field.Forbidden(rolePath.Child("startupPolicy"), "a single-node replica has no workers to start after its leader"))
		default:
			// The leader's server is ready only once the workers have joined its Ray cluster (or,
			// with parallelism, every rank its data parallel group: its ranks are probed), and
			// LeaderReady creates the workers only once the leader is ready. Every server has a
			// readiness probe: the template's, or the render's GET /health.
			why := "the leader's server becomes ready only after the workers join its Ray cluster"
			wait := "the workers wait for the Ray head themselves"
			if role.DataParallel() {
				why = "the leader's ranks become ready only once every rank of the replica has joined them"
				wait = "the workers' ranks meet the leader's on the RPC port themselves"
			}
			errs = append(errs, field.Invalid(rolePath.Child("startupPolicy"), role.StartupPolicy,
				"would never start: "+why+", and LeaderReady creates the workers only after the leader is ready; keep LeaderCreated ("+wait+")"))
		}
	default:
		errs = append(errs, field.NotSupported(rolePath.Child("startupPolicy"), role.StartupPolicy, allowedValues[lwsv1.StartupPolicyType]()))
	}
	return errs
}

// validateAwaitTimeout checks a wait's length: a Go duration of whole seconds (what
// pulumi-kubernetes' pulumi.com/timeoutSeconds takes), from a second to MaxAwaitTimeout.
func validateAwaitTimeout(v string, path *field.Path) field.ErrorList {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(path, v, `must be a duration such as "90m" or "2h"`)}
	case d < time.Second || d > MaxAwaitTimeout || d%time.Second != 0:
		return field.ErrorList{field.Invalid(path, v, fmt.Sprintf("must be whole seconds from 1s to %s", MaxAwaitTimeout))}
	}
	return nil
}
