// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// The router's InferencePool must reach the service's model servers, checked on the rendered tree:
//   - its selector matches at least one pod that runs a model server and no other pod of the
//     service (a Ray worker, a dual-pods requester or sleeping standby, the Endpoint Picker, a
//     download Job's pod):
//     the labels are ours and users cannot set them (api validateLabel refuses the fusioninfer.io/
//     prefix), so a miss is an internal error, kept as a guard on the code that places them;
//   - each scheduling profile of the Endpoint Picker's configuration admits at least one of the
//     pool's pods through its label filters: a user's configuration can miss them (a
//     label-selector-filter on a label no template carries, prefill-filter on a service without
//     prefillers), and then every request the profile schedules fails.

// podTemplate is a pod template of the tree: the object that makes the pods, their labels, and
// whether they run a model server (by what makes them, not by their labels).
type podTemplate struct {
	object  string // Kind/name
	labels  map[string]string
	serving bool
}

// treePodTemplates are the pods the tree's objects make. A LeaderWorkerSet's server runs in its
// leader when it has one (the workers only join its Ray cluster), else in its workers, and in
// both for a data parallel role (each pod runs ranks); a dual-pods
// requester runs none, FMA's server-running pod made from it does: the requester's labels with the
// server patch's applied.
func treePodTemplates(tree *Tree) ([]podTemplate, error) {
	var out []podTemplate
	add := func(object string, tpl *corev1.PodTemplateSpec, serving bool) error {
		if tpl == nil {
			return nil
		}
		patch, dualPods := tpl.Annotations[AnnotationDualPodsServerPatch]
		out = append(out, podTemplate{object, tpl.Labels, serving && !dualPods})
		if !dualPods {
			return nil
		}
		var server struct {
			Metadata struct {
				Labels map[string]*string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(patch), &server); err != nil {
			return fmt.Errorf("%s: the server patch: %w", object, err)
		}
		serverLabels := maps.Clone(tpl.Labels)
		for k, v := range server.Metadata.Labels {
			if v == nil {
				delete(serverLabels, k)
			} else {
				serverLabels[k] = *v
			}
		}
		// FMA labels its server awake while bound, asleep once it keeps it as a standby, which
		// serves nothing (LabelDualPodsSleeping).
		awake, asleep := maps.Clone(serverLabels), serverLabels
		awake[LabelDualPodsSleeping], asleep[LabelDualPodsSleeping] = "false", "true"
		out = append(out, podTemplate{object + " (FMA's server-running pod)", awake, serving},
			podTemplate{object + " (FMA's server-running pod, asleep)", asleep, false})
		return nil
	}
	for _, o := range tree.Objects {
		name := o.Kind + "/" + o.Name
		var err error
		switch obj := o.Object.(type) {
		case *lwsv1.LeaderWorkerSet:
			leader := obj.Spec.LeaderWorkerTemplate.LeaderTemplate
			role := tree.Service.Spec.RoleNamed(obj.Labels[LabelRoleName])
			err = add(name+" leader", leader, true)
			if err == nil { // a data parallel replica's workers run ranks of their own
				err = add(name, &obj.Spec.LeaderWorkerTemplate.WorkerTemplate, leader == nil || role != nil && role.DataParallel())
			}
		case *appsv1.Deployment:
			err = add(name, &obj.Spec.Template, false)
		case *batchv1.Job:
			err = add(name, &obj.Spec.Template, false)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkPoolReach checks the two rules above on a built tree with a router.
func checkPoolReach(tree *Tree) field.ErrorList {
	r := tree.routing
	if r == nil {
		return nil
	}
	rolePath := field.NewPath("spec", "roles").Index(routerIndex(tree.Service))
	templates, err := treePodTemplates(tree)
	if err != nil {
		return field.ErrorList{field.InternalError(rolePath, err)}
	}
	selector := labels.SelectorFromSet(r.poolSelector())
	var pool []map[string]string
	for _, t := range templates {
		if !selector.Matches(labels.Set(t.labels)) {
			continue
		}
		if !t.serving {
			return field.ErrorList{field.InternalError(rolePath, fmt.Errorf("the InferencePool's selector %s matches the pods of %s, which serve no model", selector, t.object))}
		}
		pool = append(pool, t.labels)
	}
	if len(pool) == 0 {
		return field.ErrorList{field.InternalError(rolePath, fmt.Errorf("the InferencePool's selector %s matches no serving pod of the service", selector))}
	}
	if err := r.Selection.UnreachableProfile(pool, LabelReplicaIndex, LabelRevision, LabelAppInstance); err != nil {
		field := rolePath.Child("endpointPickerConfig")
		value := "(the configuration)"
		if r.router.EndpointPickerConfig == "" {
			field, value = rolePath.Child("strategy"), r.router.Strategy
		}
		return fieldErrorList(field, value, err.Error())
	}
	return nil
}

func fieldErrorList(path *field.Path, value any, detail string) field.ErrorList {
	return field.ErrorList{field.Invalid(path, value, detail)}
}

// routerIndex is the index of the service's router role.
func routerIndex(svc *api.InferenceService) int {
	for i := range svc.Spec.Roles {
		if svc.Spec.Roles[i].ComponentType == api.ComponentTypeRouter {
			return i
		}
	}
	return -1
}
