// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// healthAnswer is what a release's EPP health server answers a gRPC health check of service
// (SERVING or not), for a replica that is or is not the elected leader, leader election on or
// off, its pool synced. Read from the releases' source: GIE v1.2.0's and v1.5.0's and
// llm-d-router v0.10.0's cmd/epp/runner/health.go healthServer.Check (without leader election
// every name is SERVING once synced; with it "liveness" always, "readiness", "" and the ext_proc
// service only on the leader, any other name SERVICE_UNKNOWN); lwepp's GIE v1.6.0
// pkg/lwepp/server/runserver.go HealthServerRunnable (grpc-go's health server: "" and
// "inference-extension" only, and no leader election).
func healthAnswer(release api.EndpointPickerRelease, elects, leader bool, service string) bool {
	if release == api.EPPReleaseLWEPP {
		return service == "" || service == "inference-extension"
	}
	if !elects {
		return true
	}
	switch service {
	case "liveness":
		return true
	case "readiness", "", "envoy.service.ext_proc.v3.ExternalProcessor":
		return leader
	}
	return false
}

// TestEndpointPickerProbesFollowTheLeader: the rendered probes ask each release's health server
// what makes every replica live and only the replicas that route Ready: with leader election the
// leader alone (the standbys' datastore is empty, GIE's reconcilers running on the leader only),
// so the EPP's Service sends ext_proc to it alone; without (one replica, lwepp, or a standalone
// router, whose pickers are each a door of its Service) every replica.
func TestEndpointPickerProbesFollowTheLeader(t *testing.T) {
	for _, release := range []api.EndpointPickerRelease{api.EPPReleaseLLMDRouter, api.EPPReleaseGIE150, api.EPPReleaseGIE, api.EPPReleaseLWEPP} {
		for _, mode := range []api.RouterMode{api.RouterGateway, api.RouterStandalone} {
			for _, replicas := range []int{1, 2, 5} {
				t.Run(fmt.Sprintf("%s/%s/%d", release, mode, replicas), func(t *testing.T) {
					tree := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
						if release == api.EPPReleaseLWEPP {
							r.Strategy = ""
						}
						if mode == api.RouterStandalone {
							r.HTTPRoute = nil
						}
						r.RouterMode = mode
						r.EndpointPicker = &api.EndpointPicker{Release: release, Replicas: &replicas}
					})
					container := *container(t, &objectOf[*appsv1.Deployment](t, tree, "").Spec.Template.Spec, "epp")
					elects := slices.Contains(container.Args, eppconfig.FlagLeaderElection)
					assert.Equal(t, replicas > 1 && release != api.EPPReleaseLWEPP && mode == api.RouterGateway, elects,
						"several replicas behind a Gateway elect a leader, but lwepp's")
					readiness, liveness := *container.ReadinessProbe.GRPC.Service, *container.LivenessProbe.GRPC.Service
					for _, leader := range []bool{true, false} {
						routes := leader || !elects
						assert.True(t, healthAnswer(release, elects, leader, liveness), "leader=%v: liveness %q is SERVING, never restarted", leader, liveness)
						assert.Equal(t, routes, healthAnswer(release, elects, leader, readiness),
							"leader=%v: readiness %q is SERVING exactly on a replica that routes", leader, readiness)
					}
				})
			}
		}
	}
}

// TestEndpointPickerDisruptionBudgetAndSpread: several replicas get a budget that keeps one Ready
// and a preferred spread over nodes, both over the Deployment's pods; one replica gets neither.
func TestEndpointPickerDisruptionBudgetAndSpread(t *testing.T) {
	one := story(t, "llama-router.yaml")
	assert.NotContains(t, kinds(one), "PodDisruptionBudget", "one replica: a budget would forbid every eviction")
	assert.Empty(t, objectOf[*appsv1.Deployment](t, one, "").Spec.Template.Spec.TopologySpreadConstraints)

	for _, release := range []api.EndpointPickerRelease{api.EPPReleaseGIE150, api.EPPReleaseLWEPP} {
		tree := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
			if release == api.EPPReleaseLWEPP {
				r.Strategy = ""
			}
			r.EndpointPicker = &api.EndpointPicker{Release: release, Replicas: ptrInt(3)}
		})
		deployment := objectOf[*appsv1.Deployment](t, tree, "llama-8b-epp")
		pod := labels.Set(deployment.Spec.Template.Labels)
		pdb := objectOf[*policyv1.PodDisruptionBudget](t, tree, "llama-8b-epp")
		assert.Equal(t, "policy/v1", pdb.APIVersion)
		assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MinAvailable)
		assert.Nil(t, pdb.Spec.MaxUnavailable)
		assert.Equal(t, policyv1.AlwaysAllow, *pdb.Spec.UnhealthyPodEvictionPolicy, "a standby, never Ready, may always be evicted")
		assert.True(t, selectsPod(t, pdb.Spec.Selector, pod), "the budget is over the Endpoint Picker's pods")
		assert.Equal(t, []string{"epp-deployment"}, refWithSuffix(t, tree, "epp-pdb").DependsOn)

		spread := deployment.Spec.Template.Spec.TopologySpreadConstraints
		require.Len(t, spread, 1)
		assert.Equal(t, corev1.LabelHostname, spread[0].TopologyKey)
		assert.Equal(t, corev1.ScheduleAnyway, spread[0].WhenUnsatisfiable, "preferred: never a Pending picker")
		assert.EqualValues(t, 1, spread[0].MaxSkew)
		assert.Equal(t, corev1.NodeInclusionPolicyHonor, *spread[0].NodeTaintsPolicy)
		assert.True(t, selectsPod(t, spread[0].LabelSelector, pod), "the spread counts the Endpoint Picker's pods")
	}
}

func selectsPod(t *testing.T, selector *metav1.LabelSelector, pod labels.Set) bool {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(selector)
	require.NoError(t, err)
	return !s.Empty() && s.Matches(pod)
}

func kinds(tree *render.Tree) []string {
	var out []string
	for _, o := range tree.Objects {
		out = append(out, o.Kind)
	}
	return out
}

func ptrInt(v int) *int { return &v }

// TestStandaloneDoorStaysOpen: a standalone router's pickers are each a door of its Service, so
// none waits for a lease (no leader election, no lease in its Role, every replica awaited), a
// rollout brings a new door up before an old one goes, a drain takes one at a time, and a door
// that stops drains first: the proxy's preStop drains Envoy for as long as its --drain-time-s,
// the picker beside it answers as long, and the grace period covers both and the picker's own
// 30 s drain. Behind a Gateway the picker keeps its leader, its Recreate and its budget.
func TestStandaloneDoorStaysOpen(t *testing.T) {
	for _, release := range []api.EndpointPickerRelease{api.EPPReleaseLLMDRouter, api.EPPReleaseGIE150, api.EPPReleaseGIE} {
		t.Run(string(release), func(t *testing.T) {
			tree := routedStory(t, "qwen-router-gie-v1.5.0.yaml", func(_ *api.InferenceService, r *api.Role) {
				r.HTTPRoute, r.RouterMode, r.Strategy, r.EndpointPickerConfig = nil, "", "", ""
				r.EndpointPicker = &api.EndpointPicker{Release: release, Replicas: ptrInt(2)}
			})
			name := api.EndpointPickerName(tree.Service.Name)
			deployment := objectOf[*appsv1.Deployment](t, tree, name)
			pod := &deployment.Spec.Template.Spec
			assert.NotContains(t, container(t, pod, "epp").Args, eppconfig.FlagLeaderElection)
			role := objectOf[*rbacv1.Role](t, tree, name)
			for _, rule := range role.Rules {
				assert.NotContains(t, rule.Resources, "leases", "no lease to elect with")
			}
			assert.NotContains(t, deployment.Annotations, render.AnnotationPulumiWaitFor, "every replica is awaited: each is Ready")

			assert.Equal(t, appsv1.RollingUpdateDeploymentStrategyType, deployment.Spec.Strategy.Type)
			assert.Equal(t, intstr.FromInt32(0), *deployment.Spec.Strategy.RollingUpdate.MaxUnavailable, "no door goes before its replacement is Ready")
			assert.Equal(t, intstr.FromInt32(1), *deployment.Spec.Strategy.RollingUpdate.MaxSurge)

			pdb := objectOf[*policyv1.PodDisruptionBudget](t, tree, name)
			assert.Nil(t, pdb.Spec.MinAvailable)
			assert.Equal(t, intstr.FromInt32(1), *pdb.Spec.MaxUnavailable, "a drain evicts one door at a time, and is never refused while the others are Ready")

			proxy, picker := container(t, pod, "envoy-proxy"), container(t, pod, "epp")
			drain, err := strconv.Atoi(flagValue(proxy.Args, "--drain-time-s"))
			require.NoError(t, err)
			require.NotNil(t, proxy.Lifecycle.PreStop.Exec)
			script := strings.Join(proxy.Lifecycle.PreStop.Exec.Command, " ")
			assert.Contains(t, script, "/drain_listeners?graceful", "the proxy drains")
			assert.Contains(t, script, "/healthcheck/fail", "and fails its readiness")
			assert.True(t, strings.HasSuffix(script, "sleep "+strconv.Itoa(drain)), "for as long as --drain-time-s: %s", script)
			require.NotNil(t, picker.Lifecycle.PreStop.Sleep)
			assert.EqualValues(t, drain, picker.Lifecycle.PreStop.Sleep.Seconds, "the picker answers while its proxy drains")
			assert.Greater(t, *pod.TerminationGracePeriodSeconds, int64(drain+30), "the grace period covers the drain and the picker's own")
		})
	}
	gateway := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
		r.EndpointPicker = &api.EndpointPicker{Release: api.EPPReleaseGIE150, Replicas: ptrInt(2)}
	})
	deployment := objectOf[*appsv1.Deployment](t, gateway, "llama-8b-epp")
	assert.Equal(t, appsv1.RecreateDeploymentStrategyType, deployment.Spec.Strategy.Type)
	assert.Nil(t, container(t, &deployment.Spec.Template.Spec, "epp").Lifecycle)
	assert.Equal(t, intstr.FromInt32(1), *objectOf[*policyv1.PodDisruptionBudget](t, gateway, "llama-8b-epp").Spec.MinAvailable)
}
