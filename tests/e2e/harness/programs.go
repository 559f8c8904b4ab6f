// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// ManifestServices are the services of a manifest file, in api.DefaultNamespace where they name
// none (as the CLI renders them).
func ManifestServices(t testing.TB, path string) []*api.InferenceService {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	var services []*api.InferenceService
	for _, doc := range docs {
		services = append(services, render.WithDefaults(doc.Service))
	}
	return services
}

// ServicesProgram deploys each service's component from its decoded spec, as program/ does.
func ServicesProgram(services ...*api.InferenceService) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		for _, svc := range services {
			if _, err := inferenceservice.NewFromService(ctx, svc.Name, svc, nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// AssertProgramRuns deploys program, which deploys the services of manifest, onto the cluster
// with what a platform has in place for them (PreparePlatform), through the real kubernetes
// provider: `pulumi up` returns (with await minimal once the minimal set runs; `pulumi up
// --refresh` then reads the rest), the component's status says Running for every role (from the
// real LWSs' status; ScaledToZero for a role at minReplicas 0, which no request has woken), a second `pulumi up` takes no step and three previews after it find no
// change (the provider's Diff against the state its Create returned), and `pulumi destroy` leaves
// nothing of the services behind.
func AssertProgramRuns(t *testing.T, program pulumi.RunFunc, manifest string) {
	t.Helper()
	services := ManifestServices(t, manifest)
	for _, svc := range services {
		PreparePlatform(t, svc)
	}
	s := NewStackOnTheRealProvider(t, program)
	s.Up()
	for _, svc := range services {
		if svc.Spec.AwaitMode() != api.AwaitAll {
			require.Eventually(t, func() bool { return AllAvailable(t, svc.Namespace, svc.Name) }, 3*time.Minute, time.Second,
				"every replica of %s runs", svc.Name)
			s.UpRefresh()
		}
	}
	for _, svc := range services {
		phases := s.Phases(svc.Name)
		require.NotEmpty(t, phases, "%s has a status", svc.Name)
		for role, phase := range phases {
			want := inferenceservice.PhaseRunning
			if r := svc.Spec.RoleNamed(role); r != nil && r.ScalesToZero() { // idle until a request comes
				want = inferenceservice.PhaseScaledToZero
			}
			assert.Equal(t, want, phase, "%s role %s", svc.Name, role)
		}
	}
	assert.Empty(t, s.Up(), "a second deployment takes no step")
	for i := range 3 {
		assert.Empty(t, s.Preview(), "preview %d after a deployment finds no change", i+1)
	}
	s.Destroy()
	for _, svc := range services {
		assert.Empty(t, leftBehind(t, svc.Namespace, svc.Name), "destroy leaves nothing of %s", svc.Name)
	}
}

// AllAvailable says whether every LWS of the service is Available.
func AllAvailable(t *testing.T, namespace, service string) bool {
	t.Helper()
	list, err := Cluster.Dynamic.Resource(LeaderWorkerSets).Namespace(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: render.LabelService + "=" + service})
	require.NoError(t, err)
	for i := range list.Items {
		if ok, _, _ := HasCondition(&list.Items[i], "Available", "True"); !ok {
			return false
		}
	}
	return len(list.Items) > 0
}

// LeaderWorkerSets is the LWS resource.
var LeaderWorkerSets = schema.GroupVersionResource{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"}

// The kinds a service owns, to check that a destroy leaves none behind.
var ownedKinds = []schema.GroupVersionResource{
	LeaderWorkerSets,
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "configmaps"},
	{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
}

// leftBehind lists the objects of the namespace's kinds above whose name starts with the
// service's.
func leftBehind(t *testing.T, namespace, service string) []string {
	t.Helper()
	var out []string
	for _, gvr := range ownedKinds {
		list, err := Cluster.Dynamic.Resource(gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, item := range list.Items {
			if strings.HasPrefix(item.GetName(), service) {
				out = append(out, gvr.Resource+"/"+item.GetName())
			}
		}
	}
	return out
}
