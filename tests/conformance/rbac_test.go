// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// access is one request the Endpoint Picker might make, and whether RBAC must allow it.
type access struct {
	verb, group, resource, name, namespace string
	allowed                                bool
}

// releaseReads is what each release's Endpoint Picker reads, from its source: the lease its
// manager elects with (controller_manager.go NewDefaultManager: GIE's suffix, llm-d-router's
// ".llm-d.ai"; lwepp has no leader election), the groups it watches InferenceObjectives in and
// whether it watches InferenceModelRewrites (controller_config.go of llm-d-router v0.10.0 and GIE
// v1.5.0; GIE v1.2.0 watches objectives only; lwepp neither).
var releaseReads = map[api.EndpointPickerRelease]struct {
	leaseSuffix     string
	objectiveGroups []string
	rewrites        bool
}{
	api.EPPReleaseLLMDRouter: {".llm-d.ai", []string{"llm-d.ai", "inference.networking.x-k8s.io"}, true},
	api.EPPReleaseGIE150:     {".gateway-api-inference-extension.sigs.k8s.io", []string{"inference.networking.x-k8s.io"}, true},
	api.EPPReleaseGIE:        {".gateway-api-inference-extension.sigs.k8s.io", []string{"inference.networking.x-k8s.io"}, false},
	api.EPPReleaseLWEPP:      {"", nil, false},
}

// TestEndpointPickerPermissionsAreLeastPrivilege asks the API server's own RBAC authorizer what
// each example's Endpoint Picker account may do: exactly what its release's EPP needs (its pool by
// name, which is how the EPP lists and watches it; the namespace's pods, and the objectives and
// model rewrites in the groups it watches them in; a lease of its own when it elects a leader),
// and nothing else. The examples hold every release.
func TestEndpointPickerPermissionsAreLeastPrivilege(t *testing.T) {
	clientset, err := kubernetes.NewForConfig(testCluster.config)
	require.NoError(t, err)
	checked, releases := 0, map[api.EndpointPickerRelease]bool{}
	for file, trees := range exampleTrees(t) {
		for _, tree := range trees {
			router := tree.Service.Spec.Router()
			if router == nil {
				continue
			}
			checked++
			releases[router.EndpointPickerRelease()] = true
			t.Run(file, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ns, svc := tree.Service.Namespace, tree.Service.Name
				require.NoError(t, testCluster.ensureNamespace(ctx, ns))
				var rbac []*unstructured.Unstructured
				for _, o := range tree.Objects {
					switch o.TypeMeta {
					case render.KindServiceAccount, render.KindRole, render.KindRoleBinding:
						m, err := o.Unstructured()
						require.NoError(t, err)
						rbac = append(rbac, &unstructured.Unstructured{Object: m})
					}
				}
				for _, obj := range rbac {
					_, err := testCluster.apply(ctx, obj)
					require.NoError(t, err)
				}
				defer func() {
					for _, obj := range rbac {
						_ = testCluster.delete(ctx, obj)
					}
				}()
				pool, group := api.PoolName(svc), router.PoolGroup()
				eppRelease, known := releaseReads[router.EndpointPickerRelease()]
				require.True(t, known, "the test knows release %s", router.EndpointPickerRelease())
				lease := fmt.Sprintf("epp-%s-%s%s", ns, pool, eppRelease.leaseSuffix)
				elects := router.EndpointPickerLeaderElection() // a standalone router's pickers all serve, electing none
				cases := []access{
					{"get", group, "inferencepools", pool, ns, true},
					{"list", group, "inferencepools", pool, ns, true},
					{"watch", group, "inferencepools", pool, ns, true},
					{"list", group, "inferencepools", "", ns, false},
					{"get", group, "inferencepools", "another-pool", ns, false},
					{"update", group, "inferencepools", pool, ns, false},
					{"watch", "", "pods", "", ns, true},
					{"list", "", "pods", "", "kube-system", false},
					{"delete", "", "pods", "", ns, false},
					{"get", "", "secrets", "", ns, false},
					{"create", "coordination.k8s.io", "leases", "", ns, elects},
					{"update", "coordination.k8s.io", "leases", lease, ns, elects},
					{"update", "coordination.k8s.io", "leases", "someone-elses-lease", ns, false},
					{"create", "", "events", "", ns, elects},
				}
				for _, objectiveGroup := range []string{"inference.networking.x-k8s.io", "llm-d.ai"} {
					reads := slices.Contains(eppRelease.objectiveGroups, objectiveGroup)
					cases = append(cases,
						access{"list", objectiveGroup, "inferenceobjectives", "", ns, reads},
						access{"watch", objectiveGroup, "inferenceobjectives", "", ns, reads},
						access{"list", objectiveGroup, "inferencemodelrewrites", "", ns, reads && eppRelease.rewrites},
						access{"watch", objectiveGroup, "inferencemodelrewrites", "", ns, reads && eppRelease.rewrites},
						access{"update", objectiveGroup, "inferenceobjectives", "", ns, false})
				}
				user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, api.EndpointPickerName(svc))
				for _, c := range cases {
					// The authorizer's cache sees a new Role shortly after it is written.
					require.NoError(t, waitFor(10*time.Second, func() error {
						review, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
							Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
								ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: c.resource,
									Name: c.name, Namespace: c.namespace}}}, metav1.CreateOptions{})
						if err != nil {
							return err
						}
						if review.Status.Allowed != c.allowed {
							return fmt.Errorf("%s %s/%s %q in %s: allowed=%v, want %v", c.verb, c.group, c.resource, c.name, c.namespace,
								review.Status.Allowed, c.allowed)
						}
						return nil
					}), "%+v", c)
				}
			})
		}
	}
	require.NotZero(t, checked, "the examples include routers")
	require.ElementsMatch(t, eppconfig.Releases(), slices.Collect(maps.Keys(releases)), "the examples hold every release")
}

// TestDisaggSidecarPermissionsAreLeastPrivilege asks the API server's RBAC authorizer what the
// decode leaders' disaggregation sidecar may do with the accounts its RoleBinding names: list and
// watch its pool by name and the namespace's pods (what its SSRF protection's informers do:
// llm-d-router v0.10.0 pkg/sidecar/proxy/allowlist.go), and nothing else.
func TestDisaggSidecarPermissionsAreLeastPrivilege(t *testing.T) {
	clientset, err := kubernetes.NewForConfig(testCluster.config)
	require.NoError(t, err)
	checked := 0
	for file, trees := range exampleTrees(t) {
		for _, tree := range trees {
			var rbac []*unstructured.Unstructured
			var subjects []string
			for _, o := range tree.Objects {
				if !strings.HasSuffix(o.Name, "-disagg-sidecar") {
					continue
				}
				m, err := o.Unstructured()
				require.NoError(t, err)
				rbac = append(rbac, &unstructured.Unstructured{Object: m})
				if binding, ok := o.Object.(*rbacv1.RoleBinding); ok {
					for _, s := range binding.Subjects {
						subjects = append(subjects, s.Name)
					}
				}
			}
			if len(rbac) == 0 {
				continue
			}
			checked++
			t.Run(file, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ns, router := tree.Service.Namespace, tree.Service.Spec.Router()
				require.NoError(t, testCluster.ensureNamespace(ctx, ns))
				for _, obj := range rbac {
					_, err := testCluster.apply(ctx, obj)
					require.NoError(t, err)
				}
				defer func() {
					for _, obj := range rbac {
						_ = testCluster.delete(ctx, obj)
					}
				}()
				pool, group := api.PoolName(tree.Service.Name), router.PoolGroup()
				cases := []access{
					{"list", group, "inferencepools", pool, ns, true},
					{"watch", group, "inferencepools", pool, ns, true},
					{"list", group, "inferencepools", "", ns, false},
					{"update", group, "inferencepools", pool, ns, false},
					{"list", "", "pods", "", ns, true},
					{"watch", "", "pods", "", ns, true},
					{"list", "", "pods", "", "kube-system", false},
					{"delete", "", "pods", "", ns, false},
					{"get", "", "secrets", "", ns, false},
					{"create", "coordination.k8s.io", "leases", "", ns, false},
				}
				require.NotEmpty(t, subjects)
				for _, subject := range subjects {
					user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, subject)
					for _, c := range cases {
						require.NoError(t, waitFor(10*time.Second, func() error {
							review, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
								Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: []string{"system:serviceaccounts", "system:authenticated"},
									ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: c.verb, Group: c.group, Resource: c.resource,
										Name: c.name, Namespace: c.namespace}}}, metav1.CreateOptions{})
							if err != nil {
								return err
							}
							if review.Status.Allowed != c.allowed {
								return fmt.Errorf("%s: %s %s/%s %q in %s: allowed=%v, want %v", subject, c.verb, c.group, c.resource, c.name, c.namespace,
									review.Status.Allowed, c.allowed)
							}
							return nil
						}), "%+v", c)
					}
				}
			})
		}
	}
	require.NotZero(t, checked, "an example routes prefill/decode on llm-d-router")
}
