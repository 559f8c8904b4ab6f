//go:build conformance

package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
)

// access is one request the Endpoint Picker might make, and whether RBAC must allow it.
type access struct {
	verb, group, resource, name, namespace string
	allowed                                bool
}

// TestEndpointPickerPermissionsAreLeastPrivilege asks the API server's own RBAC authorizer what
// each example's Endpoint Picker account may do: exactly what the EPP needs (its pool by name,
// which is how the EPP lists and watches it; the namespace's pods and objectives; a lease of its
// own when it elects a leader), and nothing else.
func TestEndpointPickerPermissionsAreLeastPrivilege(t *testing.T) {
	clientset, err := kubernetes.NewForConfig(testCluster.config)
	require.NoError(t, err)
	checked := 0
	for file, trees := range exampleTrees(t) {
		for _, tree := range trees {
			router := tree.Service.Spec.Router()
			if router == nil {
				continue
			}
			checked++
			t.Run(file, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				ns, svc := tree.Service.Namespace, tree.Service.Name
				require.NoError(t, testCluster.ensureNamespace(ctx, ns))
				var rbac []*unstructured.Unstructured
				for _, o := range tree.Objects {
					switch o.TypeMeta {
					case topology.KindServiceAccount, topology.KindRole, topology.KindRoleBinding:
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
				lease := fmt.Sprintf("epp-%s-%s.gateway-api-inference-extension.sigs.k8s.io", ns, pool)
				elects := router.EndpointPickerReplicas() > 1
				cases := []access{
					{"get", group, "inferencepools", pool, ns, true},
					{"list", group, "inferencepools", pool, ns, true},
					{"watch", group, "inferencepools", pool, ns, true},
					{"list", group, "inferencepools", "", ns, false},
					{"get", group, "inferencepools", "another-pool", ns, false},
					{"update", group, "inferencepools", pool, ns, false},
					{"list", "inference.networking.x-k8s.io", "inferenceobjectives", "", ns, true},
					{"watch", "", "pods", "", ns, true},
					{"list", "", "pods", "", "kube-system", false},
					{"delete", "", "pods", "", ns, false},
					{"get", "", "secrets", "", ns, false},
					{"create", "coordination.k8s.io", "leases", "", ns, elects},
					{"update", "coordination.k8s.io", "leases", lease, ns, elects},
					{"update", "coordination.k8s.io", "leases", "someone-elses-lease", ns, false},
					{"create", "", "events", "", ns, elects},
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
}
