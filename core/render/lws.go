// SPDX-License-Identifier: Apache-2.0

package render

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanobatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// roleTemplates are a role's pod templates before any per-replica label: built once per role,
// then copied for each replica.
type roleTemplates struct {
	leader   *corev1.PodTemplateSpec // nil for single-node roles: the worker template serves
	worker   *corev1.PodTemplateSpec
	revision string
}

// buildRoleTemplates are a role's templates. Behind a router, a prefill/decode role's pods carry
// llm-d's role label, and a decode leader gets the routing sidecar (routing is nil without a router).
func buildRoleTemplates(serviceName string, spec *api.InferenceServiceSpec, role *api.Role, resolved *api.Resolved, routing *routing) (roleTemplates, error) {
	base := role.Template.DeepCopy()
	routedDecoder := routing != nil && role.ComponentType == api.ComponentTypeDecoder
	servingPort, vllmPort := resolved.ServingPorts[role.Name], resolved.ServingPorts[role.Name]
	if routedDecoder {
		vllmPort = api.DecodeVLLMPort // the routing sidecar takes the serving port (addRoutingSidecar)
	}
	useModel(serviceName, spec, role, resolved, vllmPort, base)
	if err := offloadKVCache(base, role); err != nil {
		return roleTemplates{}, err
	}
	serveOnDeclaredPort(&base.Spec, servingPort)
	defaultServerProbes(&base.Spec.Containers[api.ServingContainerIndex(&base.Spec)], servingPort, spec.RoleAwaitTimeout(role))
	if routing != nil {
		routePrefillDecode(base, role)
	}
	if spec.GangScheduled() {
		base.Spec.SchedulerName = api.VolcanoSchedulerName
	}
	if name := spec.PriorityClassName(); name != "" {
		base.Spec.PriorityClassName = name
	}
	if g := role.TerminationGracePeriodSeconds; g != nil {
		base.Spec.TerminationGracePeriodSeconds = ptr.To(int64(*g))
	}
	if pool := spec.NodePoolNamed(role.NodePool); pool != nil {
		placeOnPool(serviceName, pool, &base.Spec)
	}
	var events *rankEvents
	if routing != nil && routing.KVEvents != nil {
		events = &rankEvents{kv: routing.KVEvents, poolPort: routing.PoolPort}
	}
	if role.DataParallel() {
		// Every pod runs ranks and serves: no Ray, the same template for the leader and workers.
		if routedDecoder {
			addRoutingSidecar(base, routing)
		}
		if routing != nil {
			markServing(base, spec)
		}
		if events != nil {
			publishKVEvents(base, role, events.kv, events.poolPort)
		}
		if err := dataParallelTemplate(base, role, events); err != nil {
			return roleTemplates{}, err
		}
		revision, err := templateRevision(base)
		if !role.MultiNode() {
			return roleTemplates{worker: base, revision: revision}, err
		}
		return roleTemplates{leader: base.DeepCopy(), worker: base, revision: revision}, err
	}
	if !role.MultiNode() {
		if routedDecoder {
			addRoutingSidecar(base, routing)
		}
		if events != nil {
			publishKVEvents(base, role, events.kv, events.poolPort)
		}
		switch {
		case role.DualPods():
			// its server pods carry the serving label, not the requesters
			if err := dualPodsTemplate(role, resolved.DualPodsReadinessPorts[role.Name], base); err != nil {
				return roleTemplates{}, err
			}
		case routing != nil:
			markServing(base, spec)
		}
		revision, err := templateRevision(base)
		return roleTemplates{worker: base, revision: revision}, err
	}
	leader, worker := base.DeepCopy(), base
	if routedDecoder {
		addRoutingSidecar(leader, routing) // before the Ray launcher wraps the server's command line
	}
	if routing != nil {
		markServing(leader, spec) // the leader runs the server; the workers only join its Ray cluster
	}
	if events != nil {
		publishKVEvents(leader, role, events.kv, events.poolPort) // before the Ray launcher wraps the server's command line
	}
	rayLeaderTemplate(leader)
	rayWorkerTemplate(worker)
	revision, err := templateRevision(leader, worker)
	return roleTemplates{leader: leader, worker: worker, revision: revision}, err
}

// replicaTemplate is one LWS's copy of a role template with its labels and gang annotations
// (task is its Volcano task key).
func replicaTemplate(svc *api.InferenceService, task string, base *corev1.PodTemplateSpec, labels map[string]string) *corev1.PodTemplateSpec {
	tpl := base.DeepCopy()
	tpl.Labels = merged(tpl.Labels, labels)
	if svc.Spec.GangScheduled() {
		tpl.Annotations = merged(tpl.Annotations, map[string]string{
			volcanov1beta1.KubeGroupNameAnnotationKey: api.PodGroupName(svc.Name),
			volcanobatch.TaskSpecKey:                  task,
		})
	}
	return tpl
}

// buildLeaderWorkerSet is the LWS of one replica: replicas 1, size nodeCount.
func buildLeaderWorkerSet(svc *api.InferenceService, role *api.Role, replica int32, templates roleTemplates, awaited bool) *lwsv1.LeaderWorkerSet {
	return newLeaderWorkerSet(svc, role, leaderWorkerSetOf{
		name: api.LeaderWorkerSetName(svc.Name, role.Name, replica), task: api.TaskName(role.Name, replica),
		labels: replicaLabels(svc.Name, role, replica, templates.revision), replicas: 1, rollout: rollingUpdate(role),
	}, templates, awaited)
}

// leaderWorkerSetOf is what differs between a role's LWSs: a base replica's or the elastic one's.
type leaderWorkerSetOf struct {
	name, task string
	labels     map[string]string
	replicas   int32
	rollout    *lwsv1.RollingUpdateConfiguration
}

// newLeaderWorkerSet is an LWS of the role's templates, groups of nodeCount pods.
func newLeaderWorkerSet(svc *api.InferenceService, role *api.Role, of leaderWorkerSetOf, templates roleTemplates, awaited bool) *lwsv1.LeaderWorkerSet {
	lws := &lwsv1.LeaderWorkerSet{
		TypeMeta: metav1.TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        of.name,
			Namespace:   svc.Namespace,
			Labels:      merged(svc.Labels, of.labels),
			Annotations: awaitAnnotations(awaited, svc.Spec.RoleAwaitTimeout(role)),
		},
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas: ptr.To(of.replicas),
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				Size:           ptr.To(role.NodeCount()),
				WorkerTemplate: *replicaTemplate(svc, of.task, templates.worker, of.labels),
				RestartPolicy:  role.RestartPolicyOrDefault(),
			},
			RolloutStrategy: lwsv1.RolloutStrategy{
				Type:                       lwsv1.RollingUpdateStrategyType,
				RollingUpdateConfiguration: of.rollout,
			},
			StartupPolicy: role.StartupPolicyOrDefault(),
			NetworkConfig: &lwsv1.NetworkConfig{SubdomainPolicy: ptr.To(lwsv1.SubdomainShared)},
		},
	}
	if templates.leader != nil {
		lws.Spec.LeaderWorkerTemplate.LeaderTemplate = replicaTemplate(svc, of.task, templates.leader, of.labels)
	}
	return lws
}

// rollingUpdate is the rolling update of a replica's LWS: LWS's defaults, set explicitly so that a
// re-apply changes nothing, with the role's maxSurge. Partition too: the LWS v0.8 webhook
// dereferences it whenever rollingUpdateConfiguration is set, and neither its defaulting nor the
// CRD fills it in (found by tests/conformance).
func rollingUpdate(role *api.Role) *lwsv1.RollingUpdateConfiguration {
	return &lwsv1.RollingUpdateConfiguration{
		Partition:      ptr.To[int32](0),
		MaxUnavailable: intstr.FromInt32(1),
		MaxSurge:       intstr.FromInt32(role.MaxSurge()),
	}
}

// awaitAnnotations tell pulumi-kubernetes whether to wait for the LWS's Available condition.
func awaitAnnotations(awaited bool, timeout time.Duration) map[string]string {
	if awaited {
		return map[string]string{AnnotationPulumiWaitFor: WaitForAvailable,
			AnnotationPulumiTimeoutSeconds: strconv.Itoa(int(timeout / time.Second))}
	}
	return map[string]string{AnnotationPulumiSkipAwait: "true"}
}
