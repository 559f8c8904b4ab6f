// SPDX-License-Identifier: Apache-2.0

package inferenceservice

import (
	"os"
	"strings"
	"testing"

	k8scorev1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/core/v1"
	k8smetav1 "github.com/pulumi/pulumi-kubernetes/sdk/v4/go/kubernetes/meta/v1"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
)

const (
	typeLWS      = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet"
	typeRollout  = "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch"
	typeBarrier  = "pulumi:index:Stash"
	typePodGroup = "kubernetes:scheduling.volcano.sh/v1beta1:PodGroup"
)

func vllmTemplate(tensorParallel string, kvRole string, gpus string) k8scorev1.PodTemplateSpecInput {
	return &k8scorev1.PodTemplateSpecArgs{
		Spec: &k8scorev1.PodSpecArgs{
			Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
				Name:  pulumi.String("vllm"),
				Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
				Args: pulumi.StringArray{
					pulumi.String("--model"), pulumi.String("deepseek-ai/DeepSeek-R1"),
					pulumi.String("--tensor-parallel-size"), pulumi.String(tensorParallel),
					pulumi.String("--kv-transfer-config"),
					pulumi.String(`{"kv_connector":"PyNcclConnector","kv_role":"` + kvRole + `"}`),
				},
				Ports: k8scorev1.ContainerPortArray{&k8scorev1.ContainerPortArgs{
					ContainerPort: pulumi.Int(8000), Name: pulumi.String("http"),
				}},
				Resources: &k8scorev1.ResourceRequirementsArgs{
					Limits: pulumi.StringMap{"nvidia.com/gpu": pulumi.String(gpus)},
				},
			}},
		},
	}
}

// story4Args is story 4 of the fusioninfer InferenceService design written with the Go API.
func story4Args() *Args {
	one, two := 1, 2
	return &Args{Roles: []RoleArgs{
		{Name: "prefill", ComponentType: "prefiller", Replicas: &one, Multinode: &api.Multinode{NodeCount: 2},
			Template: vllmTemplate("16", "kv_producer", "8")},
		{Name: "decode", ComponentType: "decoder", Replicas: &two, Multinode: &api.Multinode{NodeCount: 4},
			Template: vllmTemplate("32", "kv_consumer", "8")},
	}}
}

// lwsStatus is an LWS status output as the LWS controller writes it.
func lwsStatus(ready int, conditionType string) resource.PropertyMap {
	return resource.PropertyMap{"status": resource.NewObjectProperty(resource.PropertyMap{
		"readyReplicas": resource.NewNumberProperty(float64(ready)),
		"replicas":      resource.NewNumberProperty(1),
		"conditions": resource.NewArrayProperty([]resource.PropertyValue{resource.NewObjectProperty(resource.PropertyMap{
			"type": resource.NewStringProperty(conditionType), "status": resource.NewStringProperty("True"),
		})}),
	})}
}

func TestChildrenParentsDependenciesAndStatus(t *testing.T) {
	// The status comes from each replica's rollout, its latest state; the LWS resources report
	// what they saw when they were created, before the rollout.
	monitor := &pulumimock.Monitor{Outputs: func(r pulumimock.Resource) resource.PropertyMap {
		switch r.Name {
		case "deepseek-r1-disagg-prefill-0-rollout", "deepseek-r1-disagg-decode-0-rollout":
			return lwsStatus(1, "Available")
		case "deepseek-r1-disagg-decode-1-rollout":
			return lwsStatus(0, "Progressing")
		case "deepseek-r1-disagg-decode-1":
			return lwsStatus(1, "Available")
		}
		return nil
	}}
	var status map[string]RoleStatus
	var names map[string][]string
	var gpusFull, gpusMinimal any
	err := monitor.Run(func(ctx *pulumi.Context) error {
		svc, err := NewInferenceService(ctx, "deepseek-r1-disagg", story4Args())
		if err != nil {
			return err
		}
		gpusFull, _, _ = pulumimock.Await(ctx.Context(), svc.GPUsAtFullSize)
		gpusMinimal, _, _ = pulumimock.Await(ctx.Context(), svc.GPUsMinimal)
		v, known, err := pulumimock.Await(ctx.Context(), svc.Status)
		require.NoError(t, err)
		require.True(t, known)
		status = v.(map[string]RoleStatus)
		v, _, err = pulumimock.Await(ctx.Context(), svc.LeaderWorkerSetNames)
		require.NoError(t, err)
		names = v.(map[string][]string)
		return nil
	})
	require.NoError(t, err)

	component, ok := monitor.Find("deepseek-r1-disagg")
	require.True(t, ok)
	assert.Equal(t, TypeToken, component.Type)
	assert.False(t, component.Custom)

	var children []string
	for _, r := range monitor.Resources() {
		if r.Custom {
			children = append(children, r.Type+" "+r.Name)
			assert.Equal(t, component.URN(), r.ParentURN, "%s is parented to the component", r.Name)
		}
	}
	// The engine registers concurrently; the order that matters is the dependency on the PodGroup.
	assert.ElementsMatch(t, []string{
		typePodGroup + " deepseek-r1-disagg-podgroup",
		typeLWS + " deepseek-r1-disagg-prefill-0",
		typeLWS + " deepseek-r1-disagg-decode-0",
		typeLWS + " deepseek-r1-disagg-decode-1",
		typeRollout + " deepseek-r1-disagg-prefill-0-rollout",
		typeRollout + " deepseek-r1-disagg-decode-0-rollout",
		typeRollout + " deepseek-r1-disagg-decode-1-rollout",
		typeBarrier + " deepseek-r1-disagg-batch-0-done",
		typeBarrier + " deepseek-r1-disagg-batch-1-done",
	}, children)

	podGroup, _ := monitor.Find("deepseek-r1-disagg-podgroup")
	created, _ := monitor.Find("deepseek-r1-disagg-batch-0-done")
	for _, name := range []string{"deepseek-r1-disagg-prefill-0", "deepseek-r1-disagg-decode-0", "deepseek-r1-disagg-decode-1"} {
		lws, _ := monitor.Find(name)
		assert.Equal(t, []string{string(podGroup.URN())}, lws.Dependencies, "%s is created after the PodGroup, with the other replicas", name)
		assert.Equal(t, []string{"metadata.labels", "metadata.annotations", "spec"}, lws.IgnoreChanges, "its rollout applies every change")
		rollout, _ := monitor.Find(name + "-rollout")
		assert.Contains(t, rollout.Dependencies, string(lws.URN()), "%s is rolled once it exists", name)
		assert.Contains(t, created.Dependencies, string(lws.URN()), "barrier 0 is passed once %s is created", name)
		meta := rollout.Inputs["metadata"].Mappable().(map[string]any)
		assert.Equal(t, name, meta["name"])
		assert.Equal(t, "default", meta["namespace"])
		assert.Equal(t, map[string]any{"pulumi.com/waitFor": "condition=Available", "pulumi.com/timeoutSeconds": "3600", "pulumi.com/patchForce": "true"}, meta["annotations"],
			"awaited for an hour by default: a model loads for longer than the provider's 10 minutes")
		// The LWS resource creates without waiting and is deleted in the background; its inputs
		// are the rollout's and those two directives, so the rollout's first apply changes
		// nothing it created (0018, 0040, 0041).
		withoutWait := rollout.Inputs.Copy()
		withoutWait["metadata"].ObjectValue()["annotations"] = resource.NewObjectProperty(
			withoutWait["metadata"].ObjectValue()["annotations"].ObjectValue().Copy())
		withoutWait["metadata"].ObjectValue()["annotations"].ObjectValue()["pulumi.com/skipAwait"] = resource.NewStringProperty("true")
		withoutWait["metadata"].ObjectValue()["annotations"].ObjectValue()["pulumi.com/deletionPropagationPolicy"] = resource.NewStringProperty("background")
		assert.Equal(t, withoutWait, lws.Inputs, "the LWS resource's inputs are its rollout's, skipAwait and a background deletion")
	}
	for _, name := range []string{"deepseek-r1-disagg-prefill-0-rollout", "deepseek-r1-disagg-decode-0-rollout"} {
		r, _ := monitor.Find(name)
		assert.Contains(t, r.Dependencies, string(created.URN()), "%s, of the first batch, waits once every replica is created", name)
	}
	assert.Equal(t, "created: decode 0-1 + prefill 0", created.Inputs["input"].StringValue(), "barrier 0 names what it waits for")
	rollout1, _ := monitor.Find("deepseek-r1-disagg-decode-1-rollout")
	barrier, _ := monitor.Find("deepseek-r1-disagg-batch-1-done")
	assert.Contains(t, rollout1.Dependencies, barrier.URN(), "decode-1 is rolled after the minimal set's barrier")
	for _, batchBefore := range []string{"deepseek-r1-disagg-prefill-0-rollout", "deepseek-r1-disagg-decode-0-rollout"} {
		r, _ := monitor.Find(batchBefore)
		assert.Contains(t, barrier.Dependencies, string(r.URN()), "the barrier is passed after the minimal set")
	}
	assert.Equal(t, "decode 0 + prefill 0", barrier.Inputs["input"].StringValue(), "the barrier names its batch")
	decode0, _ := monitor.Find("deepseek-r1-disagg-decode-0")
	spec := decode0.Inputs["spec"].Mappable().(map[string]any)
	lwt := spec["leaderWorkerTemplate"].(map[string]any)
	assert.EqualValues(t, 4, lwt["size"])
	leaderArgs := lwt["leaderTemplate"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"]
	assert.Equal(t, []any{`ray start --head --port=6379 && exec vllm serve --model deepseek-ai/DeepSeek-R1 --tensor-parallel-size 32 ` +
		`--kv-transfer-config '{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}' --distributed-executor-backend ray`}, leaderArgs)
	pgSpec := podGroup.Inputs["spec"].Mappable().(map[string]any)
	assert.EqualValues(t, 6, pgSpec["minMember"])

	assert.Equal(t, map[string][]string{
		"prefill": {"deepseek-r1-disagg-prefill-0"},
		"decode":  {"deepseek-r1-disagg-decode-0", "deepseek-r1-disagg-decode-1"},
	}, names)
	assert.Equal(t, 80, gpusFull, "story 4: 80 GPUs at full size")
	assert.Equal(t, 48, gpusMinimal, "prefill-0 (16) + decode-0 (32)")
	assert.Equal(t, RoleStatus{DesiredReplicas: 1, ReadyReplicas: 1, NodesPerReplica: 2, TotalPods: 2, ReadyPods: 2, ObservedReplicas: 1, Phase: PhaseRunning}, status["prefill"])
	assert.Equal(t, RoleStatus{DesiredReplicas: 2, ReadyReplicas: 1, NodesPerReplica: 4, TotalPods: 8, ReadyPods: 4, ObservedReplicas: 2, Phase: PhaseProgressing}, status["decode"])
}

// unknownAtPreview: the SDK's mocks drop unknown values, so an unknown input arrives absent.
func unknownAtPreview(v resource.PropertyValue) bool {
	return v.IsNull() || v.ContainsUnknowns()
}

func TestPreviewWithUnknownTemplate(t *testing.T) {
	monitor := &pulumimock.Monitor{Outputs: func(r pulumimock.Resource) resource.PropertyMap {
		if r.Type == "kubernetes:core/v1:ConfigMap" {
			// At preview the ConfigMap's data is not known yet.
			return resource.PropertyMap{"data": resource.MakeComputed(resource.NewStringProperty(""))}
		}
		return nil
	}}
	var status any
	var statusKnown, namesKnown bool
	err := monitor.Run(func(ctx *pulumi.Context) error {
		config, err := k8scorev1.NewConfigMap(ctx, "model-config", &k8scorev1.ConfigMapArgs{
			Metadata: &k8smetav1.ObjectMetaArgs{Name: pulumi.String("model-config")},
			Data:     pulumi.StringMap{"model": pulumi.String("Qwen/Qwen3-8B")},
		})
		if err != nil {
			return err
		}
		model := config.Data.MapIndex(pulumi.String("model"))
		three := 3
		svc, err := NewInferenceService(ctx, "qwen", &Args{Roles: []RoleArgs{{
			Name: "inference", ComponentType: "worker", Replicas: &three,
			Template: &k8scorev1.PodTemplateSpecArgs{Spec: &k8scorev1.PodSpecArgs{
				Containers: k8scorev1.ContainerArray{&k8scorev1.ContainerArgs{
					Name: pulumi.String("vllm"), Image: pulumi.String("vllm/vllm-openai:v0.33.0"),
					Args: pulumi.StringArray{pulumi.String("--model"), model},
				}},
			}},
		}, {Name: "router", ComponentType: "router", HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}}}})
		if err != nil {
			return err
		}
		status, statusKnown, _ = pulumimock.Await(ctx.Context(), svc.Status)
		_, namesKnown, _ = pulumimock.Await(ctx.Context(), svc.LeaderWorkerSetNames)
		return nil
	}, pulumimock.Preview)
	require.NoError(t, err)

	lwss := monitor.ByType(typeLWS)
	require.Len(t, lwss, 3, "the tree's shape is known at preview")
	var names []string
	for _, lws := range lwss {
		names = append(names, lws.Name)
		meta := lws.Inputs["metadata"].ObjectValue()
		assert.Equal(t, lws.Name, meta["name"].StringValue(), "the object name is known at preview")
		assert.True(t, unknownAtPreview(lws.Inputs["spec"]), "the pod template is unknown at preview")
		assert.True(t, unknownAtPreview(meta["labels"]), "the revision label hashes the unknown template")
	}
	assert.ElementsMatch(t, []string{"qwen-inference-0", "qwen-inference-1", "qwen-inference-2"}, names)
	assert.Empty(t, monitor.ByType(typePodGroup), "a single-node worker service is not gang scheduled")
	pools := monitor.ByType("kubernetes:inference.networking.k8s.io/v1:InferencePool")
	require.Len(t, pools, 1, "the router's objects are laid out at preview too")
	assert.Equal(t, "qwen-pool", pools[0].Inputs["metadata"].ObjectValue()["name"].StringValue())
	assert.True(t, unknownAtPreview(pools[0].Inputs["spec"]), "its target port comes from the unknown template")
	assert.True(t, namesKnown, "child names are known at preview")
	// No LWS has a status at preview: the role's size is known, its phase is Unknown, never a guess.
	require.True(t, statusKnown)
	assert.Equal(t, RoleStatus{DesiredReplicas: 3, NodesPerReplica: 1, TotalPods: 3, Phase: PhaseUnknown},
		status.(map[string]RoleStatus)["inference"])
}

func TestBadInputRegistersNothing(t *testing.T) {
	cases := map[string]struct {
		args func() *Args
		want []string
	}{
		"shape: nodeCount 0": {
			args: func() *Args { a := story4Args(); a.Roles[1].Multinode.NodeCount = 0; return a },
			want: []string{"spec.roles[1].multinode.nodeCount: Invalid value: 0: must be >= 1 and <= 1024"},
		},
		"template: parallel sizes do not match the GPUs": {
			args: func() *Args { a := story4Args(); a.Roles[0].Template = vllmTemplate("8", "kv_producer", "8"); return a },
			want: []string{"spec.roles[0].template.spec.containers[0].args", "parallel size is 8", "= 16 GPUs"},
		},
		"template: the API server's rules (issue 32: two containers named vllm, imagePullPolicy Sometimes)": {
			args: func() *Args {
				a := story4Args()
				template := vllmTemplate("16", "kv_producer", "8").(*k8scorev1.PodTemplateSpecArgs)
				podSpec := template.Spec.(*k8scorev1.PodSpecArgs)
				server := podSpec.Containers.(k8scorev1.ContainerArray)[0].(*k8scorev1.ContainerArgs)
				server.ImagePullPolicy = pulumi.String("Sometimes")
				podSpec.Containers = k8scorev1.ContainerArray{server, &k8scorev1.ContainerArgs{Name: pulumi.String("vllm"), Image: pulumi.String("busybox:1.37")}}
				a.Roles[0].Template = template
				return a
			},
			want: []string{`spec.roles[0].template.spec.containers[1].name: Duplicate value: "vllm"`,
				`spec.roles[0].template.spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes"`},
		},
		"a gateway router without parentRefs, and a lone prefiller": {
			args: func() *Args {
				a := story4Args()
				a.Roles = []RoleArgs{a.Roles[0], {Name: "router", ComponentType: "router", RouterMode: api.RouterGateway}}
				return a
			},
			want: []string{"spec.roles[1].httproute.parentRefs: Required value: the Gateway the route attaches to",
				"spec.roles: Required value: a prefiller role needs a decoder role"},
		},
		"two adapters of one name": {
			args: func() *Args {
				a := story4Args()
				a.Model = &api.Model{Source: "hf://deepseek-ai/DeepSeek-R1", Cache: &api.ModelCache{Size: "1500Gi", StorageClassName: "rwx"},
					Adapters: []api.LoRAAdapter{{Name: "sql", Source: "hf://org/sql-v1"}, {Name: "sql", Source: "hf://org/sql-v2"}}}
				return a
			},
			want: []string{`spec.model.adapters[1].name: Duplicate value: "sql"`},
		},
		"router: an unknown strategy": {
			args: func() *Args {
				a := story4Args()
				a.Roles = append(a.Roles, RoleArgs{Name: "router", ComponentType: "router", Strategy: "fastest",
					HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}})
				return a
			},
			want: []string{`spec.roles[2].strategy: Unsupported value: "fastest": supported values: `},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			monitor := &pulumimock.Monitor{}
			err := monitor.Run(func(ctx *pulumi.Context) error {
				_, err := NewInferenceService(ctx, "deepseek-r1-disagg", tc.args())
				return err
			})
			require.Error(t, err)
			for _, want := range tc.want {
				assert.Contains(t, err.Error(), want)
			}
			assert.Empty(t, monitor.Resources(), "nothing is registered")
		})
	}
}

func TestAwaitModes(t *testing.T) {
	run := func(t *testing.T, await string) *pulumimock.Monitor {
		monitor := &pulumimock.Monitor{}
		args := story4Args()
		three := 3
		args.Roles[1].Replicas = &three
		args.Await = api.AwaitMode(await)
		require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
			_, err := NewInferenceService(ctx, "ds", args)
			return err
		}))
		return monitor
	}
	annotations := func(r pulumimock.Resource) map[string]any {
		return r.Inputs["metadata"].Mappable().(map[string]any)["annotations"].(map[string]any)
	}
	t.Run("minimal", func(t *testing.T) {
		monitor := run(t, "minimal")
		podGroup, _ := monitor.Find("ds-podgroup")
		prefill0, _ := monitor.Find("ds-prefill-0")
		decode0, _ := monitor.Find("ds-decode-0")
		for _, name := range []string{"ds-prefill-0", "ds-decode-0"} {
			r, _ := monitor.Find(name)
			assert.Equal(t, map[string]any{"pulumi.com/waitFor": "condition=Available", "pulumi.com/timeoutSeconds": "3600"}, annotations(r), name)
			assert.Equal(t, []string{podGroup.URN()}, r.Dependencies, name)
		}
		for _, name := range []string{"ds-decode-1", "ds-decode-2"} {
			r, _ := monitor.Find(name)
			assert.Equal(t, map[string]any{"pulumi.com/skipAwait": "true"}, annotations(r), name)
			assert.ElementsMatch(t, []string{podGroup.URN(), prefill0.URN(), decode0.URN()}, r.Dependencies,
				"%s is created after the minimal set", name)
		}
	})
	t.Run("none", func(t *testing.T) {
		for _, r := range run(t, "none").ByType(typeLWS) {
			assert.Equal(t, map[string]any{"pulumi.com/skipAwait": "true"}, annotations(r), r.Name)
		}
	})
	t.Run("bad value", func(t *testing.T) {
		err := (&pulumimock.Monitor{}).Run(func(ctx *pulumi.Context) error {
			a := story4Args()
			a.Await = "some"
			_, err := NewInferenceService(ctx, "ds", a)
			return err
		})
		require.Error(t, err)
		assert.True(t, strings.Contains(err.Error(), `spec.await: Unsupported value: "some": supported values: "all", "minimal", "none"`), err.Error())
	})
}

func TestRoleStatusPhases(t *testing.T) {
	ready := rolestatus.Replica{Observed: true, Replicas: 1, ReadyReplicas: 1}
	starting := rolestatus.Replica{Observed: true, Replicas: 1}
	updating := rolestatus.Replica{Observed: true, Replicas: 1, ReadyReplicas: 1, Updating: true}
	unobserved := rolestatus.Replica{Replicas: 1}
	elasticNone := rolestatus.Replica{Observed: true}
	elasticReady := rolestatus.Replica{Observed: true, Replicas: 3, ReadyReplicas: 3}
	elasticScaling := rolestatus.Replica{Observed: true, Replicas: 3, ReadyReplicas: 1}
	failed := rolestatus.Replica{Replicas: 1, Failed: true}
	cases := []struct {
		name                         string
		replicas                     []rolestatus.Replica
		phase                        string
		desired, observed, readyReps int
	}{
		{"all ready", []rolestatus.Replica{ready, ready}, PhaseRunning, 2, 2, 2},
		{"none ready", []rolestatus.Replica{starting, starting}, PhasePending, 2, 2, 0},
		{"some ready", []rolestatus.Replica{ready, starting}, PhaseProgressing, 2, 2, 1},
		{"all ready but one updating", []rolestatus.Replica{ready, updating}, PhaseProgressing, 2, 2, 2},
		{"one ready, one not yet observed (await minimal)", []rolestatus.Replica{ready, unobserved}, PhaseProgressing, 2, 1, 1},
		{"one starting, one not yet observed", []rolestatus.Replica{starting, unobserved}, PhasePending, 2, 1, 0},
		{"none observed", []rolestatus.Replica{unobserved, unobserved}, PhaseUnknown, 2, 0, 0},
		{"autoscaled, no elastic replica", []rolestatus.Replica{ready, ready, elasticNone}, PhaseRunning, 2, 2, 2},
		{"autoscaled to 5, all ready", []rolestatus.Replica{ready, ready, elasticReady}, PhaseRunning, 5, 5, 5},
		{"autoscaled to 5, elastic replicas coming", []rolestatus.Replica{ready, ready, elasticScaling}, PhaseProgressing, 5, 5, 3},
		{"one failed (its wait timed out)", []rolestatus.Replica{ready, failed}, PhaseFailed, 2, 1, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := roleStatus(4, tc.replicas)
			assert.Equal(t, tc.phase, s.Phase)
			assert.Equal(t, tc.desired, s.DesiredReplicas)
			assert.Equal(t, tc.readyReps, s.ReadyReplicas)
			assert.Equal(t, tc.observed, s.ObservedReplicas)
			assert.Equal(t, tc.readyReps*4, s.ReadyPods)
			assert.Equal(t, tc.desired*4, s.TotalPods)
		})
	}
}

func TestObserveLeaderWorkerSet(t *testing.T) {
	assert.Equal(t, rolestatus.Replica{Replicas: 1}, observeLeaderWorkerSet(map[string]any{"spec": map[string]any{}}))
	obs := observeLeaderWorkerSet(lwsStatus(1, "Available").Mappable())
	assert.Equal(t, rolestatus.Replica{Observed: true, Replicas: 1, ReadyReplicas: 1, Available: true}, obs)
	elastic := map[string]any{"spec": map[string]any{"replicas": float64(3)},
		"status": map[string]any{"readyReplicas": float64(2), "conditions": []any{}}}
	assert.Equal(t, rolestatus.Replica{Observed: true, Replicas: 3, ReadyReplicas: 2}, observeLeaderWorkerSet(elastic),
		"an elastic LWS counts the replicas its autoscaler set")
}

// manifestArgs are the Args of an example manifest's first service.
func manifestArgs(t *testing.T, file string) *Args {
	t.Helper()
	data, err := os.ReadFile("../../examples/manifests/" + file)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	args, err := ArgsFromService(docs[0].Service)
	require.NoError(t, err)
	return args
}

func TestNodePoolChildren(t *testing.T) {
	args := manifestArgs(t, "pd-gpu-node-pools.yaml")
	monitor := &pulumimock.Monitor{}
	var poolNames any
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		svc, err := NewInferenceService(ctx, "pools", args)
		if err != nil {
			return err
		}
		poolNames, _, err = pulumimock.Await(ctx.Context(), svc.NodePoolNames)
		return err
	}))
	pools := monitor.ByType("kubernetes:karpenter.sh/v1:NodePool")
	require.Len(t, pools, 1)
	assert.Equal(t, "pools-nodepool-h100", pools[0].Name)
	meta := pools[0].Inputs["metadata"].Mappable().(map[string]any)
	assert.Equal(t, "deepseek-r1-pools-h100", meta["name"])
	assert.NotContains(t, meta, "namespace", "NodePools are cluster-scoped")
	decode, _ := monitor.Find("pools-decode-1")
	assert.Contains(t, decode.Dependencies, pools[0].URN(), "the pods go before their nodes on destroy")
	assert.Equal(t, []string{"deepseek-r1-pools-h100"}, poolNames)
}

// TestModelDownloadChildren: the cache claim, then the download Job, which a changed revision
// replaces (deleted first: same name), then the LWSs, created after the download.
func TestModelDownloadChildren(t *testing.T) {
	args := manifestArgs(t, "deepseek-model-cache.yaml")
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		_, err := NewInferenceService(ctx, "cached", args)
		return err
	}))
	claim, ok := monitor.Find("cached-model")
	require.True(t, ok)
	assert.Equal(t, "kubernetes:core/v1:PersistentVolumeClaim", claim.Type)
	job, ok := monitor.Find("cached-model-download")
	require.True(t, ok)
	assert.Equal(t, "kubernetes:batch/v1:Job", job.Type)
	assert.Contains(t, job.Dependencies, string(claim.URN()))
	assert.Equal(t, []string{"spec"}, job.ReplaceOnChanges, "a Job's template cannot change: a new revision is a new Job")
	assert.True(t, job.DeleteBeforeReplace, "the new Job has the old one's name")
	assert.False(t, claim.DeleteBeforeReplace)
	for _, name := range []string{"cached-prefill-0", "cached-decode-0", "cached-decode-1"} {
		lws, _ := monitor.Find(name)
		assert.Contains(t, lws.Dependencies, string(job.URN()), "%s is created once the model is downloaded", name)
	}
}

func TestPartitionPinsTheTemplatesOfLowReplicas(t *testing.T) {
	args := story4Args()
	args.Roles[1].RolloutStrategy = &api.RolloutStrategy{Partition: pulumi.IntRef(1)}
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		_, err := NewInferenceService(ctx, "deepseek-r1-disagg", args)
		return err
	}))
	pinned, _ := monitor.Find("deepseek-r1-disagg-decode-0-rollout")
	assert.Equal(t, []string{"spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate",
		`metadata.labels["fusioninfer.io/revision"]`}, pinned.IgnoreChanges, "a template change leaves decode-0 as it is")
	rolled, _ := monitor.Find("deepseek-r1-disagg-decode-1-rollout")
	assert.Empty(t, rolled.IgnoreChanges)
}

// TestStatusAfterAwaitMinimal: with await minimal the replicas beyond the minimal set are not
// awaited, and their LWSs are read before any controller has seen them. The role reports what is
// known, the minimal set ready and the rest not yet observed (Deploying), not Unknown.
func TestStatusAfterAwaitMinimal(t *testing.T) {
	monitor := &pulumimock.Monitor{Outputs: func(r pulumimock.Resource) resource.PropertyMap {
		if r.Type != typeLWS {
			return nil
		}
		annotations, _ := r.Inputs["metadata"].Mappable().(map[string]any)["annotations"].(map[string]any)
		if annotations["pulumi.com/waitFor"] == nil {
			return nil // not awaited: no status when it is read at creation
		}
		return lwsStatus(1, "Available")
	}}
	var status any
	require.NoError(t, monitor.Run(func(ctx *pulumi.Context) error {
		args := story4Args()
		args.Await = api.AwaitMinimal
		svc, err := NewInferenceService(ctx, "ds", args)
		if err != nil {
			return err
		}
		status, _, _ = pulumimock.Await(ctx.Context(), svc.Status)
		return nil
	}))
	roles := status.(map[string]RoleStatus)
	assert.Equal(t, RoleStatus{DesiredReplicas: 1, ReadyReplicas: 1, NodesPerReplica: 2, TotalPods: 2, ReadyPods: 2, ObservedReplicas: 1, Phase: PhaseRunning}, roles["prefill"])
	assert.Equal(t, RoleStatus{DesiredReplicas: 2, ReadyReplicas: 1, NodesPerReplica: 4, TotalPods: 8, ReadyPods: 4, ObservedReplicas: 1, Phase: PhaseProgressing}, roles["decode"])
}
