// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/planner"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// FuzzBuild feeds arbitrary manifests through decoding, validation and building. The core must
// never panic, and whatever it accepts must come out whole: one LWS per replica, a PodGroup
// exactly when gang scheduled, and every object renderable.
func FuzzBuild(f *testing.F) {
	for _, input := range goldenInputs(f) {
		data, err := os.ReadFile(input)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: a}\nspec: {roles: [{name: b, componentType: worker, replicas: 2147483647, template: {spec: {containers: [{name: c, image: i}]}}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 {
			return
		}
		docs, _ := api.Decode(data)
		for _, doc := range docs {
			buildAndCheck(t, doc.Service)
		}
	})
}

// buildAndCheck builds a service and checks whatever the core accepts (the fuzzers' property);
// it reports whether the service was valid.
func buildAndCheck(t *testing.T, svc *api.InferenceService) bool {
	t.Helper()
	if resolved, errs := api.ResolveShape(svc); len(errs) == 0 {
		if _, err := render.Plan(svc, resolved); err != nil {
			t.Fatalf("a valid shape is not planned: %v", err)
		}
	}
	tree, errs := render.Build(svc)
	if len(errs) > 0 {
		if tree != nil {
			t.Fatalf("invalid input produced a tree: %v", errs)
		}
		return false
	}
	if replicaCount(tree) <= maxCheckedReplicas { // rendering and planning thousands of replicas only slows the fuzzer
		checkTree(t, tree)
	}
	return true
}

// TestBuildMutatedExamples is the fuzzer's property on structured mutations of every example and
// case, as a plain test (make test): byte-level fuzzing mostly makes YAML that does not parse, and
// its instrumented build of every package costs more CI time than it finds. Each mutation changes
// the fields that shape the tree (replicas, nodes, gang, await, rollout, roles), so most mutants are
// valid services the core must build whole, and the rest must be refused without a tree.
// `make fuzz` runs the coverage-guided fuzzer for longer sessions.
func TestBuildMutatedExamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	valid, total := 0, 0
	for _, input := range goldenInputs(t) {
		data, err := os.ReadFile(input)
		require.NoError(t, err)
		for i := 0; i < mutantsPerInput; i++ {
			docs, errs := api.Decode(data)
			require.Empty(t, errs)
			for _, doc := range docs {
				mutate(rng, doc.Service)
				if buildAndCheck(t, doc.Service) {
					valid++
				}
				total++
			}
		}
	}
	t.Logf("%d of %d mutants were valid services, built and checked whole", valid, total)
	assert.Greater(t, valid, total/4, "most mutants must be services the core builds, or the test checks little")
}

const mutantsPerInput = 150

// mutate changes one to three shape fields of a service at random.
func mutate(rng *rand.Rand, svc *api.InferenceService) {
	spec := &svc.Spec
	for n := 1 + rng.IntN(3); n > 0 && len(spec.Roles) > 0; n-- {
		role := &spec.Roles[rng.IntN(len(spec.Roles))]
		switch rng.IntN(15) {
		case 0:
			role.Replicas = ptr.To(rng.IntN(12))
		case 1:
			role.Multinode = &api.Multinode{NodeCount: rng.IntN(6)}
		case 2:
			role.Multinode = nil
		case 3:
			spec.GangPolicy = &api.GangPolicy{Mode: []api.GangMode{api.GangModeSubGroup, api.GangModeTaskMember, ""}[rng.IntN(3)],
				MinRoleReplicas: map[string]int{role.Name: rng.IntN(4)}}
		case 4:
			spec.Await = []api.AwaitMode{api.AwaitAll, api.AwaitMinimal, api.AwaitNone}[rng.IntN(3)]
		case 5:
			role.RolloutStrategy = &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(int32(rng.IntN(5)))),
				MaxSurge: ptr.To(rng.IntN(2)), Partition: ptr.To(rng.IntN(4))}
		case 6:
			role.RolloutStrategy = &api.RolloutStrategy{MaxUnavailable: ptr.To(intstr.FromString([]string{"25%", "50%", "100%", "0%"}[rng.IntN(4)]))}
		case 7:
			i := rng.IntN(len(spec.Roles))
			spec.Roles = append(spec.Roles[:i:i], spec.Roles[i+1:]...)
		case 8:
			role.ComponentType = []api.ComponentType{api.ComponentTypeWorker, api.ComponentTypePrefiller, api.ComponentTypeDecoder}[rng.IntN(3)]
		case 9:
			spec.RolloutOrder = []string{role.Name}
		case 10:
			spec.Monitoring = &api.Monitoring{PrometheusAddress: "http://prometheus.monitoring:9090"}
			role.Autoscaling = &api.Autoscaling{MaxReplicas: rng.IntN(8), Metric: api.KnownMetrics[rng.IntN(len(api.KnownMetrics))],
				Target: float64(rng.IntN(3)), ScaleDownDelay: []string{"", "30s", "1h1m"}[rng.IntN(3)]}
		case 11:
			role.Autoscaling = nil
		case 12:
			spec.Monitoring = &api.Monitoring{PodMonitors: rng.IntN(2) == 0, Dashboard: rng.IntN(2) == 0}
		case 13:
			spec.Model = randomModel(rng)
		case 14:
			role.Model = randomModel(rng)
		}
	}
}

// randomModel is one of the kinds of model source, mostly valid, with or without caches.
func randomModel(rng *rand.Rand) *api.Model {
	cache := &api.ModelCache{Size: []string{"100Gi", "0", ""}[rng.IntN(3)], StorageClassName: "shared"}
	var compile *api.CompileCache
	if rng.IntN(2) == 0 {
		compile = &api.CompileCache{}
	}
	switch rng.IntN(5) {
	case 0:
		return &api.Model{Source: "s3://models/llama", LoadFormat: api.RunaiStreamer, CompileCache: compile}
	case 1:
		return &api.Model{Source: "pvc://weights/llama", CompileCache: compile}
	case 2:
		return &api.Model{Source: "oci://registry.example/models/llama:1", Cache: cache}
	}
	return &api.Model{Source: "hf://org/model@v" + strconv.Itoa(rng.IntN(3)), Cache: cache, CompileCache: compile}
}

// maxCheckedReplicas bounds the work per input: inputs near the 10,000-replica bound are valid but
// take seconds to render, and the fuzzer re-runs each interesting input many times to minimize it.
const maxCheckedReplicas = 200

func replicaCount(tree *render.Tree) int {
	n := 0
	for i := range tree.Service.Spec.Roles {
		n += int(tree.Service.Spec.Roles[i].ReplicaCount())
	}
	return n
}

func checkTree(t *testing.T, tree *render.Tree) {
	t.Helper()
	wantLWS, wantScaledObjects, podGroups, lwss, scaledObjects, nodePools, routerObjects, controllerObjects := 0, 0, 0, 0, 0, 0, 0, 0
	monitoringObjects, wantMonitoring := 0, 0
	modelObjects, wantModelObjects := 0, 0
	if m := tree.Service.Spec.Monitoring; m != nil {
		if m.PodMonitors {
			wantMonitoring += len(tree.Service.Spec.Roles) // every role's, a dual-pods role's too
		}
		if m.Dashboard {
			wantMonitoring++
		}
	}
	owners := map[string]bool{}
	models := resolvedModels(t, tree.Service)
	for i := range tree.Service.Spec.Roles {
		if r := &tree.Service.Spec.Roles[i]; r.ComponentType.Serving() {
			if m := models[api.ModelOwner(r)]; tree.Service.Spec.ModelOf(r) != nil && !owners[api.ModelOwner(r)] {
				owners[api.ModelOwner(r)] = true
				wantModelObjects += map[bool]int{true: 2}[m.Downloads()] + map[bool]int{true: 1}[m.CompileCache != nil] +
					map[bool]int{true: 1}[m.Downloads() && m.HasAdapters()] // the adapter list
			}
			wantLWS += int(r.ReplicaCount())
			if r.Autoscaled() {
				wantLWS++ // the elastic replicas' LWS
				wantScaledObjects++
			}
		}
	}
	for i := range tree.Objects {
		switch o := tree.Objects[i].Object.(type) {
		case *lwsv1.LeaderWorkerSet:
			lwss++
			if want := map[bool]int32{false: 1, true: 0}[tree.Objects[i].Elastic]; *o.Spec.Replicas != want {
				t.Fatalf("%s has %d replicas, want %d (the autoscaler sets an elastic LWS's)", o.Name, *o.Spec.Replicas, want)
			}
		case *keda.ScaledObject:
			scaledObjects++
			if o.Spec.ScaleTargetRef.Name != api.ElasticLeaderWorkerSetName(tree.Service.Name, tree.Objects[i].Role) {
				t.Fatalf("ScaledObject %s scales %s", o.Name, o.Spec.ScaleTargetRef.Name)
			}
		case *volcanov1beta1.PodGroup:
			podGroups++
		case *corev1.PersistentVolumeClaim, *batchv1.Job:
			modelObjects++
		case *karpenter.NodePool:
			nodePools++
		case *monitoringv1.PodMonitor:
			monitoringObjects++
			if o.Spec.PodMetricsEndpoints[0].PortNumber == nil && o.Spec.PodMetricsEndpoints[0].Port == nil {
				t.Fatalf("PodMonitor %s scrapes no port", o.Name)
			}
		case *corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding, *corev1.ConfigMap, *appsv1.Deployment, *corev1.Service:
			if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == api.AdaptersConfigMapName(tree.Service.Name, tree.Objects[i].Role) {
				modelObjects++
			} else if tree.Objects[i].Suffix == "dashboard" {
				monitoringObjects++
				if !json.Valid([]byte(o.(*corev1.ConfigMap).Data[tree.Service.Name+".json"])) {
					t.Fatalf("the dashboard of %s is not JSON", tree.Service.Name)
				}
			} else if isDualPodsControllerObject(tree.Objects[i].Suffix) {
				controllerObjects++ // FMA's controller has an account, permissions and a Deployment too
			} else {
				routerObjects++
			}
		case *inferencev1.InferencePool, *inferencev1alpha2.InferencePool, *gatewayv1.HTTPRoute, *render.InferenceModelRewrite,
			*policyv1.PodDisruptionBudget:
			routerObjects++
		case *unstructured.Unstructured, *admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding,
			*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			if strings.HasPrefix(tree.Objects[i].Suffix, "epp-auth-") {
				routerObjects++ // the picker's metrics auth
			} else {
				controllerObjects++
			}
		case *corev1.Secret: // the picker's metrics token
			routerObjects++
		default:
			t.Fatalf("unexpected object %T", o)
		}
		if _, err := tree.Objects[i].YAML(); err != nil {
			t.Fatal(err)
		}
	}
	if lwss != wantLWS || scaledObjects != wantScaledObjects {
		t.Fatalf("%d LWSs and %d ScaledObjects, want %d and %d", lwss, scaledObjects, wantLWS, wantScaledObjects)
	}
	if modelObjects != wantModelObjects {
		t.Fatalf("%d claims and Jobs of models, want %d", modelObjects, wantModelObjects)
	}
	checkModels(t, tree)
	if monitoringObjects != wantMonitoring {
		t.Fatalf("%d PodMonitors and dashboards, want %d", monitoringObjects, wantMonitoring)
	}
	if gang := tree.Service.Spec.GangScheduled(); (podGroups == 1) != gang || podGroups > 1 {
		t.Fatalf("%d PodGroups, gang scheduled %v", podGroups, gang)
	}
	karpenterPools := 0
	for _, p := range tree.Service.Spec.NodePools {
		if p.PoolKind() == api.NodePoolKarpenter {
			karpenterPools++
		}
	}
	if nodePools != karpenterPools {
		t.Fatalf("%d NodePools for %d karpenter pools", nodePools, karpenterPools)
	}
	if (controllerObjects > 0) != tree.Service.Spec.InstallsDualPodsController() {
		t.Fatalf("%d dual-pods controller objects, install %v", controllerObjects, tree.Service.Spec.InstallsDualPodsController())
	}
	if router := tree.Service.Spec.Router(); router == nil && routerObjects > 0 {
		t.Fatalf("%d router objects without a router", routerObjects)
	} else if router != nil {
		checkRouting(t, tree)
	}
	checkDualPods(t, tree)
	render.Summarize(tree)
	checkDependsOnEarlier(t, tree)
	checkRolloutChain(t, tree)
	prediction, err := planner.Predict(tree.Service, planner.Uniform(6, 8))
	if err != nil {
		return // a tier name the cluster does not define
	}
	for _, r := range prediction.Replicas {
		if r.Scheduled != (len(r.Nodes) == int(r.Pods)) && r.Pods > 0 {
			t.Fatalf("replica %s scheduled=%v on %d of %d nodes", r.Name(), r.Scheduled, len(r.Nodes), r.Pods)
		}
	}
}

// checkModels: every pod of a role with a model has the model's volume mounted read-only where
// the server's --model points (streamed models aside), and each of its LWSs is created after
// the model's download.
func checkModels(t *testing.T, tree *render.Tree) {
	t.Helper()
	spec := &tree.Service.Spec
	names := map[string]string{} // suffix -> name
	for _, o := range tree.Objects {
		names[o.Suffix] = o.Name
	}
	models := resolvedModels(t, tree.Service)
	for _, o := range tree.Objects {
		lws, ok := o.Object.(*lwsv1.LeaderWorkerSet)
		if !ok {
			continue
		}
		role := spec.RoleNamed(o.Role)
		m := models[api.ModelOwner(role)]
		if spec.ModelOf(role) == nil {
			continue
		}
		job := api.ModelDownloadJobName(tree.Service.Name, api.ModelOwner(role))
		if m.Downloads() && !slices.ContainsFunc(o.DependsOn, func(suffix string) bool { return names[suffix] == job }) {
			t.Fatalf("%s is created without waiting for its model's download: %v", o.Name, o.DependsOn)
		}
		templates := []*corev1.PodTemplateSpec{&lws.Spec.LeaderWorkerTemplate.WorkerTemplate}
		if lt := lws.Spec.LeaderWorkerTemplate.LeaderTemplate; lt != nil {
			templates = append(templates, lt)
		}
		for _, tpl := range templates {
			if m.LoadFormat == api.RunaiStreamer || role.DualPods() {
				continue // streamed: no volume; dual pods: the volume is in FMA's server patch
			}
			mounted := false
			for _, vm := range tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)].VolumeMounts {
				mounted = mounted || (vm.Name == api.ModelVolumeName && vm.MountPath == api.ModelMountPath && vm.ReadOnly)
			}
			if !mounted {
				t.Fatalf("%s: a pod of a role with a model does not mount it read-only at %s", o.Name, api.ModelMountPath)
			}
		}
	}
}

// checkDependsOnEarlier: a caller registers objects in order, so a dependency (for creation or
// for a rollout) must come first.
func checkDependsOnEarlier(t *testing.T, tree *render.Tree) {
	t.Helper()
	seen := map[string]bool{}
	after := rolloutAfter(tree)
	for _, o := range tree.Objects {
		for _, dep := range append(append([]string{}, o.DependsOn...), after[o.Suffix]...) {
			if !seen[dep] {
				t.Fatalf("%s depends on %s, which comes later", o.Suffix, dep)
			}
		}
		seen[o.Suffix] = true
	}
}

// checkRolloutChain: with every replica awaited, each LWS is in a batch, batches of one role hold
// at most its batch size (the gang's minimal set may hold more), and an LWS is updated after
// exactly the objects of the batch before, and created without waiting for any other LWS;
// without awaits no LWS is in a batch.
func checkRolloutChain(t *testing.T, tree *render.Tree) {
	t.Helper()
	spec := &tree.Service.Spec
	byBatch := map[int][]render.Object{}
	lws := map[string]bool{}
	for _, o := range tree.Objects {
		lws[o.Suffix] = o.TypeMeta == render.KindLeaderWorkerSet
		if o.TypeMeta == render.KindLeaderWorkerSet || o.Batch > 0 {
			byBatch[o.Batch] = append(byBatch[o.Batch], o)
		}
	}
	if !spec.RolloutBatched() {
		for batch, objects := range byBatch {
			if batch != 0 {
				t.Fatalf("%s is in rollout batch %d of an unawaited service", objects[0].Suffix, batch)
			}
		}
		return
	}
	rolledAfter := rolloutAfter(tree)
	for batch, objects := range byBatch {
		if batch == 0 {
			t.Fatalf("%s is in no batch", objects[0].Suffix)
		}
		perRole := map[string]int{}
		for _, o := range objects {
			if !o.Elastic { // an elastic LWS is rolled by LWS itself, after the base replicas
				perRole[o.Role]++
			}
			after := o.DependsOn // the router's stage, and an elastic LWS
			if o.RolledInBatches() {
				after = rolledAfter[o.Suffix]
				for _, d := range o.DependsOn {
					if lws[d] {
						t.Fatalf("%s waits for %s to be created", o.Suffix, d)
					}
				}
			}
			var deps []string
			for _, d := range after {
				for _, before := range byBatch[batch-1] {
					if before.Suffix == d {
						deps = append(deps, d)
					}
				}
			}
			if len(deps) != len(byBatch[batch-1]) {
				t.Fatalf("%s (batch %d) is updated after %v of the %d objects of the batch before", o.Suffix, batch, deps, len(byBatch[batch-1]))
			}
		}
		for name, n := range perRole {
			role := spec.RoleNamed(name)
			if role.ComponentType.Serving() && n > int(role.RolloutBatchSize()) && (batch != 1 || !spec.GangScheduled() || n > int(spec.GangMinimum(role))) {
				t.Fatalf("batch %d updates %d replicas of %s, more than its batch size %d", batch, n, name, role.RolloutBatchSize())
			}
		}
	}
}

// isDualPodsControllerObject tells FMA's controller objects from the router's of the same kinds.
func isDualPodsControllerObject(suffix string) bool {
	return strings.HasPrefix(suffix, "fma-") || suffix == "dual-pods-controller"
}

// resolvedModels are a valid service's models as validation resolves them, by owner.
func resolvedModels(t *testing.T, svc *api.InferenceService) map[string]*api.ResolvedModel {
	t.Helper()
	resolved, errs := api.Resolve(svc)
	if len(errs) > 0 {
		t.Fatalf("a built service does not validate: %v", errs)
	}
	return resolved.Models
}
