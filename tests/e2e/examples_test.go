//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// manifestProgram is the root program (deploy/) for a manifest's services: each service's
// component, built from the decoded manifest.
func manifestProgram(t *testing.T, path string) (func(ctx *pulumi.Context) error, []*api.InferenceService) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	var services []*api.InferenceService
	for _, doc := range docs {
		if doc.Service.Namespace == "" {
			doc.Service.Namespace = "default"
		}
		services = append(services, doc.Service)
	}
	return servicesProgram(services...), services
}

// servicesProgram deploys each service's component from its decoded spec, as deploy/ does.
func servicesProgram(services ...*api.InferenceService) func(ctx *pulumi.Context) error {
	return func(ctx *pulumi.Context) error {
		for _, svc := range services {
			if _, err := inferenceservice.NewFromService(ctx, svc.Name, svc, nil); err != nil {
				return err
			}
		}
		return nil
	}
}

// allAvailable says whether every LWS of the service is Available.
func allAvailable(t *testing.T, namespace, service string) bool {
	t.Helper()
	list, err := testCluster.Dynamic.Resource(lwsResource).Namespace(namespace).List(context.Background(),
		metav1.ListOptions{LabelSelector: topology.LabelService + "=" + service})
	require.NoError(t, err)
	for i := range list.Items {
		if ok, _, _ := hasCondition(&list.Items[i], "Available", "True"); !ok {
			return false
		}
	}
	return len(list.Items) > 0
}

// The kinds a service owns, to check that a destroy leaves none behind.
var ownedKinds = []schema.GroupVersionResource{
	{Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
	{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "configmaps"},
	{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"},
	{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"},
}

// leftBehind lists the objects of the namespace's kinds above that carry the service's label or
// name prefix.
func leftBehind(t *testing.T, namespace, service string) []string {
	t.Helper()
	var out []string
	for _, gvr := range ownedKinds {
		list, err := testCluster.Dynamic.Resource(gvr).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, item := range list.Items {
			if strings.HasPrefix(item.GetName(), service) {
				out = append(out, gvr.Resource+"/"+item.GetName())
			}
		}
	}
	return out
}

// Every example manifest, deployed through the engine: the deployment returns when every role
// runs (with await minimal, once its minimal set does: `pulumi up --refresh` then reads the rest),
// the status output says Running for every role (from the real LWSs' status), a second
// deployment takes no step, and a destroy leaves nothing behind.
func TestExamplesDeployRunAndLeaveNothing(t *testing.T) {
	addNodesWithTopology(t, "examples", 40, 8)
	files, err := filepath.Glob(filepath.Join(testcluster.RepositoryRoot(), "examples", "manifests", "*.yaml"))
	require.NoError(t, err)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			program, services := manifestProgram(t, file)
			for _, svc := range services {
				preparePlatform(t, svc)
			}
			s := newStack(t, program)
			s.up()
			for _, svc := range services {
				if svc.Spec.AwaitMode() != api.AwaitAll {
					require.Eventually(t, func() bool { return allAvailable(t, svc.Namespace, svc.Name) }, 3*time.Minute, time.Second,
						"every replica of %s runs", svc.Name)
					s.upRefresh()
				}
			}
			for _, svc := range services {
				phases := s.phases(svc.Name)
				require.NotEmpty(t, phases, "%s has a status", svc.Name)
				for role, phase := range phases {
					assert.Equal(t, inferenceservice.PhaseRunning, phase, "%s role %s", svc.Name, role)
				}
			}
			assert.Empty(t, s.up(), "a second deployment takes no step")
			s.destroy()
			for _, svc := range services {
				assert.Empty(t, leftBehind(t, svc.Namespace, svc.Name), "destroy leaves nothing of %s", svc.Name)
			}
		})
	}
}
