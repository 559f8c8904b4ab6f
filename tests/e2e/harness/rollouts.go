// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
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

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// Server is a vLLM pod template whose pods kwok makes Ready loadTime after they are scheduled.
func Server(image string, loadTime time.Duration, args ...string) k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{
		Metadata: &k8smetav1.ObjectMetaArgs{Annotations: pulumi.StringMap{testcluster.ReadyAfterAnnotation: pulumi.String(loadTime.String())}},
		Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
			Name: pulumi.String("vllm"), Image: pulumi.String(image), Args: pulumi.ToStringArray(args),
			Ports:     k8scorev1.ContainerPortArray{&k8scorev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
			Resources: &k8scorev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("8")}},
		}}},
	}
}

// ComponentProgram deploys one InferenceService named name from the Args args returns at each run.
func ComponentProgram(name string, args func() *inferenceservice.Args) pulumi.RunFunc {
	return func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewInferenceService(ctx, name, args())
		return err
	}
}

// Chat is a service "chat" of one worker role "chat" in namespace: replicas of Qwen3-8B whose
// model loads in loadTime, rolled with strategy, running the image *image holds at each run.
func Chat(namespace string, replicas int, strategy *api.RolloutStrategy, loadTime time.Duration, image *string) pulumi.RunFunc {
	return ComponentProgram("chat", func() *inferenceservice.Args {
		return &inferenceservice.Args{Namespace: namespace, Roles: []inferenceservice.RoleArgs{{
			Name: "chat", ComponentType: "worker", Replicas: &replicas, RolloutStrategy: strategy,
			Template: Server(*image, loadTime, "--model", "Qwen/Qwen3-8B"),
		}}}
	})
}

// LWSState is one state of an LWS the watch saw.
type LWSState struct {
	at        time.Time
	name      string
	revision  string // fusioninfer.io/revision: the template the LWS asks for
	available bool   // Available, for the current generation
}

// LWSWatch records every state of the namespace's LWSs from the API server.
type LWSWatch struct {
	mu     sync.Mutex
	states []LWSState
	stop   context.CancelFunc
	done   chan struct{}
}

func WatchLeaderWorkerSets(t *testing.T, namespace string) *LWSWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := Cluster.Dynamic.Resource(LeaderWorkerSets).Namespace(namespace).Watch(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	watch := &LWSWatch{stop: cancel, done: make(chan struct{})}
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
				available, _, _ := HasCondition(obj, "Available", "True")
				watch.mu.Lock()
				watch.states = append(watch.states, LWSState{at: time.Now(), name: obj.GetName(),
					revision: obj.GetLabels()[render.LabelRevision], available: available})
				watch.mu.Unlock()
			}
		}
	}()
	return watch
}

// EndWhenRolled waits until every pod of the service in namespace is Ready and runs image, and
// every LWS is Available again, then ends the watch. Use it where the deployment does not wait for
// the rollout itself (LWS v0.8.0's waits pass on stale status): the watch must see it all.
func (w *LWSWatch) EndWhenRolled(t *testing.T, namespace, service, image string) []LWSState {
	t.Helper()
	require.Eventually(t, func() bool { return podsRun(t, namespace, service, image) && AllAvailable(t, namespace, service) },
		3*time.Minute, 250*time.Millisecond, "the pods of %s/%s run %s and its LWSs are Available", namespace, service, image)
	return w.End()
}

// podsRun: the service has pods, and every one is Ready and runs image.
func podsRun(t *testing.T, namespace, service, image string) bool {
	t.Helper()
	pods, err := Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: render.LabelService + "=" + service})
	require.NoError(t, err)
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil || !rolestatus.PodReady(&pod) {
			return false
		}
		for _, c := range pod.Spec.Containers {
			if c.Image != image {
				return false
			}
		}
	}
	return len(pods.Items) > 0
}

// End stops the watch and returns what it saw, in order.
func (w *LWSWatch) End() []LWSState {
	w.stop()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.states
}

// Rollout is what a template change did to one LWS: when its new template arrived, and when it
// was Available again with it.
type Rollout struct {
	start, end time.Time
}

// Start is when the LWS's new template arrived.
func (r Rollout) Start() time.Time { return r.start }

// Rollouts reads each LWS's update from the states: from the first state with a revision other
// than before[name] to the first Available state after it. LWSs that kept their revision are absent.
func Rollouts(states []LWSState, before map[string]string) map[string]Rollout {
	out := map[string]Rollout{}
	for _, s := range states {
		r, started := out[s.name]
		switch {
		case !started && s.revision != before[s.name]:
			out[s.name] = Rollout{start: s.at}
		case started && r.end.IsZero() && s.available && s.revision != before[s.name]:
			r.end = s.at
			out[s.name] = r
		}
	}
	return out
}

// MostUnavailable is the largest number of LWSs not Available at one instant.
func MostUnavailable(states []LWSState) int {
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

// Revisions is each LWS's revision label now.
func Revisions(t *testing.T, namespace string) map[string]string {
	t.Helper()
	list, err := Cluster.Dynamic.Resource(LeaderWorkerSets).Namespace(namespace).List(context.Background(), metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]string{}
	for _, item := range list.Items {
		out[item.GetName()] = item.GetLabels()[render.LabelRevision]
	}
	return out
}

// AssertOrdered: every LWS of a later batch started its update after every LWS of the batch
// before was Available with the new template.
func AssertOrdered(t *testing.T, done map[string]Rollout, batches ...[]string) {
	t.Helper()
	for _, pair := range batchPairs(batches) {
		before, after := pair[0], pair[1]
		require.Contains(t, done, before)
		require.Contains(t, done, after)
		assert.False(t, done[before].end.IsZero(), "%s became Available again", before)
		assert.True(t, startedAfter(done, after, before),
			"%s started its update (%s) after %s was Available again (%s)", after,
			done[after].start.Format("15:04:05.000"), before, done[before].end.Format("15:04:05.000"))
	}
}

// Overlaps are the pairs {before, after} of LWSs of consecutive batches where after started its
// update before before was Available again with the new template: what AssertOrdered forbids.
func Overlaps(done map[string]Rollout, batches ...[]string) [][2]string {
	var out [][2]string
	for _, pair := range batchPairs(batches) {
		if _, ok := done[pair[0]]; ok && !startedAfter(done, pair[1], pair[0]) {
			out = append(out, pair)
		}
	}
	return out
}

// batchPairs are the pairs {an LWS of batch i-1, an LWS of batch i}.
func batchPairs(batches [][]string) [][2]string {
	var out [][2]string
	for i := 1; i < len(batches); i++ {
		for _, before := range batches[i-1] {
			for _, after := range batches[i] {
				out = append(out, [2]string{before, after})
			}
		}
	}
	return out
}

// startedAfter: after's update started once before's had ended.
func startedAfter(done map[string]Rollout, after, before string) bool {
	return !done[before].end.IsZero() && done[after].start.After(done[before].end)
}
