// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// TestEndpointPickerMetricsAuth: a picker with metrics auth (every release but lwepp) may review
// tokens and access, and grants its account /metrics, as GIE v1.5.0's chart; the router's
// PodMonitor scrapes with that account's token from a service-account-token Secret. lwepp has no
// auth: none of it, and its PodMonitor scrapes without a token.
func TestEndpointPickerMetricsAuth(t *testing.T) {
	for _, release := range []api.EndpointPickerRelease{api.EPPReleaseLLMDRouter, api.EPPReleaseGIE150, api.EPPReleaseGIE, api.EPPReleaseLWEPP} {
		t.Run(string(release), func(t *testing.T) {
			tree := routedStory(t, "llama-router.yaml", func(_ *api.InferenceService, r *api.Role) {
				if release == api.EPPReleaseLWEPP {
					r.Strategy = ""
				}
				r.EndpointPicker = &api.EndpointPicker{Release: release}
			})
			monitor := objectOf[*monitoringv1.PodMonitor](t, tree, "llama-8b-router")
			var clusterRoles, secrets int
			for _, o := range tree.Objects {
				switch o.Object.(type) {
				case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
					clusterRoles++
				case *corev1.Secret:
					secrets++
				}
			}
			if release == api.EPPReleaseLWEPP {
				assert.Zero(t, clusterRoles+secrets)
				assert.Nil(t, monitor.Spec.PodMetricsEndpoints[0].Authorization)
				return
			}
			role := objectOf[*rbacv1.ClusterRole](t, tree, "llm-llama-8b-epp-metrics-auth")
			assert.Equal(t, []rbacv1.PolicyRule{
				{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
				{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
				{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
			}, role.Rules)
			assert.Empty(t, role.Namespace, "cluster-scoped")
			binding := objectOf[*rbacv1.ClusterRoleBinding](t, tree, "llm-llama-8b-epp-metrics-auth")
			assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "llama-8b-epp", Namespace: "llm"}}, binding.Subjects)
			assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
			token := objectOf[*corev1.Secret](t, tree, "llama-8b-epp-metrics-token")
			assert.Equal(t, corev1.SecretTypeServiceAccountToken, token.Type)
			assert.Equal(t, "llama-8b-epp", token.Annotations[corev1.ServiceAccountNameKey])
			auth := monitor.Spec.PodMetricsEndpoints[0].Authorization
			require.NotNil(t, auth, "the picker's PodMonitor scrapes with a token")
			assert.Equal(t, "llama-8b-epp-metrics-token", auth.Credentials.Name)
			assert.Equal(t, "token", auth.Credentials.Key)
			assert.Equal(t, []string{"epp-metrics-token"}, refWithSuffix(t, tree, "router-podmonitor").DependsOn)
		})
	}
	// Without PodMonitors, no token: nothing scrapes with it; the picker still may review.
	tree := routedStory(t, "llama-router.yaml", func(svc *api.InferenceService, _ *api.Role) { svc.Spec.Monitoring = nil })
	for _, o := range tree.Objects {
		_, isSecret := o.Object.(*corev1.Secret)
		assert.False(t, isSecret, "a token Secret without PodMonitors")
	}
	objectOf[*rbacv1.ClusterRole](t, tree, "llm-llama-8b-epp-metrics-auth")
}
