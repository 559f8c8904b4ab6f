// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// checkRouting: a routed tree sends traffic to its own model servers. The pool selects the leader
// pod of every replica of every serving role and nothing else of the service, the route's every
// rule goes to the pool, and every decode leader of a prefill/decode service has the routing
// sidecar on the pool's port. Its entrance is one: an HTTPRoute in gateway mode, the router's
// Service to the picker's pod in standalone mode.
func checkRouting(t *testing.T, tree *render.Tree) {
	t.Helper()
	var selector map[string]string
	var poolPort int32
	var routes, entrances int
	standalone := tree.Service.Spec.Router().Standalone()
	for _, o := range tree.Objects {
		switch obj := o.Object.(type) {
		case *inferencev1.InferencePool:
			selector = map[string]string{}
			for k, v := range obj.Spec.Selector.MatchLabels {
				selector[string(k)] = string(v)
			}
			poolPort = int32(obj.Spec.TargetPorts[0].Number)
		case *inferencev1alpha2.InferencePool:
			selector = map[string]string{}
			for k, v := range obj.Spec.Selector {
				selector[string(k)] = string(v)
			}
			poolPort = obj.Spec.TargetPortNumber
		case *corev1.Service:
			if obj.Name == api.RouterServiceName(tree.Service.Name) {
				entrances++
				if obj.Spec.Selector[render.LabelRoleName] != tree.Service.Spec.Router().Name {
					t.Fatalf("the router Service selects %v, not the Endpoint Picker's pods", obj.Spec.Selector)
				}
			}
		case *gatewayv1.HTTPRoute:
			routes++
			entrances++
			for i, rule := range obj.Spec.Rules {
				if len(rule.BackendRefs) != 1 || string(*rule.BackendRefs[0].Kind) != "InferencePool" ||
					string(rule.BackendRefs[0].Name) != api.PoolName(tree.Service.Name) {
					t.Fatalf("route rule %d does not go to the pool: %+v", i, rule.BackendRefs)
				}
			}
		}
	}
	if selector == nil || entrances != 1 || (standalone && routes != 0) {
		t.Fatalf("a router without one pool (%v) and one entrance (%d: %d routes, standalone %t)", selector, entrances, routes, standalone)
	}
	for _, o := range tree.Objects {
		lws, ok := o.Object.(*lwsv1.LeaderWorkerSet)
		if !ok {
			continue
		}
		leader := &lws.Spec.LeaderWorkerTemplate.WorkerTemplate
		if lws.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
			leader = lws.Spec.LeaderWorkerTemplate.LeaderTemplate
		}
		if _, dual := leader.Annotations[render.AnnotationDualPodsServerPatch]; dual {
			// A requester holds GPUs and never serves; the server pod FMA makes from it does,
			// until FMA puts it to sleep as a standby.
			if selects(selector, leader.Labels, "0") || !selects(selector, boundServerPod(t, requesterPod(lws), "n").Labels, "") ||
				selects(selector, standbyPod(t, requesterPod(lws), "n").Labels, "") {
				t.Fatalf("the pool must select the awake server pods of %s, not its requesters nor a sleeping standby", lws.Name)
			}
			continue
		}
		// LWS labels the leader pod with worker-index 0 and each worker with its index.
		if !selects(selector, leader.Labels, "0") {
			t.Fatalf("the pool does not select the leader of %s", lws.Name)
		}
		workers := &lws.Spec.LeaderWorkerTemplate.WorkerTemplate
		if role := tree.Service.Spec.RoleNamed(lws.Labels[render.LabelRoleName]); role != nil && role.DataParallel() {
			// Every pod of a data parallel replica runs ranks: the pool selects its workers too,
			// and a decode worker has the sidecar in front of its ranks.
			if *lws.Spec.LeaderWorkerTemplate.Size > 1 && (!selects(selector, workers.Labels, "1") ||
				workers.Labels[render.LabelComponentType] == string(api.ComponentTypeDecoder) && !hasSidecarOn(workers, poolPort)) {
				t.Fatalf("the pool does not reach the ranks of the workers of %s", lws.Name)
			}
		} else if *lws.Spec.LeaderWorkerTemplate.Size > 1 && selects(selector, workers.Labels, "1") {
			t.Fatalf("the pool selects the workers of %s", lws.Name)
		}
		if leader.Labels[render.LabelComponentType] == string(api.ComponentTypeDecoder) && !hasSidecarOn(leader, poolPort) {
			t.Fatalf("decode leader %s has no routing sidecar on the pool's port %d", lws.Name, poolPort)
		}
	}
}

func selects(selector, podLabels map[string]string, workerIndex string) bool {
	for k, v := range selector {
		got, ok := podLabels[k]
		if k == lwsv1.WorkerIndexLabelKey {
			got, ok = workerIndex, true
		}
		if !ok || got != v {
			return false
		}
	}
	return true
}

func hasSidecarOn(tpl *corev1.PodTemplateSpec, port int32) bool {
	for _, c := range tpl.Spec.InitContainers {
		if c.Name == api.RoutingSidecarName && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			for _, p := range c.Ports {
				if p.ContainerPort == port {
					return true
				}
			}
		}
	}
	return false
}
