package inferenceservice

import (
	"encoding/json"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
)

// routerToAPI copies a role's router fields into the spec. Quantities and the route are
// converted here, so their errors carry the role's field path.
func routerToAPI(r *RoleArgs, role *api.Role, rolePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	role.Strategy, role.EndpointPickerConfig, role.ShadowService = r.Strategy, r.EndpointPickerConfig, r.ShadowService
	role.PoolAPIVersion, role.FailureMode = api.PoolAPIVersion(r.PoolAPIVersion), api.FailureMode(r.FailureMode)
	if r.HTTPRoute != nil {
		data, err := json.Marshal(r.HTTPRoute)
		if err != nil {
			errs = append(errs, field.Invalid(rolePath.Child("httproute"), "(the route)", err.Error()))
		}
		role.HTTPRoute = &runtime.RawExtension{Raw: data}
	}
	if e := r.EndpointPicker; e != nil {
		role.EndpointPicker = &api.EndpointPicker{Image: e.Image}
		if e.Replicas != nil {
			role.EndpointPicker.Replicas = ptr.To(int32(*e.Replicas))
		}
		if e.Resources != nil {
			resourcesPath := rolePath.Child("endpointPicker", "resources")
			requests, reqErrs := resourceList(e.Resources.Requests, resourcesPath.Child("requests"))
			limits, limErrs := resourceList(e.Resources.Limits, resourcesPath.Child("limits"))
			errs = append(append(errs, reqErrs...), limErrs...)
			role.EndpointPicker.Resources = &corev1.ResourceRequirements{Requests: requests, Limits: limits}
		}
	}
	return errs
}

func resourceList(quantities map[string]string, path *field.Path) (corev1.ResourceList, field.ErrorList) {
	if quantities == nil {
		return nil, nil
	}
	names := make([]string, 0, len(quantities))
	for name := range quantities {
		names = append(names, name)
	}
	sort.Strings(names)
	var errs field.ErrorList
	out := corev1.ResourceList{}
	for _, name := range names {
		q, err := resource.ParseQuantity(quantities[name])
		if err != nil {
			errs = append(errs, field.Invalid(path.Key(name), quantities[name], err.Error()))
			continue
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, errs
}

// routerFromAPI copies a manifest role's router fields into Args.
func routerFromAPI(r *api.Role, role *RoleArgs) error {
	role.Strategy, role.EndpointPickerConfig, role.ShadowService = r.Strategy, r.EndpointPickerConfig, r.ShadowService
	role.PoolAPIVersion, role.FailureMode = string(r.PoolAPIVersion), string(r.FailureMode)
	if r.HTTPRoute != nil {
		if err := json.Unmarshal(r.HTTPRoute.Raw, &role.HTTPRoute); err != nil {
			return err
		}
	}
	if e := r.EndpointPicker; e != nil {
		role.EndpointPicker = &EndpointPickerArgs{Image: e.Image}
		if e.Replicas != nil {
			role.EndpointPicker.Replicas = ptr.To(int(*e.Replicas))
		}
		if e.Resources != nil {
			role.EndpointPicker.Resources = &ResourcesArgs{Requests: quantities(e.Resources.Requests), Limits: quantities(e.Resources.Limits)}
		}
	}
	return nil
}

func quantities(list corev1.ResourceList) map[string]string {
	if list == nil {
		return nil
	}
	out := make(map[string]string, len(list))
	for name, q := range list {
		out[string(name)] = q.String()
	}
	return out
}
