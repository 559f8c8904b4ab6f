// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

const manifests = "../../examples/manifests/"

func story(t *testing.T, file string) *render.Tree {
	t.Helper()
	trees := buildFile(t, manifests+file)
	require.Len(t, trees, 1)
	return trees[0]
}

func leaderWorkerSets(tree *render.Tree) []*lwsv1.LeaderWorkerSet {
	var out []*lwsv1.LeaderWorkerSet
	for _, o := range tree.Objects {
		if lws, ok := o.Object.(*lwsv1.LeaderWorkerSet); ok {
			out = append(out, lws)
		}
	}
	return out
}

func podGroup(tree *render.Tree) *volcanov1beta1.PodGroup {
	for _, o := range tree.Objects {
		if pg, ok := o.Object.(*volcanov1beta1.PodGroup); ok {
			return pg
		}
	}
	return nil
}

func names(tree *render.Tree) []string {
	var out []string
	for _, o := range tree.Objects {
		out = append(out, o.Kind+"/"+o.Name)
	}
	return out
}

// podTemplates are every pod template of an LWS (the leader's, when it has one, and the workers').
func podTemplates(lws *lwsv1.LeaderWorkerSet) []*corev1.PodTemplateSpec {
	out := []*corev1.PodTemplateSpec{&lws.Spec.LeaderWorkerTemplate.WorkerTemplate}
	if l := lws.Spec.LeaderWorkerTemplate.LeaderTemplate; l != nil {
		out = append(out, l)
	}
	return out
}

func TestSeedStoriesTopology(t *testing.T) {
	cases := []struct {
		file      string
		objects   []string
		sizes     []int32
		gang      bool
		minMember int32
	}{
		{"story1-monolithic.yaml", []string{"LeaderWorkerSet/qwen-inference-inference-0"}, []int32{1}, false, 0},
		{"story2-disaggregated.yaml", []string{
			"PodGroup/qwen-inference-service",
			// rollout order: the gang's minimal set, then decode's replicas, then prefill's
			"LeaderWorkerSet/qwen-inference-service-decode-0", "LeaderWorkerSet/qwen-inference-service-prefill-0",
			"LeaderWorkerSet/qwen-inference-service-decode-1", "LeaderWorkerSet/qwen-inference-service-decode-2",
			"LeaderWorkerSet/qwen-inference-service-decode-3", "LeaderWorkerSet/qwen-inference-service-prefill-1",
		}, []int32{1, 1, 1, 1, 1, 1}, true, 2},
		{"story3-multinode.yaml", []string{
			"PodGroup/deepseek-r1-inference",
			"LeaderWorkerSet/deepseek-r1-inference-inference-0", "LeaderWorkerSet/deepseek-r1-inference-inference-1",
		}, []int32{4, 4}, true, 4},
		{"story4-disaggregated-multinode.yaml", []string{
			"PodGroup/deepseek-r1-disagg",
			"LeaderWorkerSet/deepseek-r1-disagg-decode-0", "LeaderWorkerSet/deepseek-r1-disagg-prefill-0",
			"LeaderWorkerSet/deepseek-r1-disagg-decode-1",
		}, []int32{4, 2, 4}, true, 6},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			tree := story(t, tc.file)
			assert.Equal(t, tc.objects, names(tree), "objects in apply order")
			for i, lws := range leaderWorkerSets(tree) {
				assert.EqualValues(t, 1, *lws.Spec.Replicas, "one LWS per replica")
				assert.Equal(t, tc.sizes[i], *lws.Spec.LeaderWorkerTemplate.Size)
				assert.Equal(t, tc.sizes[i] > 1, lws.Spec.LeaderWorkerTemplate.LeaderTemplate != nil, "leader template only when multi-node")
				for _, tpl := range podTemplates(lws) {
					if tc.gang {
						assert.Equal(t, "volcano", tpl.Spec.SchedulerName)
						assert.Equal(t, tree.Service.Name, tpl.Annotations["scheduling.k8s.io/group-name"])
						assert.Equal(t, lws.Labels[render.LabelRoleName]+"-"+lws.Labels[render.LabelReplicaIndex], tpl.Annotations["volcano.sh/task-spec"])
					} else {
						assert.Empty(t, tpl.Spec.SchedulerName, "no volcano where gang scheduling is off")
						assert.NotContains(t, tpl.Annotations, "scheduling.k8s.io/group-name")
					}
				}
			}
			pg := podGroup(tree)
			if !tc.gang {
				assert.Nil(t, pg)
				return
			}
			require.NotNil(t, pg)
			assert.Equal(t, tc.minMember, pg.Spec.MinMember, "minMember is the minimal set, not the whole service")
			assert.Empty(t, pg.Spec.MinTaskMember, "no minTaskMember in subGroup mode")
		})
	}
}

func TestStory4PodGroupSubGroupPolicies(t *testing.T) {
	pg := podGroup(story(t, "story4-disaggregated-multinode.yaml"))
	require.Len(t, pg.Spec.SubGroupPolicy, 2)
	for i, want := range []struct {
		role       string
		size, mins int32
	}{{"prefill", 2, 1}, {"decode", 4, 1}} {
		p := pg.Spec.SubGroupPolicy[i]
		assert.Equal(t, want.role, p.Name)
		assert.Equal(t, want.size, *p.SubGroupSize)
		assert.Equal(t, want.mins, *p.MinSubGroups)
		assert.Equal(t, []string{render.LabelReplicaIndex}, p.MatchLabelKeys)
		assert.Equal(t, map[string]string{render.LabelService: "deepseek-r1-disagg", render.LabelRoleName: want.role}, p.LabelSelector.MatchLabels)
	}
}

func TestLegacyTaskMemberPodGroupIsTheSeedsLiteral(t *testing.T) {
	pg := podGroup(story(t, "legacy-taskmember.yaml"))
	assert.EqualValues(t, 8, pg.Spec.MinMember, "every pod")
	assert.Equal(t, map[string]int32{"inference-0": 4, "inference-1": 4}, pg.Spec.MinTaskMember)
	assert.Empty(t, pg.Spec.SubGroupPolicy)
}

func TestMinRoleReplicasShapeTheGang(t *testing.T) {
	tree := story(t, "qwen-pd-nixl.yaml")
	pg := podGroup(tree)
	assert.EqualValues(t, 3, pg.Spec.MinMember, "1 prefill + 2 decode, one pod each")
	assert.EqualValues(t, 1, *pg.Spec.SubGroupPolicy[0].MinSubGroups)
	assert.EqualValues(t, 2, *pg.Spec.SubGroupPolicy[1].MinSubGroups)
	summary := render.Summarize(tree)
	assert.EqualValues(t, 16, summary.GPUs, "(2 + 6) replicas x 2 GPUs")
	assert.EqualValues(t, 6, summary.MinimalGPUs, "(1 + 2) replicas x 2 GPUs")
	monolithic := render.Summarize(story(t, "story1-monolithic.yaml"))
	assert.EqualValues(t, 1, monolithic.GPUs)
	assert.EqualValues(t, 0, monolithic.MinimalGPUs, "without a gang there is no minimal set")
}

func TestLabelsAndUserMetadataAreKept(t *testing.T) {
	tree := story(t, "llama-405b-explicit-command.yaml")
	lws := leaderWorkerSets(tree)[1]
	assert.Equal(t, "llm", lws.Namespace)
	for _, labels := range []map[string]string{lws.Labels, lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Labels, lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Labels} {
		assert.Equal(t, "llama-405b", labels[render.LabelService])
		assert.Equal(t, "worker", labels[render.LabelComponentType])
		assert.Equal(t, "chat", labels[render.LabelRoleName])
		assert.Equal(t, "1", labels[render.LabelReplicaIndex])
		assert.Len(t, labels[render.LabelRevision], 10)
		assert.Equal(t, "llama-405b-chat-1", labels[render.LabelAppInstance])
		assert.Equal(t, "fusioninfer", labels[render.LabelAppManagedBy])
	}
	assert.Equal(t, "inference-platform", lws.Labels["team"], "service labels go on every child")
	leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate
	assert.Equal(t, "llama-3.1-405b", leader.Labels["model"], "template labels are kept")
	assert.Equal(t, "true", leader.Annotations["prometheus.io/scrape"], "template annotations are kept")
	assert.Equal(t, "chat-1", leader.Annotations["volcano.sh/task-spec"], "task keys are {role}-{i}")
}

func TestRayLeaderAndWorkers(t *testing.T) {
	lws := leaderWorkerSets(story(t, "llama-405b-explicit-command.yaml"))[0]
	leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	worker := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	assert.Equal(t, []string{"/bin/sh", "-c"}, leader.Command)
	assert.Contains(t, leader.Args[0], "ray start --head --port=6379 && exec python3 -m vllm.entrypoints.openai.api_server ")
	assert.NotNil(t, leader.ReadinessProbe, "the leader serves and keeps its probe")
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "ray", ContainerPort: 6379, Protocol: corev1.ProtocolTCP}}, leader.Ports)
	assert.Equal(t, []string{"/bin/sh", "-c"}, worker.Command)
	assert.Equal(t, []string{"ray start --address=$LWS_LEADER_ADDRESS:6379 --block"}, worker.Args)
	assert.Empty(t, worker.Ports, "workers expose no serving port")
	assert.Nil(t, worker.ReadinessProbe, "a worker's server probe would never pass")
	for _, c := range []corev1.Container{leader, worker} {
		assert.Equal(t, resource.MustParse("8"), c.Resources.Limits["nvidia.com/gpu"])
		assert.Equal(t, "dshm", c.VolumeMounts[0].Name, "everything else of the container is kept")
		assert.Len(t, c.Env, 2)
	}
}

func TestRevisionChangesExactlyWhenTheTemplateChanges(t *testing.T) {
	revisions := func(mutate func(svc *api.InferenceService)) map[string]string {
		trees := buildFile(t, manifests+"story4-disaggregated-multinode.yaml")
		svc := trees[0].Service
		mutate(svc)
		tree, errs := render.Build(svc)
		require.Empty(t, errs)
		out := map[string]string{}
		for _, lws := range leaderWorkerSets(tree) {
			out[lws.Name] = lws.Labels[render.LabelRevision]
			for _, tpl := range podTemplates(lws) {
				assert.Equal(t, out[lws.Name], tpl.Labels[render.LabelRevision])
			}
		}
		return out
	}
	base := revisions(func(*api.InferenceService) {})
	assert.Equal(t, base["deepseek-r1-disagg-decode-0"], base["deepseek-r1-disagg-decode-1"], "replicas of a role share a revision")
	assert.Equal(t, base, revisions(func(*api.InferenceService) {}), "stable across builds")

	imageBump := revisions(func(svc *api.InferenceService) {
		svc.Spec.Roles[1].Template.Spec.Containers[0].Image = "vllm/vllm-openai:v0.33.1"
	})
	assert.Equal(t, base["deepseek-r1-disagg-prefill-0"], imageBump["deepseek-r1-disagg-prefill-0"], "other roles keep theirs")
	assert.NotEqual(t, base["deepseek-r1-disagg-decode-0"], imageBump["deepseek-r1-disagg-decode-0"])

	moreReplicas := revisions(func(svc *api.InferenceService) { n := 3; svc.Spec.Roles[1].Replicas = &n })
	assert.Equal(t, base["deepseek-r1-disagg-decode-1"], moreReplicas["deepseek-r1-disagg-decode-1"], "scaling does not change the template")
}

func TestBuildIsDeterministic(t *testing.T) {
	for _, input := range goldenInputs(t) {
		first, err := buildFile(t, input)[0].YAML()
		require.NoError(t, err)
		for i := 0; i < 5; i++ {
			again, err := buildFile(t, input)[0].YAML()
			require.NoError(t, err)
			require.Equal(t, string(first), string(again), input)
		}
	}
}

func TestBuildDoesNotChangeItsInput(t *testing.T) {
	tree := story(t, "story3-multinode.yaml")
	svc := tree.Service
	before := svc.Spec.Roles[0].Template.DeepCopy()
	_, errs := render.Build(svc)
	require.Empty(t, errs)
	assert.Equal(t, before, svc.Spec.Roles[0].Template)
}

func TestAwaitMinimalCreatesTheMinimalSetFirst(t *testing.T) {
	tree := story(t, "qwen-pd-nixl.yaml")
	assert.Equal(t, []string{
		"PodGroup/qwen3-32b-nixl",
		"LeaderWorkerSet/qwen3-32b-nixl-prefill-0", "LeaderWorkerSet/qwen3-32b-nixl-decode-0", "LeaderWorkerSet/qwen3-32b-nixl-decode-1",
		"LeaderWorkerSet/qwen3-32b-nixl-prefill-1", "LeaderWorkerSet/qwen3-32b-nixl-decode-2", "LeaderWorkerSet/qwen3-32b-nixl-decode-3",
		"LeaderWorkerSet/qwen3-32b-nixl-decode-4", "LeaderWorkerSet/qwen3-32b-nixl-decode-5",
	}, names(tree))
	for _, o := range tree.Objects[1:4] {
		assert.True(t, o.Awaited, o.Name)
		assert.Equal(t, []string{"podgroup"}, o.DependsOn, o.Name)
		assert.Equal(t, "condition=Available", o.Object.(*lwsv1.LeaderWorkerSet).Annotations["pulumi.com/waitFor"])
	}
	for _, o := range tree.Objects[4:] {
		assert.False(t, o.Awaited, o.Name)
		assert.Equal(t, []string{"podgroup", "prefill-0", "decode-0", "decode-1"}, o.DependsOn, o.Name)
		assert.Equal(t, "true", o.Object.(*lwsv1.LeaderWorkerSet).Annotations["pulumi.com/skipAwait"])
	}
	checkDependsOnEarlier(t, tree)
}

func TestSchedulingKnobsShapeThePodGroupAndPods(t *testing.T) {
	tree := story(t, "deepseek-topology-queue.yaml")
	pg := podGroup(tree)
	assert.Equal(t, "inference", pg.Spec.Queue)
	assert.Equal(t, "inference-high", pg.Spec.PriorityClassName)
	minResources := map[string]string{}
	for name, q := range *pg.Spec.MinResources {
		minResources[string(name)] = q.String()
	}
	assert.Equal(t, map[string]string{"cpu": "192", "memory": "2880Gi", "nvidia.com/gpu": "48"}, minResources,
		"the minimal set (prefill 1x2 + decode 1x4 pods), not the whole service (10 pods)")
	assert.Equal(t, volcanov1beta1.NetworkTopologyMode("hard"), pg.Spec.NetworkTopology.Mode)
	assert.Equal(t, 2, *pg.Spec.NetworkTopology.HighestTierAllowed)
	assert.Equal(t, volcanov1beta1.NetworkTopologyMode("soft"), pg.Spec.SubGroupPolicy[0].NetworkTopology.Mode, "the role's own policy wins")
	assert.Equal(t, volcanov1beta1.NetworkTopologyMode("hard"), pg.Spec.SubGroupPolicy[1].NetworkTopology.Mode, "the service's rolePolicy")
	for _, lws := range leaderWorkerSets(tree) {
		for _, tpl := range podTemplates(lws) {
			assert.Equal(t, "inference-high", tpl.Spec.PriorityClassName)
		}
	}
	assert.Nil(t, podGroup(story(t, "story4-disaggregated-multinode.yaml")).Spec.MinResources, "minResources is opt-in")
}

func TestNodePools(t *testing.T) {
	tree := story(t, "pd-gpu-node-pools.yaml")
	assert.Equal(t, []string{
		"NodePool/deepseek-r1-pools-h100", "PodGroup/deepseek-r1-pools",
		"LeaderWorkerSet/deepseek-r1-pools-decode-0", "LeaderWorkerSet/deepseek-r1-pools-prefill-0", "LeaderWorkerSet/deepseek-r1-pools-decode-1",
	}, names(tree), "one NodePool for the karpenter pool, none for the existing one")
	np := tree.Objects[0].Object.(*karpenter.NodePool)
	assert.Empty(t, np.Namespace, "NodePools are cluster-scoped")
	limit := np.Spec.Limits[api.GPUResourceName]
	assert.Equal(t, "64", limit.String(), "decode at full size: 2 replicas x 4 nodes x 8 GPUs")
	assert.Equal(t, karpenter.ConsolidationPolicyWhenEmpty, np.Spec.Disruption.ConsolidationPolicy, "serving nodes are never repacked")
	assert.Equal(t, "10%", np.Spec.Disruption.Budgets[0].Nodes)
	assert.Equal(t, "10m0s", np.Spec.Disruption.ConsolidateAfter, "empty nodes wait the default consolidateAfter")
	assert.Equal(t, karpenter.Never, np.Spec.Template.Spec.ExpireAfter, "serving nodes do not expire")
	assert.Equal(t, &karpenter.NodeClassReference{Group: "karpenter.k8s.aws", Kind: "EC2NodeClass", Name: "gpu"}, np.Spec.Template.Spec.NodeClassRef)
	assert.Contains(t, np.Spec.Template.Spec.Taints, corev1.Taint{Key: "nvidia.com/gpu", Value: "true", Effect: corev1.TaintEffectNoSchedule})
	assert.Equal(t, "llm-serving", np.Spec.Template.Labels["workload"])
	var keys []string
	for _, r := range np.Spec.Template.Spec.Requirements {
		keys = append(keys, r.Key+"="+r.Values[0])
	}
	assert.Equal(t, []string{"karpenter.sh/capacity-type=on-demand", "node.kubernetes.io/instance-type=p5.48xlarge"}, keys)

	for _, o := range tree.Objects[2:] {
		lws := o.Object.(*lwsv1.LeaderWorkerSet)
		for _, tpl := range podTemplates(lws) {
			spec := tpl.Spec
			assert.Contains(t, spec.Tolerations, corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
			if lws.Labels[render.LabelRoleName] == "decode" {
				assert.Equal(t, map[string]string{"karpenter.sh/nodepool": "deepseek-r1-pools-h100"}, spec.NodeSelector)
				assert.Contains(t, spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "llm-serving", Effect: corev1.TaintEffectNoSchedule})
				assert.Nil(t, spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, "Karpenter cannot provision for a GPU feature discovery label")
				assert.Equal(t, "nvidia.com/gpu.product", spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Key)
				assert.Contains(t, o.DependsOn, "nodepool-h100", "destroy removes the pods before their nodes")
			} else {
				assert.Equal(t, map[string]string{"gpu-pool": "a100"}, spec.NodeSelector)
				assert.Equal(t, []string{"NVIDIA-A100-SXM4-80GB"}, spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values)
				assert.NotContains(t, o.DependsOn, "nodepool-a100")
			}
		}
	}
}

func TestNodePoolLimitPacksSingleNodePods(t *testing.T) {
	trees := buildFile(t, manifests+"volcano-single-node.yaml") // 2 + 1 replicas of one 1-GPU pod
	svc := trees[0].Service
	svc.Spec.NodePools = []api.NodePool{{Name: "l4", GPUsPerNode: 4, NodeClassRef: &api.NodeClassRef{Group: "g", Kind: "k", Name: "n"}}}
	svc.Spec.Roles[0].NodePool, svc.Spec.Roles[1].NodePool = "l4", "l4"
	svc.Spec.Roles[0].Replicas = ptr.To(5)
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	np := tree.Objects[0].Object.(*karpenter.NodePool)
	limit := np.Spec.Limits[api.GPUResourceName]
	assert.Equal(t, "12", limit.String(), "5 pods -> 2 nodes, 1 pod -> 1 node: 3 nodes x 4 GPUs")

	svc.Spec.NodePools[0].ConsolidateAfter = "45s"
	tree, errs = render.Build(svc)
	require.Empty(t, errs)
	assert.Equal(t, "45s", tree.Objects[0].Object.(*karpenter.NodePool).Spec.Disruption.ConsolidateAfter, "the pool's consolidateAfter")
}

func TestUserAffinityAndTolerationsAreKept(t *testing.T) {
	trees := buildFile(t, manifests+"pd-gpu-node-pools.yaml")
	svc := trees[0].Service
	tpl := svc.Spec.Roles[0].Template
	tpl.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	tpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}},
			{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}}},
		},
	}}}
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	spec := objectOf[*lwsv1.LeaderWorkerSet](t, tree, "deepseek-r1-pools-prefill-0").Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
	assert.Len(t, spec.Tolerations, 1, "a toleration of everything already tolerates the GPU taint")
	for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		assert.Len(t, term.MatchExpressions, 2, "the GPU product is required in every one of the user's alternatives")
	}
}

func TestTaskMemberGangMinimumIsTheWholeService(t *testing.T) {
	trees := buildFile(t, manifests+"legacy-taskmember.yaml")
	svc := trees[0].Service
	svc.Spec.Await = api.AwaitMinimal
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	for _, o := range tree.Objects[1:] {
		assert.True(t, o.Awaited, "%s is part of the gang's minimum", o.Name)
		assert.Equal(t, []string{"podgroup"}, o.DependsOn,
			"%s: a replica created after the others are Available would never let them become Available", o.Name)
	}
	summary := render.Summarize(tree)
	assert.Equal(t, summary.GPUs, summary.MinimalGPUs, "the legacy PodGroup requires every pod")
}
