// SPDX-License-Identifier: Apache-2.0

package render

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
)

// The Endpoint Picker's metrics auth, as GIE v1.5.0's chart renders it with monitoring on
// (config/charts/epplib/templates/_rbac.yaml, _sa-token-secret.yaml, _servicemonitor.yaml): the
// picker runs with --metrics-endpoint-auth on (its default; eppconfig.Release.MetricsAuth), so its
// metrics server (controller-runtime's filters.WithAuthenticationAndAuthorization) asks the API
// server to review each scraper's token (TokenReview) and whether it may get /metrics
// (SubjectAccessReview). A ClusterRole grants the picker's ServiceAccount both reviews and the
// nonResourceURL /metrics; the PodMonitor scrapes with a token of that ServiceAccount, from a
// service-account-token Secret. lwepp has no metrics auth: none of this is rendered for it.

// KindSecret is the picker's metrics token Secret's kind.
var KindSecret = TypeMeta{APIVersion: "v1", Kind: "Secret"}

// eppTokenKey is the key of a service-account-token Secret's token (and the chart's
// ServiceMonitor's credentials key).
const eppTokenKey = corev1.ServiceAccountTokenKey

// metricsAuthRefs are the ClusterRole and its binding (cluster-scoped, unique per service) and,
// with PodMonitors, the token Secret the router's PodMonitor reads.
func metricsAuthRefs(svc *api.InferenceService, release eppconfig.Release) []Ref {
	if !release.MetricsAuth() {
		return nil
	}
	router := svc.Spec.Router().Name
	name := eppAuthClusterRoleName(svc)
	refs := []Ref{
		{TypeMeta: KindClusterRole, Name: name, Suffix: suffixEPPAuthClusterRole, Role: router},
		{TypeMeta: KindClusterRoleBinding, Name: name, Suffix: suffixEPPAuthClusterRoleBinding, Role: router,
			DependsOn: []string{suffixEPPServiceAccount, suffixEPPAuthClusterRole}},
	}
	if m := svc.Spec.Monitoring; m != nil && m.PodMonitors {
		refs = append(refs, routerRef(svc, KindSecret, api.EndpointPickerMetricsTokenName(svc.Name), suffixEPPMetricsToken, suffixEPPServiceAccount))
	}
	return refs
}

// eppAuthClusterRoleName is unique per service in the cluster: {namespace}-{service}-epp-metrics-auth.
func eppAuthClusterRoleName(svc *api.InferenceService) string {
	return clusterScopedName(svc, "epp-metrics-auth")
}

func (r *routing) metricsAuthObject(ref Ref) runtime.Object {
	account := api.EndpointPickerName(r.svc.Name)
	switch ref.Suffix {
	case suffixEPPAuthClusterRole:
		return &rbacv1.ClusterRole{TypeMeta: typeMeta(KindClusterRole), ObjectMeta: r.meta(ref), Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
			{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}},
		}}
	case suffixEPPAuthClusterRoleBinding:
		return &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta(KindClusterRoleBinding), ObjectMeta: r.meta(ref),
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: r.svc.Namespace}},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindClusterRole.Kind, Name: ref.Name}}
	default: // suffixEPPMetricsToken: the token controller fills it with a token of the picker's account
		meta := r.meta(ref)
		meta.Annotations = map[string]string{corev1.ServiceAccountNameKey: account}
		return &corev1.Secret{TypeMeta: typeMeta(KindSecret), ObjectMeta: meta, Type: corev1.SecretTypeServiceAccountToken}
	}
}
