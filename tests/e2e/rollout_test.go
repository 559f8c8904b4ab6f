//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/components/topology"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/e2e/harness"
)

// server is a vLLM pod template whose pods kwok makes Ready loadTime after they are scheduled.
func server(image string, loadTime time.Duration, args ...string) k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{
		Metadata: &k8smetav1.ObjectMetaArgs{Annotations: pulumi.StringMap{testcluster.ReadyAfterAnnotation: pulumi.String(loadTime.String())}},
		Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
			Name: pulumi.String("vllm"), Image: pulumi.String(image), Args: pulumi.ToStringArray(args),
			Ports:     k8scorev1.ContainerPortArray{&k8scorev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
			Resources: &k8scorev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("8")}},
		}}},
	}
}

// componentProgram deploys one InferenceService named name from the Args args returns at each run.
func componentProgram(name string, args func() *inferenceservice.Args) func(ctx *pulumi.Context) error {
	return func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewInferenceService(ctx, name, args())
		return err
	}
}

// lwsState is one state of an LWS the watch saw.
type lwsState struct {
	at        time.Time
	name      string
	revision  string // fusioninfer.io/revision: the template the LWS asks for
	available bool   // Available, for the current generation
}

// lwsWatch records every state of the namespace's LWSs from the API server.
type lwsWatch struct {
	mu     sync.Mutex
	states []lwsState
	stop   context.CancelFunc
	done   chan struct{}
}

func watchLeaderWorkerSets(t *testing.T, namespace string) *lwsWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	watch := &lwsWatch{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(watch.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-w.ResultChan():
				if !ok {
					return
				}
				obj, ok := e.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				available, _, _ := harness.HasCondition(obj, "Available", "True")
				watch.mu.Lock()
				watch.states = append(watch.states, lwsState{at: time.Now(), name: obj.GetName(),
					revision: obj.GetLabels()[topology.LabelRevision], available: available})
				watch.mu.Unlock()
			}
		}
	}()
	return watch
}

// end stops the watch and returns what it saw, in order.
func (w *lwsWatch) end() []lwsState {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.states
}

// rollout is what a template change did to one LWS: when its new template arrived, and when it
// was Available again with it.
type rollout struct {
	start, end time.Time
}

// rollouts reads each LWS's update from the states: from the first state with a revision other
// than before[name] to the first Available state after it. LWSs that kept their revision are absent.
func rollouts(states []lwsState, before map[string]string) map[string]rollout {
	out := map[string]rollout{}
	for _, s := range states {
		r, started := out[s.name]
		switch {
		case !started && s.revision != before[s.name]:
			out[s.name] = rollout{start: s.at}
		case started && r.end.IsZero() && s.available && s.revision != before[s.name]:
			r.end = s.at
			out[s.name] = r
		}
	}
	return out
}

// mostUnavailable is the largest number of LWSs not Available at one instant.
func mostUnavailable(states []lwsState) int {
	unavailable := map[string]bool{}
	most := 0
	for _, s := range states {
		unavailable[s.name] = !s.available
		n := 0
		for _, u := range unavailable {
			if u {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// revisions is each LWS's revision label now.
func revisions(t *testing.T, namespace string) map[string]string {
	t.Helper()
	list, err := harness.Cluster.Dynamic.Resource(harness.LeaderWorkerSets).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, item := range list.Items {
		out[item.GetName()] = item.GetLabels()[topology.LabelRevision]
	}
	return out
}

// assertOrdered: every LWS of a later batch started its update after every LWS of the batch
// before was Available with the new template.
func assertOrdered(t *testing.T, done map[string]rollout, batches ...[]string) {
	t.Helper()
	for i := 1; i < len(batches); i++ {
		for _, before := range batches[i-1] {
			for _, after := range batches[i] {
				require.Contains(t, done, before)
				require.Contains(t, done, after)
				assert.False(t, done[before].end.IsZero(), "%s became Available again", before)
				assert.True(t, done[after].start.After(done[before].end),
					"%s started its update (%s) after %s was Available again (%s)", after,
					done[after].start.Format("15:04:05.000"), before, done[before].end.Format("15:04:05.000"))
			}
		}
	}
}

// A template change to a 6-replica role with maxUnavailable 2, on the real LWS controller: three
// batches in order, never more than 2 replicas unavailable; with a partition, the replicas below
// it keep their template.
func TestRolloutOnTheCluster(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, harness.Cluster.AddNodes(ctx, testcluster.Nodes{Prefix: "rollout", Count: 6, GPUs: 8}))
	t.Cleanup(func() { _ = harness.Cluster.DeleteNodes(ctx, "rollout") })
	cases := []struct {
		name      string
		partition *int
		batches   [][]string
		kept      []string
	}{
		{name: "maxUnavailable 2", batches: [][]string{{"chat-chat-0", "chat-chat-1"}, {"chat-chat-2", "chat-chat-3"}, {"chat-chat-4", "chat-chat-5"}}},
		{name: "partition 2", partition: ptr.To(2), batches: [][]string{{"chat-chat-2", "chat-chat-3"}, {"chat-chat-4", "chat-chat-5"}},
			kept: []string{"chat-chat-0", "chat-chat-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			namespace := fmt.Sprintf("rollout-%d", ptr.Deref(tc.partition, 0))
			harness.EnsureNamespace(t, namespace)
			image := "vllm/vllm-openai:v0.11.0"
			s := harness.NewStack(t, componentProgram("chat", func() *inferenceservice.Args {
				return &inferenceservice.Args{Namespace: namespace, Roles: []inferenceservice.RoleArgs{{
					Name: "chat", ComponentType: "worker", Replicas: ptr.To(6),
					RolloutStrategy: &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Partition: tc.partition},
					Template:        server(image, 3*time.Second, "--model", "Qwen/Qwen3-8B"),
				}}}
			}))
			s.Up()
			before := revisions(t, namespace)
			watch := watchLeaderWorkerSets(t, namespace)
			image = "vllm/vllm-openai:v0.11.1"
			s.Up()
			states := watch.end()
			done := rollouts(states, before)
			var rolled []string
			for name := range done {
				rolled = append(rolled, name)
			}
			sort.Strings(rolled)
			var want []string
			for _, b := range tc.batches {
				want = append(want, b...)
			}
			assert.Equal(t, want, rolled, "the replicas that took the new template")
			assertOrdered(t, done, tc.batches...)
			assert.Equal(t, 2, mostUnavailable(states), "never more than maxUnavailable replicas down, and that many at once")
			after := revisions(t, namespace)
			for _, name := range tc.kept {
				assert.Equal(t, before[name], after[name], "%s keeps its template", name)
			}
			for name, phase := range s.Phases("chat") {
				assert.Equal(t, inferenceservice.PhaseRunning, phase, name)
			}
			s.Destroy()
		})
	}
}

// A prefill/decode service rolls on the real controllers in the default order: the gang's minimal
// set (one of each) together, then the other decoders, then the other prefillers.
func TestPrefillDecodeRollsDecodersFirstOnTheCluster(t *testing.T) {
	ctx := context.Background()
	require.NoError(t, harness.Cluster.AddNodes(ctx, testcluster.Nodes{Prefix: "pd", Count: 4, GPUs: 8}))
	t.Cleanup(func() { _ = harness.Cluster.DeleteNodes(ctx, "pd") })
	namespace := "pd-rollout"
	harness.EnsureNamespace(t, namespace)
	image := "vllm/vllm-openai:v0.11.0"
	kv := `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
	s := harness.NewStack(t, componentProgram("pd", func() *inferenceservice.Args {
		role := func(name, componentType string) inferenceservice.RoleArgs {
			return inferenceservice.RoleArgs{Name: name, ComponentType: api.ComponentType(componentType), Replicas: ptr.To(2),
				Template: server(image, 3*time.Second, "--model", "Qwen/Qwen3-32B", "--kv-transfer-config", kv)}
		}
		return &inferenceservice.Args{Namespace: namespace, Roles: []inferenceservice.RoleArgs{role("prefill", "prefiller"), role("decode", "decoder")}}
	}))
	s.Up()
	before := revisions(t, namespace)
	watch := watchLeaderWorkerSets(t, namespace)
	image = "vllm/vllm-openai:v0.11.1"
	s.Up()
	done := rollouts(watch.end(), before)
	assertOrdered(t, done, []string{"pd-decode-0", "pd-prefill-0"}, []string{"pd-decode-1"}, []string{"pd-prefill-1"})
	s.Destroy()
}
