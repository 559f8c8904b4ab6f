// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/apiextensions"
	"github.com/pulumi/pulumi/sdk/v3/go/common/promise"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// waitFailures gives, when a replica's wait fails, the component's own error beside the kubernetes
// provider's: which replica of which role, what `pulumi up` waited for and how long, the causes
// the provider reported, and the command that says why (docs/design/0016-status-from-the-cluster.md).
//
// It hears of a failure two ways. The engine calls the component's error hook (Pulumi's OnError
// resource hook, engine v3.217) on the failed create or update, before it stops the deployment:
// this is the only way under a real engine, which never answers the failed registration to the
// program (pkg/resource/deploy/step_executor.go cancelDueToError cancels the deployment;
// source_eval.go RegisterResource then waits on a step that is never done). Or the child's
// outputs are rejected, as Pulumi's mocks do when a registration fails: mocks cannot register a
// hook (sdk/go/pulumi/mocks.go RegisterErrorHook panics "not implemented").
type waitFailures struct {
	ctx       *pulumi.Context
	name      string // the component's
	component *InferenceService
	service   *api.InferenceService // with defaults: its namespace is the children's
	// replicas are the awaited LWSs by the Pulumi names of their resources (an LWS rolled in
	// batches has two: the LWS and its rollout).
	replicas map[string]render.Ref
	hook     *pulumi.ErrorHook
	reported sync.Map // ref.Suffix -> true: one message a replica
}

// newWaitFailures registers the component's error hook, named after the component (hook names
// are unique in a deployment), when the service awaits a replica and the engine can call it.
func newWaitFailures(ctx *pulumi.Context, name string, component *InferenceService, shape *api.InferenceService, refs []render.Ref) (*waitFailures, error) {
	w := &waitFailures{ctx: ctx, name: name, component: component, service: render.WithDefaults(shape), replicas: map[string]render.Ref{}}
	for _, ref := range refs {
		if ref.TypeMeta == render.KindLeaderWorkerSet && ref.Awaited {
			w.replicas[name+"-"+ref.Suffix] = ref
			if ref.RolledInBatches() {
				w.replicas[name+"-"+ref.Suffix+"-rollout"] = ref
			}
		}
	}
	if len(w.replicas) == 0 || ctx.RunningWithMocks() {
		return w, nil
	}
	hook, err := ctx.RegisterErrorHook(TypeToken+"::"+name+"::wait-failed", w.onError)
	if err != nil {
		return nil, err
	}
	if hookRegistered(ctx, hook) {
		w.hook = hook
	}
	return w, nil
}

// hookRegistered waits for the engine's answer to the hook's registration. A resource bound to a
// hook the engine refused fails to register (sdk/go/pulumi resource_hooks.go marshalResourceHooks),
// so a refused hook is not bound: a Pulumi CLI before v3.217 has no error hooks (the SDK refuses
// them, context.go registerErrorHook), and pulumi-go-provider's test monitor does not implement
// their registration (integration/fake monitor.go). Without the hook the replica is still
// reported when its outputs are rejected. The SDK keeps the answer in the hook's unexported
// promise, which is read here; if it cannot be read, the hook is not bound.
func hookRegistered(ctx *pulumi.Context, hook *pulumi.ErrorHook) bool {
	field := reflect.ValueOf(hook).Elem().FieldByName("registered")
	if !field.IsValid() || !field.CanAddr() {
		return false
	}
	registered, ok := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem().Interface().(*promise.Promise[struct{}])
	if !ok || registered == nil {
		return false
	}
	_, err := registered.Result(ctx.Context())
	return err == nil
}

// option binds the error hook to an awaited LWS's resources.
func (w *waitFailures) option(ref render.Ref) []pulumi.ResourceOption {
	if w.hook == nil || ref.TypeMeta != render.KindLeaderWorkerSet || !ref.Awaited {
		return nil
	}
	return []pulumi.ResourceOption{pulumi.ResourceHooks(&pulumi.ResourceHookBinding{OnError: []*pulumi.ErrorHook{w.hook}})}
}

// onError is the error hook: it reports a failed create or update of an awaited replica and asks
// for no retry, so the provider's error stands. Errors are newest first.
func (w *waitFailures) onError(args *pulumi.ErrorHookArgs) (bool, error) {
	ref, ok := w.replicas[args.Name]
	if !ok || args.FailedOperation == "delete" || len(args.Errors) == 0 {
		return false, nil
	}
	return false, w.report(ref, args.Errors[0])
}

// watch reports the replica when the registration of its resource res fails on its own: not
// when one of its dependencies failed, which rejects its outputs with that one's error. Its
// dependencies are dependsOn and the resources dependsOnInputs resolve to (a first-batch
// rollout's barrier 0). An output of the context waits for them, so the program ends only after
// the report is sent.
func (w *waitFailures) watch(ref render.Ref, res *apiextensions.CustomResource, dependsOn []pulumi.Resource, dependsOnInputs ...pulumi.ResourceArrayOutput) {
	if ref.TypeMeta != render.KindLeaderWorkerSet || !ref.Awaited {
		return
	}
	_, resolve, _ := w.ctx.NewOutput()
	go func() {
		defer resolve(nil)
		dependencies := slices.Clone(dependsOn)
		for _, o := range dependsOnInputs {
			resources, _, err := awaitOutput(w.ctx, o)
			if err != nil {
				return
			}
			if resources, ok := resources.([]pulumi.Resource); ok {
				dependencies = append(dependencies, resources...)
			}
		}
		for _, dependency := range dependencies {
			if _, _, err := awaitOutput(w.ctx, dependency.URN()); err != nil {
				return
			}
		}
		if _, _, err := awaitOutput(w.ctx, res.URN()); err != nil {
			_ = w.report(ref, err.Error())
		}
	}()
}

// report logs the component's message about the replica once, as an error of the component.
func (w *waitFailures) report(ref render.Ref, failure string) error {
	if _, done := w.reported.LoadOrStore(ref.Suffix, true); done {
		return nil
	}
	return w.ctx.Log.Error(waitFailedMessage(w.service, ref, failure), &pulumi.LogArgs{Resource: w.component})
}

// waitFailedMessage is the component's word on a replica whose wait failed: the replica and its
// role, the LWS, the wait (condition, awaitTimeout), what the provider reported, and the command
// that reads the cause from the cluster.
func waitFailedMessage(svc *api.InferenceService, ref render.Ref, failure string) string {
	timeout := svc.Spec.RoleAwaitTimeout(svc.Spec.RoleNamed(ref.Role))
	return fmt.Sprintf("replica %d of role %q (LeaderWorkerSet %s/%s) failed while `pulumi up` waited up to %s (awaitTimeout) "+
		"for it to be %s; the kubernetes provider reported: %s. What holds it back, and the fix: fusioninfer status --name %s --namespace %s",
		ref.Replica, ref.Role, ref.Namespace, ref.Name, durationText(timeout), render.WaitForAvailable,
		providerCauses(failure), svc.Name, svc.Namespace)
}

// providerCauses is what a failed operation's error says beyond the engine's and the provider's
// framing: the engine joins a partial failure's reasons as a list ("1 error occurred:\n\t* ...",
// pkg/resource/plugin provider_plugin.go InitError); the provider's first reason wraps the
// await's error ("resource ... was successfully created, but the Kubernetes API server reported
// that it failed to fully initialize or become live: ...", pulumi-kubernetes
// provider/pkg/provider/provider.go Create and Update), the others are the await's own findings
// (a condition, a pod's state: provider.go partialError, await.AggregatedError).
func providerCauses(failure string) string {
	var reasons []string
	for _, line := range strings.Split(failure, "\n") {
		if reason, ok := strings.CutPrefix(strings.TrimSpace(line), "* "); ok {
			reasons = append(reasons, reason)
		}
	}
	if len(reasons) == 0 {
		reasons = []string{strings.TrimSpace(failure)}
	}
	const framing = "failed to fully initialize or become live: "
	if _, cause, found := strings.Cut(reasons[0], framing); found {
		reasons[0] = cause
	}
	return strings.Join(reasons, "; ")
}

// durationText is a wait's length as a user writes it: 40s, 90m, 2h.
func durationText(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
