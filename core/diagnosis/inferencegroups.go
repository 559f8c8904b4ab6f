// SPDX-License-Identifier: Apache-2.0

package diagnosis

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// InferenceGroups are the API groups the Endpoint Pickers read objectives and rewrites in.
var InferenceGroups = []string{eppconfig.GroupLLMD, eppconfig.GroupInferenceX}

// inferenceGroupCauses are the objectives and rewrites of the service's pool that its Endpoint
// Picker ignores: they are in another API group than the one its release watches on a cluster
// that serves their kind in the groups observed (eppconfig.Release.WatchedGroup), or it reads no
// such kind. A rewrite it ignores leaves the names it matches unknown (404), an objective its
// requests without their priority; waiting cures neither. The release is the spec's, or without
// the spec the one the service's Endpoint Picker Deployment names (pickerRelease); without
// either, or without the groups observed, nothing is said.
func (d *diagnoser) inferenceGroupCauses(service string) []Cause {
	release, known := d.pickerRelease(service)
	if !known || d.o.InferenceGroups == nil {
		return nil
	}
	type object struct{ kind, apiVersion, name, pool string }
	var objects []object
	for _, o := range d.o.InferenceObjectives {
		objects = append(objects, object{eppconfig.KindObjective, o.APIVersion, o.Name, string(o.Spec.PoolRef.Name)})
	}
	for _, o := range d.o.InferenceModelRewrites {
		if o.Spec.PoolRef != nil {
			objects = append(objects, object{eppconfig.KindModelRewrite, o.APIVersion, o.Name, string(o.Spec.PoolRef.Name)})
		}
	}
	var out []Cause
	for _, o := range objects {
		group, _, _ := strings.Cut(o.apiVersion, "/")
		served := d.o.InferenceGroups[o.kind]
		watched, watches := release.WatchedGroup(o.kind, served)
		if o.pool != api.PoolName(service) || (watches && watched == group) {
			continue
		}
		consequence := "requests for the model it rewrites get 404"
		if o.kind == eppconfig.KindObjective {
			consequence = "its priority is not applied to requests"
		}
		cause := Cause{Object: o.kind + "/" + o.name, Reason: "NotWatched", failed: true}
		switch {
		case !watches:
			cause.Message = fmt.Sprintf("it is in %s, and the Endpoint Picker (%s) watches no %s on this cluster (which has their CRD in %s): "+
				"it ignores this one, and %s", group, release, o.kind, strings.Join(served, " and "), consequence)
			cause.Fix = fmt.Sprintf("use an endpointPicker.release that reads %ss in %s (%s), and restart the Endpoint Picker after installing or removing their CRDs: it looks for them when it starts",
				o.kind, group, strings.Join(releasesWatching(o.kind, served, group), ", "))
		default:
			cause.Message = fmt.Sprintf("it is in %s, and the Endpoint Picker (%s) watches %ss in %s on this cluster (which has their CRD in %s): "+
				"it ignores this one, and %s", group, release, o.kind, watched, strings.Join(served, " and "), consequence)
			cause.Fix = fmt.Sprintf("have it in %s: for the service's own rewrites, set the router's endpointPicker.crdGroups to %s and deploy again; "+
				"the Endpoint Picker looks for the CRDs when it starts, so restart it after installing or removing one", watched, crdGroupsOf(served))
		}
		out = append(out, cause)
	}
	return out
}

// pickerRelease is the release of the service's Endpoint Picker: the spec's router's, or without
// the spec the one its Deployment names (render.AnnotationEndpointPickerRelease; a Deployment
// rendered before the annotation, or a name no release has, says nothing). A spec without a
// router has none.
func (d *diagnoser) pickerRelease(service string) (eppconfig.Release, bool) {
	if d.svc != nil {
		if router := d.svc.Spec.Router(); router != nil {
			return router.EndpointPickerRelease(), true
		}
		return "", false
	}
	for _, dep := range d.o.Deployments {
		release := eppconfig.Release(dep.Annotations[render.AnnotationEndpointPickerRelease])
		if dep.Name == api.EndpointPickerName(service) && slices.Contains(eppconfig.Releases(), release) {
			return release, true
		}
	}
	return "", false
}

// crdGroupsOf is the endpointPicker.crdGroups value of the groups a cluster serves.
func crdGroupsOf(served []string) api.InferenceCRDGroups {
	if slices.Contains(served, eppconfig.GroupLLMD) && slices.Contains(served, eppconfig.GroupInferenceX) {
		return api.CRDGroupsBoth
	}
	if slices.Contains(served, eppconfig.GroupLLMD) {
		return api.CRDGroupsLLMD
	}
	return api.CRDGroupsInferenceExtension
}

// releasesWatching are the releases whose Endpoint Picker watches the kind in group on a cluster
// that serves it in the groups served.
func releasesWatching(kind string, served []string, group string) []string {
	var out []string
	for _, r := range eppconfig.Releases() {
		if g, ok := r.WatchedGroup(kind, served); ok && g == group {
			out = append(out, string(r))
		}
	}
	return out
}
