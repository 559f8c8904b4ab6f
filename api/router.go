// SPDX-License-Identifier: Apache-2.0

package api

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"encoding/json"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// Routing on prefill/decode services: llm-d's routing sidecar takes the serving port of every
// decode leader and its vLLM server moves to this port.
const (
	DecodeVLLMPort     = 8200
	RoutingSidecarName = "llm-d-routing-sidecar"
)

// MaxEndpointPickerReplicas bounds endpointPicker.replicas: one serves, the rest stand by.
const MaxEndpointPickerReplicas = 5

// Which roles a field of Role applies to is declared on the field, roles:"router", "serving" or
// "any": validation refuses a field set on a role it does not apply to (fieldsNotFor), so a new
// field is accepted only where it is used.

// roleKinds are the role kinds a roles tag names.
var roleKinds = map[string]func(ComponentType) bool{
	"any":     func(ComponentType) bool { return true },
	"router":  func(t ComponentType) bool { return t == ComponentTypeRouter },
	"serving": func(t ComponentType) bool { return t.Serving() },
}

// fieldsNotFor are the JSON names of the fields set on role that do not apply to its kind.
func fieldsNotFor(role *Role) []string {
	var misplaced []string
	v := reflect.ValueOf(role).Elem()
	for i := range v.NumField() {
		f := v.Type().Field(i)
		appliesTo, known := roleKinds[f.Tag.Get("roles")]
		if (!known || !appliesTo(role.ComponentType)) && !v.Field(i).IsZero() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			misplaced = append(misplaced, name)
		}
	}
	return misplaced
}

// Routing is a router's fields as validation parsed them.
type Routing struct {
	// Selection is the Endpoint Picker's image and configuration the strategy (or the raw
	// configuration) selects.
	Selection *eppconfig.Selection
	// HTTPRoute is the router's httproute as the Gateway API type.
	HTTPRoute *gatewayv1.HTTPRouteSpec
	// PoolPort is the serving port of every serving role, which the InferencePool targets.
	PoolPort int32
	// PoolRanks are the ranks each pod of every serving role runs (1 without parallelism): the
	// pool targets PoolPort and the PoolRanks-1 ports after it.
	PoolRanks int32
	// KVEvents is what the servers publish and the picker indexes (strategy precise-prefix-cache);
	// nil otherwise.
	KVEvents *eppconfig.KVEvents
}

// validateRouterRole checks a router role, and resolves its Endpoint Picker selection and route
// into resolved.Routing (the first router's: a second is refused elsewhere).
func validateRouterRole(spec *InferenceServiceSpec, role *Role, serviceName string, rolePath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	routing := &Routing{}
	if resolved.Routing == nil {
		resolved.Routing = routing
	}
	for _, name := range fieldsNotFor(role) {
		switch name {
		case "model": // validateModel says why, at the same path
		case "autoscaling":
			reason := "a router's Endpoint Picker replicas elect one leader and only it picks endpoints: more of them add no capacity; autoscale the serving roles"
			switch {
			case role.Standalone():
				reason = "a standalone router's Endpoint Picker replicas all serve, each beside its proxy, but nothing autoscales them: give endpointPicker.replicas; autoscale the serving roles"
			case !role.EndpointPickerRelease().ElectsLeader():
				reason = fmt.Sprintf("the Endpoint Picker of %s has no autoscaler: give it endpointPicker.replicas (its replicas all serve); autoscale the serving roles",
					role.EndpointPickerRelease())
			}
			errs = append(errs, field.Forbidden(rolePath.Child(name), reason))
		case "awaitTimeout":
			errs = append(errs, field.Forbidden(rolePath.Child(name), "a router runs the Endpoint Picker, not model servers: awaitTimeout is how long "+
				"a serving role's servers may take to load their model; the Endpoint Picker's Deployment is awaited as the kubernetes provider awaits a Deployment"))
		default:
			errs = append(errs, field.Forbidden(rolePath.Child(name), "a router runs the Endpoint Picker, not model servers: "+
				"only serving roles have "+name+" (the Endpoint Picker's own settings are under endpointPicker)"))
		}
	}
	if serviceName != "" {
		longest := EndpointPickerName(serviceName) // the Service, a DNS-1035 label
		if role.ShadowService {
			longest = ShadowServiceName(serviceName)
		}
		if role.Standalone() && len(RouterServiceName(serviceName)) > len(longest) {
			longest = RouterServiceName(serviceName)
		}
		if role.Strategy == eppconfig.StrategyPrecisePrefixCache && len(TokenizerName(serviceName)) > len(longest) {
			longest = TokenizerName(serviceName)
		}
		if len(longest) > validation.DNS1035LabelMaxLength {
			errs = append(errs, field.Invalid(rolePath, role.Name, fmt.Sprintf(
				"the router's Service %q is %d characters; it must be at most %d: shorten metadata.name",
				longest, len(longest), validation.DNS1035LabelMaxLength)))
		}
	}
	release := role.EndpointPickerRelease()
	switch role.PoolAPIVersion {
	case "", PoolV1, PoolV1Alpha2:
		if release.Known() && !release.ReadsPoolGroup(role.PoolGroup()) {
			// The EPP watches its pool by --pool-group; one that caches only v1 pools never finds it.
			errs = append(errs, field.Invalid(rolePath.Child("poolApiVersion"), role.PoolAPIVersion, fmt.Sprintf(
				"the Endpoint Picker of endpointPicker.release %s reads only %s InferencePools: use %s (the default), or endpointPicker.release %s, whose EPP reads %s pools",
				release, strings.Join(release.PoolGroups(), ", "), PoolV1, EPPReleaseGIE, PoolV1Alpha2)))
		}
	default:
		errs = append(errs, field.NotSupported(rolePath.Child("poolApiVersion"), role.PoolAPIVersion, role.PoolAPIVersion.AllowedValues()))
	}
	switch role.FailureMode {
	case "", FailClose, FailOpen:
	default:
		errs = append(errs, field.NotSupported(rolePath.Child("failureMode"), role.FailureMode, role.FailureMode.AllowedValues()))
	}
	errs = append(errs, validateEndpointPicker(role.EndpointPicker, rolePath.Child("endpointPicker"))...)
	if groups := role.EndpointPickerCRDGroups(); release.Known() && slices.Contains(groups.AllowedValues(), string(groups)) {
		// an EPP that does not ask the cluster watches its group's objectives anyway, and its
		// informer never syncs where the API server does not serve them
		if group, watched := release.WatchedGroup(eppconfig.KindObjective, groups.Groups()); watched && !slices.Contains(groups.Groups(), group) {
			errs = append(errs, field.Invalid(rolePath.Child("endpointPicker", "crdGroups"), groups, fmt.Sprintf(
				"the Endpoint Picker of %s watches InferenceObjectives of %s whatever the cluster has "+
					"(pkg/epp/server/controller_manager.go), and does not start where that CRD is not installed: "+
					"install the Inference Extension's CRDs and set %s or %s, or use endpointPicker.release %s",
				release, group, CRDGroupsInferenceExtension, CRDGroupsBoth, EPPReleaseLLMDRouter)))
		}
	}
	releasePath := rolePath.Child("endpointPicker", "release")
	if !release.Known() { // said here, not by Select, which stops at the first wrong field
		errs = append(errs, field.NotSupported(releasePath, release, allowedValues[EndpointPickerRelease]()))
	}
	sel, selErr := eppconfig.Select(role.Strategy, role.EndpointPickerConfig, spec.Disaggregated(),
		release, role.EndpointPickerImage())
	if wake := spec.WakeTimeout(); selErr == nil && wake > 0 && release.HoldsRequestsAtZero() {
		// a role at zero: the picker holds what arrives until it wakes (validateAutoscaling
		// refuses the releases that cannot)
		if err := sel.HoldRequests(wake); err != nil {
			selErr = &eppconfig.SelectError{Field: eppconfig.FieldEndpointPickerConfig, Err: err}
		}
	}
	if selErr == nil {
		selErr = sel.Check()
	}
	routing.Selection = sel
	if selErr != nil {
		path := rolePath.Child(selErr.Field)
		switch selErr.Field {
		case eppconfig.FieldRelease:
			if release.Known() {
				errs = append(errs, field.Invalid(releasePath, release, selErr.Err.Error()))
			}
		case eppconfig.FieldImage:
			errs = append(errs, field.Invalid(rolePath.Child("endpointPicker", "image"), role.EndpointPickerImage(), selErr.Err.Error()))
		case eppconfig.FieldStrategy:
			if errors.Is(selErr.Err, eppconfig.ErrUnknownStrategy) {
				errs = append(errs, field.NotSupported(path, role.Strategy, eppconfig.Strategies()))
			} else {
				errs = append(errs, field.Invalid(path, role.Strategy, selErr.Err.Error()))
			}
		default:
			errs = append(errs, field.Invalid(path, "(the configuration)", selErr.Err.Error()))
		}
	}
	switch role.RouterMode {
	case "", RouterStandalone, RouterGateway:
	default:
		errs = append(errs, field.NotSupported(rolePath.Child("routerMode"), role.RouterMode, role.RouterMode.AllowedValues()))
		return errs
	}
	if role.Standalone() {
		if role.HTTPRoute != nil {
			errs = append(errs, field.Forbidden(rolePath.Child("httproute"), fmt.Sprintf(
				"%s is %s: requests enter through the router's own proxy and Service, not a Gateway; "+
					"remove httproute, or set routerMode: %s", rolePath.Child("routerMode"), RouterStandalone, RouterGateway)))
		}
		if role.FailureMode == FailOpen {
			// The proxy's one upstream is the address the picker names (an ORIGINAL_DST cluster on
			// that header, which the proxy removes from clients' requests): with the picker not
			// answering there is no destination to fail open to, only a client's forged one.
			errs = append(errs, field.Invalid(rolePath.Child("failureMode"), role.FailureMode, fmt.Sprintf(
				"a standalone router's proxy sends a request only where its Endpoint Picker says: with the picker not answering "+
					"there is nowhere to fail open to; use %s (the default), or routerMode %s, whose Gateway sends a request to any endpoint of the pool when the picker does not answer",
				FailClose, RouterGateway)))
		}
		return errs
	}
	if role.EndpointPicker != nil && role.EndpointPicker.Proxy != nil {
		errs = append(errs, field.Forbidden(rolePath.Child("endpointPicker", "proxy"), fmt.Sprintf(
			"only a standalone router runs a proxy beside its Endpoint Picker; %s is %s, whose requests enter through the Gateway: "+
				"remove endpointPicker.proxy, or set routerMode: %s", rolePath.Child("routerMode"), RouterGateway, RouterStandalone)))
	}
	route, routeErrs := validateHTTPRoute(role.HTTPRoute, rolePath.Child("httproute"))
	routing.HTTPRoute = route
	return append(errs, routeErrs...)
}

// ModelRewriteGroup is the API group of the router's InferenceModelRewrites: the one its
// release's Endpoint Picker watches on a cluster with the CRD groups endpointPicker.crdGroups
// names; false when it watches none.
func (r *Role) ModelRewriteGroup() (string, bool) {
	return r.EndpointPickerRelease().WatchedGroup(eppconfig.KindModelRewrite, r.EndpointPickerCRDGroups().Groups())
}

// Groups are the API groups it names, llm-d.ai first.
func (g InferenceCRDGroups) Groups() []string {
	if g == CRDGroupsBoth {
		return []string{eppconfig.GroupLLMD, eppconfig.GroupInferenceX}
	}
	return []string{string(g)}
}

func validateEndpointPicker(epp *EndpointPicker, eppPath *field.Path) field.ErrorList {
	if epp == nil {
		return nil
	}
	var errs field.ErrorList
	switch epp.CRDGroups {
	case "", CRDGroupsInferenceExtension, CRDGroupsLLMD, CRDGroupsBoth:
	default:
		errs = append(errs, field.NotSupported(eppPath.Child("crdGroups"), epp.CRDGroups, epp.CRDGroups.AllowedValues()))
	}
	if epp.Replicas != nil && (*epp.Replicas < 1 || *epp.Replicas > MaxEndpointPickerReplicas) {
		errs = append(errs, field.Invalid(eppPath.Child("replicas"), *epp.Replicas,
			fmt.Sprintf("must be >= 1 and <= %d (behind a Gateway one Endpoint Picker serves and the others stand by; a standalone router's all serve)", MaxEndpointPickerReplicas)))
	}
	// The API server's rules for a container's resources, as for the roles' templates.
	if epp.Resources != nil {
		errs = append(errs, validateResources(epp.Resources, eppPath.Child("resources"))...)
	}
	if epp.Proxy != nil && epp.Proxy.Resources != nil {
		errs = append(errs, validateResources(epp.Proxy.Resources, eppPath.Child("proxy", "resources"))...)
	}
	return errs
}

// DecodeHTTPRoute decodes a router's httproute strictly into the Gateway API type: an unknown
// field is an error, never dropped.
func DecodeHTTPRoute(route map[string]any) (*gatewayv1.HTTPRouteSpec, error) {
	var spec gatewayv1.HTTPRouteSpec
	if route == nil {
		return &spec, nil
	}
	data, err := json.Marshal(route)
	if err != nil {
		return nil, err
	}
	if err := yaml.UnmarshalStrict(data, &spec); err != nil {
		return nil, err
	}
	return &spec, nil
}

// validateHTTPRoute checks a router's route and returns it as the Gateway API type.
func validateHTTPRoute(route map[string]any, routePath *field.Path) (*gatewayv1.HTTPRouteSpec, field.ErrorList) {
	spec, err := DecodeHTTPRoute(route)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(routePath, "(the route)", "not a Gateway API HTTPRouteSpec: "+err.Error())}
	}
	var errs field.ErrorList
	for i, ref := range spec.ParentRefs {
		// The Gateway API CRD's schema: a parentRef's name is required, 1 to 253 characters
		// (apis/v1/shared_types.go, ParentReference.Name, ObjectName).
		if len(ref.Name) == 0 || len(ref.Name) > 253 {
			errs = append(errs, field.Required(routePath.Child("parentRefs").Index(i).Child("name"),
				"the name of the Gateway the route attaches to, 1 to 253 characters"))
		}
	}
	if len(spec.ParentRefs) == 0 {
		errs = append(errs, field.Required(routePath.Child("parentRefs"),
			"the Gateway the route attaches to, e.g. httproute: {parentRefs: [{name: inference-gateway}]}, as routerMode "+
				string(RouterGateway)+" needs (routerMode "+string(RouterStandalone)+" needs no Gateway)"))
	}
	for i, rule := range spec.Rules {
		if len(rule.BackendRefs) > 0 {
			errs = append(errs, field.Forbidden(routePath.Child("rules").Index(i).Child("backendRefs"),
				"set by the router: every rule sends its requests to the service's InferencePool"))
		}
	}
	return spec, errs
}

// validateRoutedServers checks the serving containers a router's pool targets: one serving port
// for every role, and, on a prefill/decode service, decode servers whose port can move.
// The port is resolved into resolved.Routing.PoolPort.
func validateRoutedServers(spec *InferenceServiceSpec, rolesPath *field.Path, resolved *Resolved) field.ErrorList {
	var errs field.ErrorList
	poolPort, poolPortRole := int32(0), -1
	poolRanks, poolRanksRole := int32(0), -1
	for _, s := range servingServers(spec, rolesPath) {
		i, role, server, serverPath := s.index, s.role, s.server, s.path
		port, resolvedPort := resolved.ServingPorts[role.Name]
		ranks := role.LocalRanks()
		if ranks > 1 && spec.Router().PoolAPIVersion == PoolV1Alpha2 {
			errs = append(errs, field.Invalid(rolesPath.Index(i).Child("parallelism", "dataLocal"), ranks,
				"each rank of a pod is a port of the InferencePool, and a v1alpha2 pool targets one port: set the router's poolApiVersion to v1"))
		}
		switch {
		case poolRanksRole < 0:
			poolRanks, poolRanksRole = ranks, i
			if resolved.Routing != nil {
				resolved.Routing.PoolRanks = ranks
			}
		case ranks != poolRanks:
			errs = append(errs, field.Invalid(rolesPath.Index(i).Child("parallelism", "dataLocal"), ranks, fmt.Sprintf(
				"the InferencePool targets the same ports on every serving role, one a rank: %d ranks a pod, as spec.roles[%d] runs; run as many",
				poolRanks, poolRanksRole)))
		}
		switch {
		case !resolvedPort: // its template's check says why
			continue
		case poolPortRole < 0:
			poolPort, poolPortRole = port, i
			if resolved.Routing != nil {
				resolved.Routing.PoolPort = port
			}
		case port != poolPort:
			errs = append(errs, field.Invalid(serverPath.Child("ports"), port, fmt.Sprintf(
				"the InferencePool targets one port on every serving role: %d, as spec.roles[%d] serves; serve on it too", poolPort, poolPortRole)))
		}
		if role.ComponentType == ComponentTypeDecoder {
			errs = append(errs, validateRoutedDecoder(role, spec.Router().EndpointPickerRelease(), server, port, rolesPath.Index(i))...)
		}
	}
	return errs
}

// servingServer is a serving role with a template: its index, its model server and the server's
// path.
type servingServer struct {
	index  int
	role   *Role
	server *corev1.Container
	path   *field.Path
}

// servingServers are the serving roles that have a template, with their model servers.
func servingServers(spec *InferenceServiceSpec, rolesPath *field.Path) []servingServer {
	var out []servingServer
	for i := range spec.Roles {
		role := &spec.Roles[i]
		if !role.ComponentType.Serving() || role.Template == nil || len(role.Template.Spec.Containers) == 0 {
			continue
		}
		serverIndex := ServingContainerIndex(&role.Template.Spec)
		out = append(out, servingServer{index: i, role: role, server: &role.Template.Spec.Containers[serverIndex],
			path: rolesPath.Index(i).Child("template", "spec", "containers").Index(serverIndex)})
	}
	return out
}

// validateRoutedDecoder checks that llm-d's routing sidecar can take a decode leader's serving
// port while its vLLM server moves to DecodeVLLMPort.
func validateRoutedDecoder(role *Role, release EndpointPickerRelease, server *corev1.Container, port int32, rolePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	tplPath := rolePath.Child("template")
	serverPath := tplPath.Child("spec", "containers").Index(ServingContainerIndex(&role.Template.Spec))
	if vllm.IsShellScript(server) {
		errs = append(errs, field.Invalid(serverPath.Child("command"), server.Command, fmt.Sprintf(
			"behind a router, a decode server moves to port %d for llm-d's routing sidecar: give the server's own command and args, not a shell script",
			DecodeVLLMPort)))
	}
	if ranks := role.LocalRanks(); ranks > 1 {
		// The sidecar serves the ranks' ports and forwards port + i to the server's DecodeVLLMPort
		// + i (llm-d-router v0.10.0 pkg/sidecar/proxy/data_parallel.go startDataParallel); the
		// older routing sidecar has no --data-parallel-size.
		if release != EPPReleaseLLMDRouter {
			errs = append(errs, field.Invalid(rolePath.Child("parallelism", "dataLocal"), ranks, fmt.Sprintf(
				"behind a router, a decode pod's ranks are fronted by llm-d-router's disaggregation sidecar, one port a rank, which only %s has: "+
					"set the router's endpointPicker.release to it, or run one rank a pod", EPPReleaseLLMDRouter)))
		}
		if rangesOverlap(port, ranks, DecodeVLLMPort, ranks) {
			errs = append(errs, field.Invalid(serverPath.Child("ports"), port, fmt.Sprintf(
				"behind a router, the routing sidecar serves the ranks' ports %s and the decode ranks move to %s: serve on a port they do not share (vLLM's default is %d)",
				portRange(port, ranks), portRange(DecodeVLLMPort, ranks), DefaultServingPort)))
		}
		if rpc := role.Parallelism.RPCPort(); rpc >= DecodeVLLMPort && rpc < DecodeVLLMPort+ranks {
			errs = append(errs, field.Invalid(rolePath.Child("parallelism", "dataRPCPort"), rpc, fmt.Sprintf(
				"behind a router, the decode ranks serve on %s: choose another port", portRange(DecodeVLLMPort, ranks))))
		}
	} else if port == DecodeVLLMPort {
		errs = append(errs, field.Invalid(serverPath.Child("ports"), port, fmt.Sprintf(
			"behind a router, llm-d's routing sidecar serves the pool's port and the decode server moves to %d: serve on another port (vLLM's default is %d)",
			DecodeVLLMPort, DefaultServingPort)))
	}
	if connector := RoutingConnector(server); connector == ConnectorLMCache && release == EPPReleaseLLMDRouter {
		errs = append(errs, field.Invalid(serverPath.Child("args"), "--kv-transfer-config", fmt.Sprintf(
			"llm-d-router v0.10.0's disaggregation sidecar has no LMCache connector (it knows nixlv2, shared-storage, sglang, "+
				"mooncake, offloading): use vLLM's NixlConnector, or set the router's endpointPicker.release to %s", EPPReleaseGIE)))
	}
	podSpec := &role.Template.Spec
	if release == EPPReleaseLLMDRouter && podSpec.AutomountServiceAccountToken != nil && !*podSpec.AutomountServiceAccountToken {
		errs = append(errs, field.Invalid(tplPath.Child("spec", "automountServiceAccountToken"), false,
			"behind a router, the decode leaders' disaggregation sidecar reads the InferencePool and its pods with the pod's service account "+
				"(its SSRF protection sends prefills only to the pool's pods): remove automountServiceAccountToken: false"))
	}
	for kind, containers := range [][]corev1.Container{podSpec.InitContainers, podSpec.Containers} {
		for j := range containers {
			if containers[j].Name == RoutingSidecarName {
				errs = append(errs, field.Invalid(tplPath.Child("spec", []string{"initContainers", "containers"}[kind]).Index(j).Child("name"),
					RoutingSidecarName, "the router adds a container of this name to decode leaders; rename this one"))
			}
		}
	}
	return errs
}

// The disaggregation sidecar's names of the KV connectors a decode server may use.
const (
	ConnectorNIXL    = "nixlv2"
	ConnectorLMCache = "lmcache"
)

// RoutingConnector is the sidecar's name for the KV connector a decode server uses, read from its
// --kv-transfer-config: lmcache for LMCache, else nixlv2 (vLLM's NixlConnector).
func RoutingConnector(server *corev1.Container) string {
	if config, _ := FlagKVTransferConfig.Value(vllm.CommandLine(server)); strings.Contains(config, "LMCache") {
		return ConnectorLMCache
	}
	return ConnectorNIXL
}
