// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
)

func scaledObject(t *testing.T, tree *render.Tree, role string) *keda.ScaledObject {
	t.Helper()
	for _, o := range tree.Objects {
		if so, ok := o.Object.(*keda.ScaledObject); ok && o.Role == role {
			return so
		}
	}
	t.Fatalf("no ScaledObject for %s", role)
	return nil
}

// TestScaledObjectAsksForTheLoadTheBaseDoesNotCarry: KEDA's HPA asks for ceil(value / threshold)
// elastic replicas, so the query subtracts the base's share and the role runs ceil(load / target).
func TestScaledObjectAsksForTheLoadTheBaseDoesNotCarry(t *testing.T) {
	decodeLoad := `sum(vllm:num_requests_waiting{namespace="default",pod=~"deepseek-autoscaled-decode-([0-9]+|elastic)-[0-9]+"})`
	cases := []struct {
		name             string
		mutate           func(svc *api.InferenceService)
		role             string
		query, threshold string
	}{
		{"decode on its waiting requests: 2 base x 4", nil, "decode",
			"clamp_min((" + decodeLoad + ") - 8, 0)", "4"},
		{"prefill follows decode at 0.5: 1 base x 4 / 0.5", nil, "prefill",
			"clamp_min((" + decodeLoad + ") - 8, 0)", "8"},
		{"KV-cache usage", func(svc *api.InferenceService) {
			svc.Spec.Roles[1].Autoscaling.Metric, svc.Spec.Roles[1].Autoscaling.Target = api.MetricKVCacheUsage, 0.8
		}, "decode", `clamp_min((sum(vllm:kv_cache_usage_perc{namespace="default",pod=~"deepseek-autoscaled-decode-([0-9]+|elastic)-[0-9]+"})) - 1.6, 0)`, "0.8"},
		// issue 55: a data parallel replica runs one server a rank, each with its own KV cache;
		// the replica's use is their mean, not their sum
		{"KV-cache usage of 4 data parallel ranks a replica: their mean", func(svc *api.InferenceService) {
			decode := &svc.Spec.Roles[1]
			decode.Autoscaling.Metric, decode.Autoscaling.Target = api.MetricKVCacheUsage, 0.8
			decode.Parallelism = &api.Parallelism{Data: 4, Tensor: 4}
			server := &decode.Template.Spec.Containers[0]
			server.Args = vllm.FlagTensorParallelSize.Without(server.Args)
		}, "decode", `clamp_min((sum(vllm:kv_cache_usage_perc{namespace="default",pod=~"deepseek-autoscaled-decode-([0-9]+|elastic)-[0-9]+(-[0-9]+)?"}) / 4) - 1.6, 0)`, "0.8"},
		{"waiting requests of 4 data parallel ranks a replica: their sum", func(svc *api.InferenceService) {
			decode := &svc.Spec.Roles[1]
			decode.Parallelism = &api.Parallelism{Data: 4, Tensor: 4}
			server := &decode.Template.Spec.Containers[0]
			server.Args = vllm.FlagTensorParallelSize.Without(server.Args)
		}, "decode", `clamp_min((sum(vllm:num_requests_waiting{namespace="default",pod=~"deepseek-autoscaled-decode-([0-9]+|elastic)-[0-9]+(-[0-9]+)?"})) - 8, 0)`, "4"},
		{"a query of the user's is the role's load as it is", func(svc *api.InferenceService) {
			svc.Spec.Roles[1].Autoscaling.Metric = `sum(rate(vllm:prompt_tokens_total{namespace="llm"}[1m]))`
			svc.Spec.Roles[1].Autoscaling.Target = 5000
		}, "decode", `clamp_min((sum(rate(vllm:prompt_tokens_total{namespace="llm"}[1m]))) - 10000, 0)`, "5000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := story(t, "autoscaling-pd.yaml").Service
			if tc.mutate != nil {
				tc.mutate(svc)
			}
			tree, errs := render.Build(svc)
			require.Empty(t, errs)
			so := scaledObject(t, tree, tc.role)
			trigger := so.Spec.Triggers[0]
			assert.Equal(t, "prometheus", trigger.Type)
			assert.Equal(t, tc.query, trigger.Metadata["query"])
			assert.Equal(t, tc.threshold, trigger.Metadata["threshold"])
			assert.Equal(t, "http://prometheus-operated.monitoring:9090", trigger.Metadata["serverAddress"])
			assert.Equal(t, "deepseek-autoscaled-"+tc.role+"-elastic", so.Spec.ScaleTargetRef.Name)
			assert.Equal(t, "LeaderWorkerSet", so.Spec.ScaleTargetRef.Kind)
			assert.EqualValues(t, 0, *so.Spec.MinReplicaCount)
		})
	}
	tree := story(t, "autoscaling-pd.yaml")
	decode := scaledObject(t, tree, "decode")
	assert.EqualValues(t, 3, *decode.Spec.MaxReplicaCount, "maxReplicas 5 - 2 base")
	assert.EqualValues(t, 600, *decode.Spec.CooldownPeriod, "scaleDownDelay 10m")
	assert.EqualValues(t, 600, *decode.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior.ScaleDown.StabilizationWindowSeconds)
	assert.EqualValues(t, 300, *scaledObject(t, tree, "prefill").Spec.CooldownPeriod, "the default delay, 5m")
}

func TestElasticLeaderWorkerSet(t *testing.T) {
	tree := story(t, "autoscaling-pd.yaml")
	var elastic *lwsv1.LeaderWorkerSet
	var ref render.Ref
	for _, o := range tree.Objects {
		if o.Elastic && o.Role == "decode" {
			elastic, ref = o.Object.(*lwsv1.LeaderWorkerSet), o.Ref
		}
	}
	require.NotNil(t, elastic)
	assert.Equal(t, "deepseek-autoscaled-decode-elastic", elastic.Name)
	assert.EqualValues(t, 0, *elastic.Spec.Replicas, "the autoscaler sets its replicas")
	assert.Equal(t, render.ElasticFields, ref.IgnoredFields(), "and Pulumi leaves them to it")
	assert.False(t, ref.RolledInBatches(), "LWS rolls its groups itself")
	assert.Equal(t, intstr.FromInt32(1), elastic.Spec.RolloutStrategy.RollingUpdateConfiguration.MaxUnavailable)
	assert.EqualValues(t, 2, *elastic.Spec.LeaderWorkerTemplate.Size)
	for _, tpl := range podTemplates(elastic) {
		assert.NotContains(t, tpl.Labels, render.LabelReplicaIndex, "LWS's group index tells its replicas apart")
		assert.Equal(t, "decode", tpl.Labels[render.LabelRoleName])
		assert.Equal(t, "decode-elastic", tpl.Annotations["volcano.sh/task-spec"])
		assert.Equal(t, "deepseek-autoscaled", tpl.Annotations["scheduling.k8s.io/group-name"], "in the shared gang")
	}
	// After the role's base batches in the rollout chain, and the ScaledObject after it.
	assert.Contains(t, ref.DependsOn, "decode-1", "rolled after the base replicas' last batch")
	assert.Equal(t, []string{"decode 0 + prefill 0", "decode 1", "decode elastic", "prefill elastic"}, render.Summarize(tree).Rollout)
}

func TestElasticReplicasHaveAGangSubgroupOfTheirOwn(t *testing.T) {
	pg := podGroup(story(t, "autoscaling-pd.yaml"))
	assert.EqualValues(t, 3, pg.Spec.MinMember, "the base's minimal set only: prefill 1 + decode 1 x 2")
	byName := map[string]int{}
	for i, p := range pg.Spec.SubGroupPolicy {
		byName[p.Name] = i
	}
	base := pg.Spec.SubGroupPolicy[byName["decode"]]
	assert.Equal(t, render.LabelReplicaIndex, base.LabelSelector.MatchExpressions[0].Key, "the base policy selects only pods with a replica index")
	elastic := pg.Spec.SubGroupPolicy[byName["decode-elastic"]]
	assert.EqualValues(t, 2, *elastic.SubGroupSize, "each elastic replica whole")
	assert.EqualValues(t, 0, *elastic.MinSubGroups, "none required")
	assert.Equal(t, []string{lwsv1.GroupIndexLabelKey}, elastic.MatchLabelKeys)
	assert.Equal(t, "deepseek-autoscaled-decode-elastic", elastic.LabelSelector.MatchLabels[lwsv1.SetNameLabelKey])
}

func TestNodePoolLimitAllowsMaxReplicas(t *testing.T) {
	svc := story(t, "autoscaling-pd.yaml").Service
	svc.Spec.NodePools = []api.NodePool{{Name: "h100", GPUsPerNode: 8, NodeClassRef: &api.NodeClassRef{Group: "g", Kind: "k", Name: "n"}}}
	svc.Spec.Roles[1].NodePool = "h100"
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	limit := tree.Objects[0].Object.(*karpenter.NodePool).Spec.Limits[api.GPUResourceName]
	assert.Equal(t, "80", limit.String(), "decode at maxReplicas: 5 replicas x 2 nodes x 8 GPUs")
}
