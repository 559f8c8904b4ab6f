// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// FMA (llm-d fast model actuation) v0.6.4: the dual-pods contract this project emits.
const (
	FMAVersion            = DefaultDualPodsControllerVersion
	FMAImageRepository    = "ghcr.io/llm-d-incubation/llm-d-fast-model-actuation"
	DefaultRequesterImage = FMAImageRepository + "/requester:" + FMAVersion
	// FMAServiceAccountSuffix ends the controller's ServiceAccount name: FMA's admission policies
	// let accounts named "*-fma-controllers" change the labels and annotations they guard.
	FMAServiceAccountSuffix = "-fma-controllers"
)

// DualPods reports whether the role runs through FMA's dual pods.
func (r *Role) DualPods() bool {
	return r.ModelFlexibility != nil && r.ModelFlexibility.Mode == DualPods
}

// HasDualPods reports whether any role runs through dual pods.
func (s *InferenceServiceSpec) HasDualPods() bool {
	for i := range s.Roles {
		if s.Roles[i].DualPods() {
			return true
		}
	}
	return false
}

// InstallsDualPodsController reports whether the tree includes FMA's controller.
func (s *InferenceServiceSpec) InstallsDualPodsController() bool {
	return s.DualPodsController != nil && s.DualPodsController.Install
}

// RequesterImageOrDefault is the requester image.
func (m *ModelFlexibility) RequesterImageOrDefault() string {
	if m.RequesterImage == "" {
		return DefaultRequesterImage
	}
	return m.RequesterImage
}

// AdminPortOrDefault is the requester's SPI port.
func (m *ModelFlexibility) AdminPortOrDefault() int32 {
	return portOrDefault(m.AdminPort, DefaultModelFlexibilityAdminPort)
}

// ProbesPortOrDefault is the requester's probes port.
func (m *ModelFlexibility) ProbesPortOrDefault() int32 {
	return portOrDefault(m.ProbesPort, DefaultModelFlexibilityProbesPort)
}

func portOrDefault(p *int, def int32) int32 {
	if p == nil {
		return def
	}
	return int32(*p)
}

// VersionOrDefault is the controller's FMA release.
func (d *DualPodsController) VersionOrDefault() string {
	if d.Version == "" {
		return FMAVersion
	}
	return d.Version
}

// SleeperLimitOrDefault is the controller's sleeping servers per GPU.
func (d *DualPodsController) SleeperLimitOrDefault() int {
	if d.SleeperLimit == nil {
		return DefaultDualPodsControllerSleeperLimit
	}
	return *d.SleeperLimit
}

// validateModelFlexibility checks a role's dual pods against what FMA v0.6.4 can run.
func validateModelFlexibility(spec *InferenceServiceSpec, role *Role, rolePath *field.Path) field.ErrorList {
	mf := role.ModelFlexibility
	if mf == nil {
		return nil
	}
	path := rolePath.Child("modelFlexibility")
	var errs field.ErrorList
	if mf.Mode != DualPods {
		errs = append(errs, field.NotSupported(path.Child("mode"), mf.Mode, mf.Mode.AllowedValues()))
	}
	switch {
	case role.ComponentType != ComponentTypeWorker:
		errs = append(errs, field.Forbidden(path, "only worker roles: a dual-pods server serves whole requests, while prefill and "+
			"decode servers hand KV caches to each other, which a sleeping server cannot"))
	case role.MultiNode():
		errs = append(errs, field.Forbidden(path, "only single-node roles: FMA runs one server per pod, a multi-node replica spans several"))
	case spec.GangScheduled():
		errs = append(errs, field.Forbidden(path, "a dual-pods role is not gang scheduled: FMA creates its server pods outside any "+
			"PodGroup; remove schedulingStrategy.schedulerName volcano"))
	}
	for _, p := range []struct {
		name string
		port *int
	}{{"adminPort", mf.AdminPort}, {"probesPort", mf.ProbesPort}} {
		if p.port != nil && (*p.port < 1 || *p.port > 65535) {
			errs = append(errs, field.Invalid(path.Child(p.name), *p.port, portRule))
		}
	}
	if mf.AdminPortOrDefault() == mf.ProbesPortOrDefault() {
		errs = append(errs, field.Invalid(path.Child("probesPort"), mf.ProbesPortOrDefault(), "must differ from adminPort"))
	}
	if strings.ContainsAny(mf.RequesterImage, " \t\n") {
		errs = append(errs, field.Invalid(path.Child("requesterImage"), mf.RequesterImage, "an image reference has no spaces"))
	}
	return errs
}

// validateDualPodsServer checks the template of a dual-pods role: the server FMA will run from it.
// It resolves the server's readiness port into resolved.DualPodsReadinessPorts.
func validateDualPodsServer(role *Role, tplPath *field.Path, resolved *Resolved) field.ErrorList {
	if !role.DualPods() || role.Template == nil || len(role.Template.Spec.Containers) == 0 {
		return nil
	}
	var errs field.ErrorList
	podSpec := &role.Template.Spec
	specPath := tplPath.Child("spec")
	if len(podSpec.Containers) > 1 {
		errs = append(errs, field.TooMany(specPath.Child("containers"), len(podSpec.Containers), 1))
	}
	if len(podSpec.InitContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("initContainers"), "a dual-pods server pod runs the server container only"))
	}
	serverIndex := ServingContainerIndex(podSpec)
	server := &podSpec.Containers[serverIndex]
	serverPath := specPath.Child("containers").Index(serverIndex)
	if ContainerGPUs(server) == 0 {
		errs = append(errs, field.Required(serverPath.Child("resources", "limits").Key(string(GPUResourceName)),
			"the GPUs the requester holds for the server"))
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		_, request := server.Resources.Requests[name]
		_, limit := server.Resources.Limits[name]
		if !request && !limit {
			errs = append(errs, field.Required(serverPath.Child("resources", "requests").Key(string(name)),
				"FMA's server pod does not inherit the requester's small requests: give the server's own"))
		}
	}
	if vllm.IsShellScript(server) {
		errs = append(errs, field.Invalid(serverPath.Child("command"), server.Command,
			"a dual-pods server gets --enable-sleep-mode: give the server's own command and args, not a shell script"))
	}
	if port, err := DualPodsReadinessPort(server); err != nil {
		errs = append(errs, field.Invalid(serverPath.Child("readinessProbe"), "(the probe)", err.Error()))
	} else {
		resolved.DualPodsReadinessPorts[role.Name] = port
	}
	return errs
}

// DualPodsReadinessPort is the port of the server's HTTP readiness probe, as a number: FMA reads
// the server's port from it. Without a probe it is the serving port.
func DualPodsReadinessPort(server *corev1.Container) (int32, error) {
	probe := server.ReadinessProbe
	if probe == nil {
		return ServingPort(server)
	}
	if probe.HTTPGet == nil {
		return 0, fmt.Errorf("FMA reads the server's port from an httpGet readiness probe; use httpGet (vLLM serves /health)")
	}
	if port, ok := ProbePort(server, probe.HTTPGet.Port); ok {
		return port, nil
	}
	return 0, fmt.Errorf("the probe's port %q is not a port of the container", probe.HTTPGet.Port.StrVal)
}

// validateDualPodsController checks spec.dualPodsController.
func validateDualPodsController(spec *InferenceServiceSpec, namespace string, path *field.Path) field.ErrorList {
	d := spec.DualPodsController
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	if !spec.HasDualPods() {
		errs = append(errs, field.Invalid(path, "(the controller)", "no role has modelFlexibility.mode dualPods"))
	}
	if namespace == "" {
		namespace = DefaultNamespace
	}
	if d.Namespace != "" && d.Namespace != namespace {
		errs = append(errs, field.Invalid(path.Child("namespace"), d.Namespace, fmt.Sprintf(
			"FMA's controller manages the pods of its own namespace only: the service's requesters are in %q", namespace)))
	}
	if d.SleeperLimit != nil && *d.SleeperLimit < 0 {
		errs = append(errs, field.Invalid(path.Child("sleeperLimit"), *d.SleeperLimit, "must be >= 0"))
	}
	if strings.ContainsAny(d.Version, " \t\n:/@") {
		errs = append(errs, field.Invalid(path.Child("version"), d.Version, "an image tag, e.g. v0.6.4"))
	}
	return errs
}
