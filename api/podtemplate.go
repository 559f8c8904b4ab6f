// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The API server's rules for a role's pod template, checked at render so that a template it would
// refuse is refused before anything is registered, at the role's field, rather than by the LWS
// controller's StatefulSets after `pulumi up` has created the LWS (a CRD's schema does not run
// them). They mirror Kubernetes v1.36.4 (the release tests/conformance runs, which holds each rule
// to the real server's verdict), pkg/apis/core/validation/validation.go unless said otherwise;
// k8s.io/kubernetes is not a library this module can import. The server validates after its
// defaulting, so an empty enumeration or threshold (defaulted there) is accepted here.
// The template's labels and annotations are checked by validateTemplate; nvidia.com/gpu's
// quantities by validateGPUQuantities, at the resource's key.

var (
	supportedPullPolicies              = []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}
	supportedTerminationMessagePolices = []corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}
	supportedDNSPolicies               = []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	// validatePorts' supportedPortProtocols and validateContainerRestartPolicy's
	// supportedContainerRestartPolicies (sorted, as sets.List gives them).
	supportedPortProtocols              = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}
	supportedContainerRestartPolicies   = []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways, "Never", "OnFailure"}
	supportedHTTPSchemes                = []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}
	standardContainerResources          = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage)
	standardContainerResourcesExplained = "must be a standard resource for containers (cpu, memory, ephemeral-storage, hugepages-<size>) " +
		"or a fully qualified extended resource such as nvidia.com/gpu"
)

// validatePodTemplateSpec checks a role's pod spec as ValidatePodTemplateSpec (ValidatePodSpec)
// does, with what pkg/apis/apps/validation/validation.go's ValidateStatefulSetSpec adds for the
// StatefulSets LWS makes of the template.
func validatePodTemplateSpec(podSpec *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	volumes, volumeErrs := validateVolumeNames(podSpec.Volumes, specPath.Child("volumes"))
	errs = append(errs, volumeErrs...)
	errs = append(errs, validateContainers(podSpec, volumes, specPath)...)
	// ValidateStatefulSetSpec: a StatefulSet's pods always restart (the server defaults "" to Always).
	if p := podSpec.RestartPolicy; p != "" && p != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(specPath.Child("restartPolicy"), p, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if podSpec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(specPath.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in StatefulSet is not Supported"))
	}
	// validateDNSPolicy, validatePodDNSConfig.
	if p := podSpec.DNSPolicy; p != "" && !slices.Contains(supportedDNSPolicies, p) {
		errs = append(errs, field.NotSupported(specPath.Child("dnsPolicy"), p, supportedDNSPolicies))
	}
	if podSpec.DNSPolicy == corev1.DNSNone {
		switch {
		case podSpec.DNSConfig == nil:
			errs = append(errs, field.Required(specPath.Child("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None"))
		case len(podSpec.DNSConfig.Nameservers) == 0:
			errs = append(errs, field.Required(specPath.Child("dnsConfig", "nameservers"), "must provide at least one DNS nameserver when `dnsPolicy` is None"))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(podSpec.NodeSelector, specPath.Child("nodeSelector"))...)
	if name := podSpec.ServiceAccountName; name != "" {
		for _, msg := range apivalidation.ValidateServiceAccountName(name, false) {
			errs = append(errs, field.Invalid(specPath.Child("serviceAccountName"), name, msg))
		}
	}
	// ValidatePodTemplateSpec.
	if len(podSpec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validateVolumeNames is ValidateVolumes' check of names: a DNS label, unique. It returns the
// names of the valid volumes, which alone a mount may name (as ValidateVolumes' map).
func validateVolumeNames(volumes []corev1.Volume, volumesPath *field.Path) (sets.Set[string], field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, volume := range volumes {
		namePath := volumesPath.Index(i).Child("name")
		var volumeErrs field.ErrorList
		if volume.Name == "" {
			volumeErrs = append(volumeErrs, field.Required(namePath, ""))
		} else {
			volumeErrs = append(volumeErrs, validateWith(namePath, volume.Name, validation.IsDNS1123Label)...)
		}
		if names.Has(volume.Name) {
			volumeErrs = append(volumeErrs, field.Duplicate(namePath, volume.Name))
		}
		if len(volumeErrs) == 0 {
			names.Insert(volume.Name)
		}
		errs = append(errs, volumeErrs...)
	}
	return names, errs
}

// validateContainers is validateContainers and validateInitContainers: names unique across both
// lists; probes and lifecycle hooks on containers and on restartable (sidecar) init containers
// only; host ports unique among the containers, and within each init container (they run one by
// one: checkHostPortConflicts).
func validateContainers(podSpec *corev1.PodSpec, volumes sets.Set[string], specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	containersPath := specPath.Child("containers")
	for i := range podSpec.Containers {
		c, path := &podSpec.Containers[i], containersPath.Index(i)
		errs = append(errs, validateContainer(c, volumes, path)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		errs = append(errs, validateProbesAndLifecycle(c, path)...)
		errs = append(errs, validateContainerRestartPolicy(c, path)...)
	}
	errs = append(errs, validateHostPorts(podSpec.Containers, containersPath)...)
	initPath := specPath.Child("initContainers")
	for i := range podSpec.InitContainers {
		c, path := &podSpec.InitContainers[i], initPath.Index(i)
		errs = append(errs, validateContainer(c, volumes, path)...)
		errs = append(errs, validateContainerRestartPolicy(c, path)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		errs = append(errs, validateHostPorts([]corev1.Container{*c}, initPath)...)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			errs = append(errs, validateProbesAndLifecycle(c, path)...)
			continue
		}
		for _, set := range []struct {
			name string
			set  bool
		}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
			if set.set {
				errs = append(errs, field.Forbidden(path.Child(set.name), "may not be set for init containers without restartPolicy=Always"))
			}
		}
	}
	return errs
}

// validateContainer is validateContainerCommon: what every container of a pod must be.
func validateContainer(c *corev1.Container, volumes sets.Set[string], path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		errs = append(errs, validateWith(path.Child("name"), c.Name, validation.IsDNS1123Label)...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(path.Child("image"), "the container's image"))
	}
	if p := c.TerminationMessagePolicy; p != "" && !slices.Contains(supportedTerminationMessagePolices, p) {
		errs = append(errs, field.NotSupported(path.Child("terminationMessagePolicy"), p, supportedTerminationMessagePolices))
	}
	if p := c.ImagePullPolicy; p != "" && !slices.Contains(supportedPullPolicies, p) {
		errs = append(errs, field.NotSupported(path.Child("imagePullPolicy"), p, supportedPullPolicies))
	}
	errs = append(errs, validateContainerPorts(c.Ports, path.Child("ports"))...)
	errs = append(errs, validateEnvNames(c.Env, path.Child("env"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, volumes, path.Child("volumeMounts"))...)
	return append(errs, validateResources(&c.Resources, path.Child("resources"))...)
}

// validateContainerPorts is validateContainerPorts: names IANA service names unique in the
// container, numbers in range; the protocol defaults to TCP.
func validateContainerPorts(ports []corev1.ContainerPort, portsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		path := portsPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) > 0 {
				errs = append(errs, validateWith(path.Child("name"), port.Name, validation.IsValidPortName)...)
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(path.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(path.Child("containerPort"), ""))
		} else {
			errs = append(errs, validatePortNumber(path.Child("containerPort"), port.ContainerPort)...)
		}
		if port.HostPort != 0 {
			errs = append(errs, validatePortNumber(path.Child("hostPort"), port.HostPort)...)
		}
		if port.Protocol != "" && !slices.Contains(supportedPortProtocols, port.Protocol) {
			errs = append(errs, field.NotSupported(path.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}

func validatePortNumber(path *field.Path, port int32) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(path, port, msg))
	}
	return errs
}

// validateHostPorts is AccumulateUniqueHostPorts: one host port, protocol and address per pod.
func validateHostPorts(containers []corev1.Container, containersPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, c := range containers {
		for j, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			protocol := port.Protocol
			if protocol == "" {
				protocol = corev1.ProtocolTCP // the server's default, before it validates
			}
			key := fmt.Sprintf("%s/%s/%d", protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(containersPath.Index(i).Child("ports").Index(j).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return errs
}

// validateEnvNames is ValidateEnv's check of names, in the relaxed form (printable ASCII but '=')
// that the RelaxedEnvironmentVariableValidation gate, GA and locked on since 1.34, allows.
func validateEnvNames(env []corev1.EnvVar, envPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, v := range env {
		if v.Name == "" {
			errs = append(errs, field.Required(envPath.Index(i).Child("name"), ""))
			continue
		}
		errs = append(errs, validateWith(envPath.Index(i).Child("name"), v.Name, validation.IsRelaxedEnvVarName)...)
	}
	return errs
}

// validateVolumeMounts is ValidateVolumeMounts: each mount names a valid volume of the pod, at a
// path of its own.
func validateVolumeMounts(mounts []corev1.VolumeMount, volumes sets.Set[string], mountsPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	paths := sets.New[string]()
	for i, m := range mounts {
		path := mountsPath.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		}
		if !volumes.Has(m.Name) {
			errs = append(errs, field.NotFound(path.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(path.Child("mountPath"), ""))
		}
		if paths.Has(m.MountPath) {
			errs = append(errs, field.Invalid(path.Child("mountPath"), m.MountPath, "must be unique"))
		}
		paths.Insert(m.MountPath)
	}
	return errs
}

// validateContainerRestartPolicy is validateInitContainerRestartPolicy and
// validateContainerRestartPolicy with the ContainerRestartRules gate (beta, on, since 1.35).
func validateContainerRestartPolicy(c *corev1.Container, path *field.Path) field.ErrorList {
	if c.RestartPolicy == nil || slices.Contains(supportedContainerRestartPolicies, *c.RestartPolicy) {
		return nil
	}
	return field.ErrorList{field.NotSupported(path.Child("restartPolicy"), *c.RestartPolicy, supportedContainerRestartPolicies)}
}

// validateProbesAndLifecycle is validateContainers' checks of probes (validateLivenessProbe,
// validateReadinessProbe, validateStartupProbe) and lifecycle hooks (validateLifecycle).
func validateProbesAndLifecycle(c *corev1.Container, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if l := c.Lifecycle; l != nil {
		for _, hook := range []struct {
			name    string
			handler *corev1.LifecycleHandler
		}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
			if h := hook.handler; h != nil {
				errs = append(errs, validateHandler(h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep, path.Child("lifecycle", hook.name))...)
			}
		}
	}
	for _, probe := range []struct {
		name  string
		probe *corev1.Probe
	}{{"livenessProbe", c.LivenessProbe}, {"readinessProbe", c.ReadinessProbe}, {"startupProbe", c.StartupProbe}} {
		p := probe.probe
		if p == nil {
			continue
		}
		probePath := path.Child(probe.name)
		errs = append(errs, validateHandler(p.Exec, p.HTTPGet, p.TCPSocket, p.GRPC, nil, probePath)...)
		for _, n := range []struct {
			name  string
			value int32
		}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds},
			{"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(n.value), probePath.Child(n.name))...)
		}
		if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
			errs = append(errs, field.Invalid(probePath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
		}
		switch {
		case probe.name == "readinessProbe" && p.TerminationGracePeriodSeconds != nil:
			errs = append(errs, field.Invalid(probePath.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds,
				"must not be set for readinessProbes"))
		case probe.name != "readinessProbe" && p.SuccessThreshold > 1: // 0 is defaulted to 1; negative is refused above
			errs = append(errs, field.Invalid(probePath.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	}
	return errs
}

// validateHandler is validateHandler: exactly one action, each checked as validateExecAction,
// validateHTTPGetAction (whose empty path and scheme the server defaults), validateTCPSocketAction
// and validateGRPCAction do. A sleep's length is left to the server: its bound is the grace
// period the role may set.
func validateHandler(exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction,
	sleep *corev1.SleepAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	handlers := 0
	handler := func(name string, set bool, check func(*field.Path) field.ErrorList) {
		switch {
		case !set:
		case handlers > 0:
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
		default:
			handlers++
			errs = append(errs, check(path.Child(name))...)
		}
	}
	handler("exec", exec != nil, func(p *field.Path) field.ErrorList {
		if len(exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	handler("httpGet", httpGet != nil, func(p *field.Path) field.ErrorList {
		errs := validatePortNumberOrName(httpGet.Port, p.Child("port"))
		if s := httpGet.Scheme; s != "" && !slices.Contains(supportedHTTPSchemes, s) {
			errs = append(errs, field.NotSupported(p.Child("scheme"), s, supportedHTTPSchemes))
		}
		for _, header := range httpGet.HTTPHeaders {
			errs = append(errs, validateWith(p.Child("httpHeaders"), header.Name, validation.IsHTTPHeaderName)...)
		}
		return errs
	})
	handler("tcpSocket", tcp != nil, func(p *field.Path) field.ErrorList { return validatePortNumberOrName(tcp.Port, p.Child("port")) })
	handler("grpc", grpc != nil, func(p *field.Path) field.ErrorList { return validatePortNumber(p.Child("port"), grpc.Port) })
	handler("sleep", sleep != nil, func(*field.Path) field.ErrorList { return nil })
	if handlers == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

// validatePortNumberOrName is ValidatePortNumOrName: a number in range, or an IANA service name
// (a name the server does not look up in the container's ports).
func validatePortNumberOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	if port.Type == intstr.Int {
		return validatePortNumber(path, port.IntVal)
	}
	return validateWith(path, port.StrVal, validation.IsValidPortName)
}

// validateResources is validateResourceRequirements for a container: names (validateResourceName,
// validateContainerResourceName), quantities not negative and whole for extended resources
// (ValidateResourceQuantityValue), requests within limits and equal to them for resources that
// cannot be overcommitted (extended resources, huge pages), huge pages beside cpu or memory.
func validateResources(r *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	limitsPath, requestsPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, list := range []struct {
		values corev1.ResourceList
		path   *field.Path
	}{{r.Limits, limitsPath}, {r.Requests, requestsPath}} {
		for _, name := range slices.Sorted(maps.Keys(list.values)) {
			quantity, keyPath := list.values[name], list.path.Key(string(name))
			errs = append(errs, validateContainerResourceName(name, keyPath)...)
			cpuOrMemory = cpuOrMemory || name == corev1.ResourceCPU || name == corev1.ResourceMemory
			hugePages = hugePages || isHugePages(name)
			if name == GPUResourceName {
				continue // validateGPUQuantities
			}
			if quantity.Sign() < 0 {
				errs = append(errs, field.Invalid(keyPath, quantity.String(), apivalidation.IsNegativeErrorMsg))
			}
			if isExtendedResource(name) && quantity.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(keyPath, quantity.String(), "must be an integer"))
			}
			if list.path != requestsPath {
				continue
			}
			limit, limited := r.Limits[name]
			overcommitted := isNativeResource(name) && !isHugePages(name) // IsOvercommitAllowed
			switch {
			case limited && !overcommitted && quantity.Cmp(limit) != 0:
				errs = append(errs, field.Invalid(requestsPath, quantity.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
			case limited && quantity.Cmp(limit) > 0:
				errs = append(errs, field.Invalid(requestsPath, quantity.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
			case !limited && !overcommitted:
				errs = append(errs, field.Required(limitsPath, "Limit must be set for non overcommitable resources"))
			}
		}
	}
	if hugePages && !cpuOrMemory {
		errs = append(errs, field.Forbidden(path, "HugePages require cpu or memory"))
	}
	return errs
}

// validateContainerResourceName: a qualified name; unqualified, one of the standard container
// resources; qualified outside kubernetes.io, an extended resource.
func validateContainerResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if errs := validateWith(path, string(name), validation.IsQualifiedName); len(errs) > 0 {
		return errs
	}
	switch {
	case !strings.Contains(string(name), "/"):
		if !standardContainerResources.Has(name) && !isHugePages(name) {
			return field.ErrorList{field.Invalid(path, name, standardContainerResourcesExplained)}
		}
	case !isNativeResource(name) && !isExtendedResource(name):
		return field.ErrorList{field.Invalid(path, name, "doesn't follow extended resource name standard")}
	}
	return nil
}

// pkg/apis/core/helper/helpers.go: IsHugePageResourceName, IsNativeResource, IsExtendedResourceName.
func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

func isExtendedResource(name corev1.ResourceName) bool {
	if isNativeResource(name) || strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+string(name))) == 0
}
