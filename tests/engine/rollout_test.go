// SPDX-License-Identifier: Apache-2.0

// Package engine_test drives two successive deployments of an InferenceService through Pulumi's
// engine in-process (pkg/v3's lifecycle test framework, with a fake kubernetes provider) and
// checks the rollout the engine actually performs: how many replicas of a role update at once,
// in which order, and which it leaves alone.
package engine_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/components/inferenceservice"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/kubeprovider"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/enginetest"
)

// update is one LWS write the engine ran: its start and end are numbers of the fake cluster's
// event sequence (gate), not times.
type update struct {
	name       string // the LWS's metadata.name
	start, end int
	awaited    bool // the write waited for the group to be Available (pulumi.com/waitFor)
}

// cluster is a fake kubernetes provider that records the LWS creations and updates. Creating or
// updating an awaited LWS loads its model: the gate holds it until its whole expected batch has
// started, and the write returns once the replica is Available. An update that is not awaited
// returns at once, and its replica stays unavailable until its model has loaded, past the
// deployment's end. A rollout patch's creation finds its replica Available already.
type cluster struct {
	gate    gate
	mu      sync.Mutex
	updates []update
	creates []update // the LWSs created (not their rollout patches)
	created []string // the Pulumi names of the resources created
}

// isLeaderWorkerSet says inputs are a LeaderWorkerSet's: its own, or its rollout Patch's (0018).
func isLeaderWorkerSet(inputs resource.PropertyMap) bool {
	return inputs["kind"].IsString() && inputs["kind"].StringValue() == "LeaderWorkerSet"
}

// isRollout says urn is an LWS's rollout, which loads no model when created: a Patch resource by
// the provider's own rule.
func isRollout(urn resource.URN) bool {
	return kubeprovider.IsPatchResource(urn, "LeaderWorkerSet")
}

// lwsWrite is the LWS write of inputs, if it writes one; loads says the write loads a model.
func (c *cluster) lwsWrite(inputs resource.PropertyMap, loads bool) (update, bool) {
	if !isLeaderWorkerSet(inputs) {
		return update{}, false
	}
	meta := inputs["metadata"].ObjectValue()
	u := update{name: meta["name"].StringValue()}
	if annotations, ok := meta["annotations"]; ok {
		waitFor := annotations.ObjectValue()["pulumi.com/waitFor"]
		u.awaited = waitFor.IsString() && waitFor.StringValue() == "condition=Available"
	}
	if u.awaited && loads {
		u.start = c.gate.enter(u.name)
		u.end = c.gate.leave(u.name)
	} else {
		u.start = c.gate.tick()
		u.end = c.gate.tick()
	}
	return u, true
}

func (c *cluster) provider() *deploytest.Provider {
	return &deploytest.Provider{
		CreateF: func(_ context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
			rollout := isRollout(req.URN)
			u, isLWS := c.lwsWrite(req.Properties, !rollout)
			c.mu.Lock()
			c.created = append(c.created, req.URN.Name())
			if isLWS && !rollout {
				c.creates = append(c.creates, u)
			}
			c.mu.Unlock()
			return plugin.CreateResponse{ID: resource.ID(req.URN.Name()), Properties: req.Properties, Status: resource.StatusOK}, nil
		},
		UpdateF: func(_ context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
			if u, isLWS := c.lwsWrite(req.NewInputs, true); isLWS {
				c.mu.Lock()
				c.updates = append(c.updates, u)
				c.mu.Unlock()
			}
			return plugin.UpdateResponse{Properties: req.NewInputs, Status: resource.StatusOK}, nil
		},
	}
}

// deployTemplateChange runs `pulumi up` of the program built by args with an image, then again
// with a new image (a template change) whose awaited updates must come in the batches expect, and
// returns the LWS updates of the second deployment.
func deployTemplateChange(t *testing.T, args func(image string) *inferenceservice.Args, expect [][]string) []update {
	t.Helper()
	image := "vllm/vllm-openai:v0.33.0"
	fake := deployTwice(t, func() *inferenceservice.Args { return args(image) }, func() { image = "vllm/vllm-openai:v0.33.1" }, expect)
	return fake.updates
}

// deployTwice runs `pulumi up` of the program, changes its Args, and runs it again, its awaited
// writes in the batches expect (the test fails otherwise); the cluster holds what the second
// deployment did.
func deployTwice(t *testing.T, args func() *inferenceservice.Args, change func(), expect [][]string) *cluster {
	t.Helper()
	fake := &cluster{}
	plan, _ := testPlan(t, fake, args)
	snap, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, false, nil, nil, "first")
	require.NoError(t, err)
	require.Empty(t, fake.updates, "the first deployment creates")
	fake.created, fake.creates = nil, nil
	change()
	fake.gate.expect(expect)
	_, err = lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, snap), plan.Options, false, nil, nil, "second")
	require.NoError(t, err)
	assert.Empty(t, fake.gate.problems(), "the engine ran the awaited writes in the expected batches")
	return fake
}

// Scaling up moves replicas to other batches (8 replicas at 25% make batches of 2, not 1), which
// changes only their dependencies: the engine leaves the running replicas alone.
func TestScalingUpCreatesAndUpdatesNothing(t *testing.T) {
	replicas := 4
	// the new replicas load their models together
	fake := deployTwice(t, func() *inferenceservice.Args { return chat(replicas, nil, "")("vllm/vllm-openai:v0.33.0") }, func() { replicas = 8 },
		[][]string{{"svc-chat-4", "svc-chat-5", "svc-chat-6", "svc-chat-7"}})
	assert.Empty(t, fake.updates, "no running replica is touched")
	sort.Strings(fake.created)
	assert.Equal(t, []string{"svc-chat-4", "svc-chat-4-rollout", "svc-chat-5", "svc-chat-5-rollout",
		"svc-chat-6", "svc-chat-6-rollout", "svc-chat-7", "svc-chat-7-rollout"}, fake.created)
}

// A first deployment creates every replica at once, so their models load in parallel, and
// returns when they are all Available; the next template change rolls them in batches.
func TestFirstDeploymentCreatesEveryReplicaAtOnce(t *testing.T) {
	fake := &cluster{}
	image := "vllm/vllm-openai:v0.33.0"
	plan, _ := testPlan(t, fake, func() *inferenceservice.Args { return chat(8, nil, "")(image) })
	fake.gate.expect([][]string{{"svc-chat-0", "svc-chat-1", "svc-chat-2", "svc-chat-3", "svc-chat-4", "svc-chat-5", "svc-chat-6", "svc-chat-7"}})
	snap, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, false, nil, nil, "first")
	require.NoError(t, err)
	require.Len(t, fake.creates, 8)
	assert.Empty(t, fake.gate.problems(), "one wave of creations: every model loads at once")

	image = "vllm/vllm-openai:v0.33.1"
	fake.gate.expect([][]string{{"svc-chat-0", "svc-chat-1"}, {"svc-chat-2", "svc-chat-3"}, {"svc-chat-4", "svc-chat-5"}, {"svc-chat-6", "svc-chat-7"}})
	_, err = lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, snap), plan.Options, false, nil, nil, "second")
	require.NoError(t, err)
	assert.Empty(t, fake.gate.problems(), "the update rolls 25% at a time")
}

// testPlan runs the component with the Args args returns at each run, against the fake cluster.
func testPlan(t *testing.T, fake *cluster, args func() *inferenceservice.Args) (*lt.TestPlan, *enginetest.Log) {
	t.Helper()
	return programPlan(t, fake, func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewInferenceService(ctx, "svc", args())
		return err
	})
}

// programPlan runs the program against the fake cluster.
func programPlan(t testing.TB, fake *cluster, program pulumi.RunFunc) (*lt.TestPlan, *enginetest.Log) {
	t.Helper()
	return enginetest.Plan(t, func(string) plugin.Provider { return fake.provider() }, program)
}

// A preview says how the change it shows will roll, and that a renamed role is replaced.
func TestPreviewSaysHowTheChangeRolls(t *testing.T) {
	args := chat(6, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}, "")
	plan, log := testPlan(t, &cluster{}, func() *inferenceservice.Args { return args("vllm/vllm-openai:v0.33.0") })
	_, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, true, nil, nil, "preview")
	require.NoError(t, err)
	assert.Contains(t, log.String(), "rollout: 3 batches, each after the one before is Available: chat 0-1 -> chat 2-3 -> chat 4-5.")
	assert.Contains(t, log.String(), "A renamed role is not rolled: its replicas' LWSs are replaced")
}

// mostUnavailable is the largest number of the role's replicas unavailable at one event of the
// sequence. A replica is unavailable while its awaited update runs; one whose update is not
// awaited stays unavailable after it, as its new group is still loading the model.
func mostUnavailable(updates []update, role string) int {
	most := 0
	for _, at := range updates {
		n := 0
		for _, u := range updates {
			if roleOf(u.name) == role && at.start >= u.start && (!u.awaited || at.start < u.end) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// roleOf is the role of the LWS svc-{role}-{replica}.
func roleOf(name string) string {
	return strings.TrimPrefix(name[:strings.LastIndex(name, "-")], "svc-")
}

func vllm(image string, args ...string) k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{Spec: &k8scorev1.PodSpecArgs{Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
		Name: pulumi.String("vllm"), Image: pulumi.String(image), Args: pulumi.ToStringArray(args),
		Ports:     k8scorev1.ContainerPortArray{&k8scorev1.ContainerPortArgs{ContainerPort: pulumi.Int(8000), Name: pulumi.String("http")}},
		Resources: &k8scorev1.ResourceRequirementsArgs{Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String("8")}},
	}}}}
}

// chat is one worker role of replicas with a rollout strategy.
func chat(replicas int, strategy *api.RolloutStrategy, await string) func(image string) *inferenceservice.Args {
	return func(image string) *inferenceservice.Args {
		return &inferenceservice.Args{Await: api.AwaitMode(await), Roles: []inferenceservice.RoleArgs{{
			Name: "chat", ComponentType: "worker", Replicas: ptr.To(replicas), RolloutStrategy: strategy,
			Template: vllm(image, "--model", "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "--tensor-parallel-size", "8"),
		}}}
	}
}

func TestSixReplicasWithMaxUnavailable2RollInThreeOrderedBatches(t *testing.T) {
	updates := deployTemplateChange(t, chat(6, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}, ""),
		[][]string{{"svc-chat-0", "svc-chat-1"}, {"svc-chat-2", "svc-chat-3"}, {"svc-chat-4", "svc-chat-5"}})
	assert.Equal(t, 2, mostUnavailable(updates, "chat"))
}

func TestPartitionedReplicasAreLeftAlone(t *testing.T) {
	// replicas 0 and 1 keep their template: the engine updates nothing of theirs
	deployTemplateChange(t, chat(6, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2)), Partition: ptr.To(2)}, ""),
		[][]string{{"svc-chat-2", "svc-chat-3"}, {"svc-chat-4", "svc-chat-5"}})
}

// Without awaits nothing holds an update back: the cost the validation refuses maxUnavailable for.
func TestUnawaitedReplicasRollAllAtOnce(t *testing.T) {
	updates := deployTemplateChange(t, chat(6, nil, "none"), nil)
	assert.Len(t, updates, 6)
	assert.Equal(t, 6, mostUnavailable(updates, "chat"), "every replica reloads its model at once")
}

// disaggregated is prefill and decode, 3 replicas each, single-node, with a rollout order.
func disaggregated(rolloutOrder ...string) func(image string) *inferenceservice.Args {
	kv := `{"kv_connector":"NixlConnector","kv_role":"kv_both"}`
	return func(image string) *inferenceservice.Args {
		return &inferenceservice.Args{RolloutOrder: rolloutOrder, Roles: []inferenceservice.RoleArgs{
			{Name: "prefill", ComponentType: "prefiller", Replicas: ptr.To(3),
				Template: vllm(image, "--model", "Qwen/Qwen3-32B", "--kv-transfer-config", kv)},
			{Name: "decode", ComponentType: "decoder", Replicas: ptr.To(3),
				Template: vllm(image, "--model", "Qwen/Qwen3-32B", "--kv-transfer-config", kv)},
		}}
	}
}

func TestPrefillDecodeRollInRoleOrder(t *testing.T) {
	t.Run("default: decoders, then prefillers", func(t *testing.T) {
		updates := deployTemplateChange(t, disaggregated(), [][]string{
			{"svc-decode-0", "svc-prefill-0"}, // the gang's minimal set, created and so updated together
			{"svc-decode-1"}, {"svc-decode-2"}, {"svc-prefill-1"}, {"svc-prefill-2"},
		})
		assert.Equal(t, 1, mostUnavailable(updates, "decode"), "25% of 3, at least 1")
		assert.Equal(t, 1, mostUnavailable(updates, "prefill"))
	})
	t.Run("declared: prefillers first", func(t *testing.T) {
		deployTemplateChange(t, disaggregated("prefill"), [][]string{
			{"svc-decode-0", "svc-prefill-0"},
			{"svc-prefill-1"}, {"svc-prefill-2"}, {"svc-decode-1"}, {"svc-decode-2"},
		})
	})
}

// loading is a fake kubernetes provider whose replicas load their models once created: an LWS's
// creation starts its load, and a write that waits for the replica (pulumi.com/waitFor without
// pulumi.com/skipAwait in its inputs, as the provider reads them: metadata/overrides.go
// ReadyCondition) returns once it is Available. A model loads until every replica has started
// loading, or for a second when one has not: a wait that begins before the last replica is
// created makes that replica's model load after the others'.
type loading struct {
	replicas int
	all      chan struct{}

	mu                    sync.Mutex
	seq                   int // the sequence of creations and waits
	created, lastCreated  int
	firstWait, loadsAfter int // loadsAfter: waits that outlasted a load (some replica was not yet created)
}

func (f *loading) provider() *deploytest.Provider {
	return &deploytest.Provider{
		CreateF: func(_ context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
			if isLeaderWorkerSet(req.Properties) && !req.Preview {
				if !isRollout(req.URN) {
					f.mu.Lock()
					f.seq++
					f.created, f.lastCreated = f.created+1, f.seq
					if f.created == f.replicas {
						close(f.all)
					}
					f.mu.Unlock()
				}
				if waits(req.Properties) {
					f.wait()
				}
			}
			return plugin.CreateResponse{ID: resource.ID(req.URN.Name()), Properties: req.Properties, Status: resource.StatusOK}, nil
		},
	}
}

// wait holds the step until every replica is loading, or for a second.
func (f *loading) wait() {
	f.mu.Lock()
	f.seq++
	if f.firstWait == 0 {
		f.firstWait = f.seq
	}
	f.mu.Unlock()
	select {
	case <-f.all:
	case <-time.After(time.Second):
		f.mu.Lock()
		f.loadsAfter++
		f.mu.Unlock()
	}
}

// waits says the provider waits for the object written with inputs.
func waits(inputs resource.PropertyMap) bool {
	annotations, ok := inputs["metadata"].ObjectValue()["annotations"]
	if !ok {
		return false
	}
	a := annotations.ObjectValue()
	skip := a["pulumi.com/skipAwait"]
	return a["pulumi.com/waitFor"].IsString() && (!skip.IsString() || skip.StringValue() != "true")
}

// The engine runs `pulumi up --parallel` steps at once, and each wait holds one until its replica
// is Available. A first deployment of four times that many replicas still loads every model at
// once: each replica's LWS is created without a wait, and the first batch's rollouts wait only
// once every replica is created (barrier 0), so no wait holds back a creation
// (docs/design/0040-every-replica-loads-before-any-wait.md). An update's batch still rolls that
// many at a time, and the preview says so, with the flag that lets them roll together.
func TestFirstDeploymentLoadsEveryModelAtOnceWhateverTheParallelism(t *testing.T) {
	fake := &loading{all: make(chan struct{})}
	var args func(image string) *inferenceservice.Args
	plan, log := enginetest.Plan(t, func(string) plugin.Provider { return fake.provider() }, func(ctx *pulumi.Context) error {
		_, err := inferenceservice.NewInferenceService(ctx, "svc", args("vllm/vllm-openai:v0.33.0"))
		return err
	})
	// the CLI's default (4 x GOMAXPROCS) or PULUMI_PARALLEL, as enginetest.Plan took it
	parallel := int(plan.Options.Parallel)
	replicas := 4 * parallel
	fake.replicas = replicas
	args = chat(replicas, &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromString("100%"))}, "")
	_, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, true, nil, nil, "preview")
	require.NoError(t, err)
	assert.Contains(t, log.String(), fmt.Sprintf("this deployment runs %d resource operations at once", parallel))
	assert.Contains(t, log.String(), fmt.Sprintf("a rollout batch of %d rolls %d at a time", replicas, parallel))
	assert.NotContains(t, log.String(), "a first deployment creates")
	assert.Contains(t, log.String(), fmt.Sprintf("Run pulumi up with --parallel %d or more", replicas))

	_, err = lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, false, nil, nil, "up")
	require.NoError(t, err)
	assert.Equal(t, replicas, fake.created)
	assert.Greater(t, fake.firstWait, fake.lastCreated, "every replica was created before the first wait began")
	assert.Zero(t, fake.loadsAfter, "waits that outlasted a model load: replicas created after others were waited for")
}

// A preview of a service with more objects than the kubernetes provider's client sends in one
// burst says that the client's request rate bounds it, unless the stack sets the rate
// (kubernetes:kubeClientSettings, which the engine also hands the provider).
func TestPreviewSaysTheProvidersRequestRateBoundsIt(t *testing.T) {
	t.Setenv("PULUMI_K8S_CLIENT_QPS", "")
	preview := func(replicas int, settings string) string {
		args := chat(replicas, nil, "")
		plan, log := testPlan(t, &cluster{}, func() *inferenceservice.Args { return args("vllm/vllm-openai:v0.33.0") })
		if settings != "" {
			plan.Config = config.Map{config.MustMakeKey("kubernetes", "kubeClientSettings"): config.NewObjectValue(settings)}
		}
		_, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, true, nil, nil, "preview")
		require.NoError(t, err)
		return log.String()
	}
	const says = "the kubernetes provider sends the API server at most 50 requests a second after a burst of 120"
	said := preview(130, "")
	assert.Contains(t, said, says+" (its kubeClientSettings' defaults)")
	assert.Contains(t, said, "a preview of this service's 130 objects as new takes at least 1 s") // 130 LWSs: (130 - 120) / 50 s
	assert.NotContains(t, preview(119, ""), says)
	assert.NotContains(t, preview(130, `{"qps":500,"burst":1000}`), says)
}
