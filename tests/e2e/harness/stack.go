// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/pkg/v3/display"
	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/components/kubetoken"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/enginetest"
)

// Stack is one Pulumi stack of a program, deployed by the real engine through the wire.
type Stack struct {
	t    testing.TB
	plan *lt.TestPlan
	log  *enginetest.Log
	snap *deploy.Snapshot
	// cli, when set, is where the stack's checkpoint is saved by operations run as the CLI runs
	// them (AsTheCLI)
	cli string
}

// AsTheCLI makes the stack's operations run as the CLI runs them with a local backend, without
// the lifecycle test framework's checks of the engine (enginetest.RunAsTheCLI): for benchmarks,
// which time what a user waits for.
func (s *Stack) AsTheCLI() *Stack {
	s.cli = s.t.TempDir()
	return s
}

// NewStack is a stack of the program, with nothing deployed yet.
func NewStack(t testing.TB, program func(ctx *pulumi.Context) error) *Stack {
	t.Helper()
	w, err := newWire(Cluster.Config)
	require.NoError(t, err)
	return newStack(t, program, func(string) plugin.Provider { return w.provider() })
}

// NewStackOnTheRealProvider is a stack of the program whose engine launches the real
// pulumi-kubernetes provider (testcluster.KubernetesProviderVersion) as its plugin process, in
// place of the wire.
func NewStackOnTheRealProvider(t testing.TB, program func(ctx *pulumi.Context) error) *Stack {
	t.Helper()
	return newStack(t, program, func(engine string) plugin.Provider {
		cmd, err := Cluster.KubernetesProvider(engine)
		require.NoError(t, err)
		return enginetest.LaunchPlugin(t, cmd)
	})
}

func newStack(t testing.TB, program func(ctx *pulumi.Context) error, kubernetes func(engine string) plugin.Provider) *Stack {
	s := &Stack{t: t}
	s.plan, s.log = enginetest.Plan(t, kubernetes, program)
	return s
}

// SetConfig sets the stack's configuration key ("namespace:name") to value, a JSON object when it
// starts with "{", as `pulumi config set [--path]` does: the program reads it, and a provider's
// own keys ("kubernetes:...") configure the engine's default provider of that package.
func (s *Stack) SetConfig(key, value string) *Stack {
	s.t.Helper()
	k, err := config.ParseKey(key)
	require.NoError(s.t, err)
	if s.plan.Config == nil {
		s.plan.Config = config.Map{}
	}
	if strings.HasPrefix(value, "{") {
		s.plan.Config[k] = config.NewObjectValue(value)
	} else {
		s.plan.Config[k] = config.NewValue(value)
	}
	return s
}

// Up runs `pulumi up` and returns the operations of the steps it took (not "same"). A failed
// update's snapshot is kept, so that Destroy removes what it created. An update that failed only
// because the API server lost its connection to a webhook (webhookConnectionLost) is run again
// once, as its user would run `pulumi up` again.
func (s *Stack) Up() []string {
	s.t.Helper()
	steps, err := s.update()
	if err != nil && webhookConnectionLost(err) {
		testcluster.Progress("pulumi up again: the API server lost its connection to a webhook (%v)", err)
		var more []string
		more, err = s.update()
		steps = append(steps, more...)
	}
	require.NoError(s.t, err, "pulumi up\n%s", s.log)
	return steps
}

// update runs `pulumi up` once and keeps the snapshot it returned, failed or not.
func (s *Stack) update() ([]string, error) {
	steps, snap, err := s.run(false)
	if snap != nil {
		s.snap = snap
	}
	return steps, err
}

// webhookConnectionLost: an admission webhook call failed because its connection was closed
// under the API server (a kept-alive connection that the webhook's server closed as idle: both
// sides close at 90 s, controller-runtime pkg/internal/httpserver's IdleTimeout and apimachinery
// pkg/util/net SetTransportDefaults' IdleConnTimeout), which the API server does not retry for a
// create (client-go rest/request.go retries only GETs). It is the cluster's transient, not the
// tree's: the e2e suite saw it once, creating an LWS through LWS's validating webhook.
func webhookConnectionLost(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "failed calling webhook") &&
		(strings.Contains(msg, "write: broken pipe") || strings.Contains(msg, "connection reset by peer"))
}

// Preview runs `pulumi preview` and returns the operations of the steps it would take (not
// "same"), each with the properties the provider's Diff found changed: `pulumi preview
// --expect-no-changes` fails unless it is empty.
func (s *Stack) Preview() []string {
	s.t.Helper()
	steps, _, err := s.run(true)
	require.NoError(s.t, err, "pulumi preview\n%s", s.log)
	return steps
}

// run runs `pulumi up`, or `pulumi preview` when dryRun, and returns the operations of its steps,
// the snapshot the update left (a failed one's too) and its error.
func (s *Stack) run(dryRun bool) ([]string, *deploy.Snapshot, error) {
	s.t.Helper()
	name := "up"
	if dryRun {
		name = "preview"
	}
	var steps []string
	// A step's line: what it does to which resource and, in a preview, the properties it changes.
	step := func(op display.StepOp, urn resource.URN, diffs []resource.PropertyKey) {
		if dryRun {
			steps = append(steps, fmt.Sprintf("%s %s %v", op, urn.Name(), diffs))
		} else {
			steps = append(steps, fmt.Sprintf("%s %s", op, urn.Name()))
		}
	}
	if s.cli != "" {
		snap, err := enginetest.RunAsTheCLI(engine.Update, s.plan, s.plan.GetProject(), s.plan.GetTarget(s.t, s.snap), dryRun, s.cli, step)
		return steps, snap, err
	}
	validate := func(_ workspace.Project, _ deploy.Target, entries engine.JournalEntries, events []engine.Event, err error) error {
		for _, e := range entries {
			if op := e.Step.Op(); op != deploy.OpSame {
				step(op, e.Step.URN(), nil)
			}
		}
		if dryRun { // a preview journals nothing: its steps are in the events
			for _, e := range events {
				if pre, ok := e.Payload().(engine.ResourcePreEventPayload); ok && pre.Metadata.Op != deploy.OpSame {
					step(pre.Metadata.Op, pre.Metadata.URN, pre.Metadata.Diffs)
				}
			}
		}
		return err
	}
	snap, err := lt.TestOp(engine.Update).RunStep(s.plan.GetProject(), s.plan.GetTarget(s.t, s.snap), s.plan.Options, dryRun, nil, validate, name)
	return steps, snap, err
}

// RefreshedStatus runs `pulumi up --refresh` (a refresh, then an update) and returns, per role,
// the phase the component's status then says.
func (s *Stack) RefreshedStatus(name string) map[string]string {
	s.t.Helper()
	s.UpRefresh()
	return s.Phases(name)
}

// UpRefresh runs `pulumi up --refresh`: the children's outputs are read from the cluster again,
// and the component's status with them.
func (s *Stack) UpRefresh() {
	s.t.Helper()
	snap, err := lt.TestOp(engine.Refresh).RunStep(s.plan.GetProject(), s.plan.GetTarget(s.t, s.snap), s.plan.Options, false, nil, nil, "refresh")
	require.NoError(s.t, err, "pulumi refresh\n%s", s.log)
	s.snap = snap
	s.Up()
}

// Destroy runs `pulumi destroy`, then waits until the garbage collector has removed the
// StatefulSets and pods of the LWSs it deleted (TimedDestroy).
func (s *Stack) Destroy() {
	s.t.Helper()
	s.TimedDestroy()
}

// TimedDestroy runs `pulumi destroy` and returns how long it took; then it waits until the
// garbage collector has removed the StatefulSets and pods of the LWSs it deleted and returns how
// long after the destroy that took. A replica's LWS is deleted in the background
// (docs/design/0041-a-destroy-that-does-not-wait-for-pods.md), so the destroy returns before
// its pods are gone; the wait keeps them from holding the nodes of whatever a test deploys next.
func (s *Stack) TimedDestroy() (destroyed, collected time.Duration) {
	s.t.Helper()
	if s.snap == nil { // nothing was deployed: the first update failed before it journaled a step
		return 0, 0
	}
	lwsToken := kubetoken.Of(render.KindLeaderWorkerSet.APIVersion, render.KindLeaderWorkerSet.Kind)
	lwss := map[string]map[string]bool{} // namespace -> names
	for _, r := range s.snap.Resources {
		if string(r.Type) == lwsToken && !r.Delete && r.Outputs["metadata"].IsObject() {
			obj := r.Outputs["metadata"].ObjectValue()
			namespace, name := obj["namespace"].StringValue(), obj["name"].StringValue()
			if lwss[namespace] == nil {
				lwss[namespace] = map[string]bool{}
			}
			lwss[namespace][name] = true
		}
	}
	began := time.Now()
	if s.cli != "" {
		snap, err := enginetest.RunAsTheCLI(engine.Destroy, s.plan, s.plan.GetProject(), s.plan.GetTarget(s.t, s.snap), false, s.cli, nil)
		require.NoError(s.t, err, "pulumi destroy\n%s", s.log)
		s.snap = snap
	} else {
		snap, err := lt.TestOp(engine.Destroy).RunStep(s.plan.GetProject(), s.plan.GetTarget(s.t, s.snap), s.plan.Options, false, nil, nil, "destroy")
		require.NoError(s.t, err, "pulumi destroy\n%s", s.log)
		s.snap = snap
	}
	destroyed = time.Since(began)
	// kube-controller-manager's garbage collector deletes several objects a replica through a
	// client limited to 20 requests a second by default: a thousand took 5 min 52 s.
	lwsCount := 0
	for _, names := range lwss {
		lwsCount += len(names)
	}
	remaining := func() (left []string) {
		for namespace, names := range lwss {
			sets, err := Cluster.Clientset.AppsV1().StatefulSets(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: lwsv1.SetNameLabelKey})
			require.NoError(s.t, err)
			pods, err := Cluster.Clientset.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: lwsv1.SetNameLabelKey})
			require.NoError(s.t, err)
			for _, set := range sets.Items {
				if names[set.Labels[lwsv1.SetNameLabelKey]] {
					left = append(left, "StatefulSet "+namespace+"/"+set.Name)
				}
			}
			for _, pod := range pods.Items {
				if names[pod.Labels[lwsv1.SetNameLabelKey]] {
					left = append(left, "Pod "+namespace+"/"+pod.Name)
				}
			}
		}
		return left
	}
	deadline := time.Now().Add(5*time.Minute + time.Duration(lwsCount)*time.Second)
	for left := remaining(); len(left) > 0; left = remaining() {
		if time.Now().After(deadline) {
			s.t.Fatalf("the garbage collector has not removed the destroyed LWSs' StatefulSets and pods: %d left, %v", len(left), left[:min(len(left), 10)])
		}
		time.Sleep(250 * time.Millisecond)
	}
	return destroyed, time.Since(began) - destroyed
}

// StateBytes is the size of the stack's state after its last operation, as the local backend
// writes it (`pulumi stack export`).
func (s *Stack) StateBytes() int {
	s.t.Helper()
	bytes, err := enginetest.StateBytes(s.snap)
	require.NoError(s.t, err)
	return bytes
}

// Outputs are the outputs of the component resource named name.
func (s *Stack) Outputs(name string) resource.PropertyMap {
	s.t.Helper()
	for _, r := range s.snap.Resources {
		if r.Type == inferenceservice.TypeToken && r.URN.Name() == name {
			return r.Outputs
		}
	}
	s.t.Fatalf("no InferenceService %q in the stack", name)
	return nil
}

// Phases is, per role, the phase the component's status output says.
func (s *Stack) Phases(name string) map[string]string {
	out := map[string]string{}
	status := s.Outputs(name)["status"]
	if !status.IsObject() {
		return out
	}
	for role, v := range status.ObjectValue() {
		out[string(role)] = v.ObjectValue()["phase"].StringValue()
	}
	return out
}

// EnsureNamespace creates a namespace unless it exists (a platform has them before a service).
func EnsureNamespace(t testing.TB, name string) {
	t.Helper()
	_, err := Cluster.Clientset.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}
