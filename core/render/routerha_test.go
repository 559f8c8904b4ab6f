// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
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
// so the EPP's Service sends ext_proc to it alone; without (one replica, or lwepp) every replica.
func TestEndpointPickerProbesFollowTheLeader(t *testing.T) {
	for _, release := range []api.EndpointPickerRelease{api.EPPReleaseLLMDRouter, api.EPPReleaseGIE150, api.EPPReleaseGIE, api.EPPReleaseLWEPP} {
		for _, replicas := range []int{1, 2, 5} {
			t.Run(fmt.Sprintf("%s/%d", release, replicas), func(t *testing.T) {
				tree := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
					if release == api.EPPReleaseLWEPP {
						r.Strategy = ""
					}
					r.EndpointPicker = &api.EndpointPicker{Release: release, Replicas: &replicas}
				})
				container := objectOf[*appsv1.Deployment](t, tree, "").Spec.Template.Spec.Containers[0]
				elects := slices.Contains(container.Args, "--ha-enable-leader-election")
				assert.Equal(t, replicas > 1 && release != api.EPPReleaseLWEPP, elects, "several replicas elect a leader, but lwepp's")
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
