// SPDX-License-Identifier: Apache-2.0

package diagnosis_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// The fixtures are states of the simulated cluster, recorded by tests/e2e/status_test.go
// (FUSIONINFER_RECORD_FIXTURES=1): story 4 with 2 prefill and 3 decode replicas on 5 nodes of 8
// GPUs, Volcano's own conditions and events; story 1 whose image cannot be pulled; story 1 running.

func fixture(t *testing.T, name string) *diagnosis.Observed {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".yaml")
	require.NoError(t, err)
	o, err := diagnosis.ReadObserved(data)
	require.NoError(t, err)
	return o
}

func manifest(t *testing.T, file, namespace string) *api.InferenceService {
	t.Helper()
	data, err := os.ReadFile("../../examples/manifests/" + file)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	svc := docs[0].Service
	svc.Namespace = namespace
	return svc
}

// story4 is the service of the gang fixture.
func story4(t *testing.T) *api.InferenceService {
	svc := manifest(t, "story4-disaggregated-multinode.yaml", "status-gang")
	svc.Spec.Await = api.AwaitNone
	svc.Spec.Roles[0].Replicas, svc.Spec.Roles[1].Replicas = ptr.To(2), ptr.To(3)
	return svc
}

// revisionOf is the template revision the service gives the LWS named lws: what the recorded
// cluster runs when the fixture was recorded from that service.
func revisionOf(t *testing.T, svc *api.InferenceService, lws string) string {
	t.Helper()
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	for _, o := range tree.Objects {
		if o.TypeMeta == render.KindLeaderWorkerSet && o.Name == lws {
			return o.Object.(metav1.Object).GetLabels()[render.LabelRevision]
		}
	}
	t.Fatalf("no LeaderWorkerSet %s", lws)
	return ""
}

func story1(t *testing.T, namespace string) *api.InferenceService {
	return manifest(t, "story1-monolithic.yaml", namespace)
}

// story1Routed is story 1 behind a router (its default release), with the Endpoint Picker's
// Deployment as the core renders it.
func story1Routed(t *testing.T, router ...func(*api.Role)) (*api.InferenceService, *appsv1.Deployment) {
	t.Helper()
	svc := story1(t, "status-healthy")
	svc.Spec.Roles = append(svc.Spec.Roles, api.Role{Name: "router", ComponentType: api.ComponentTypeRouter,
		HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "inference-gateway"}}}})
	for _, f := range router {
		f(&svc.Spec.Roles[len(svc.Spec.Roles)-1])
	}
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	for _, o := range tree.Objects {
		if dep, ok := o.Object.(*appsv1.Deployment); ok {
			return svc, dep.DeepCopy()
		}
	}
	t.Fatal("no Endpoint Picker Deployment")
	return nil, nil
}

// eppFailing adds the Endpoint Picker's Deployment, not available, and its one pod, as the
// Deployment controller makes it (the template's labels and pod-template-hash, named after its
// ReplicaSet), its container waiting for the reason given; the observed Deployment carries its
// selector unless withoutSelector.
func eppFailing(dep *appsv1.Deployment, withoutSelector bool, waiting corev1.ContainerStateWaiting, image string) func(o *diagnosis.Observed) {
	return func(o *diagnosis.Observed) {
		observed := dep.DeepCopy()
		if withoutSelector {
			observed.Spec.Selector = nil
		}
		observed.Status = appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable,
			Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."}}}
		o.Deployments = append(o.Deployments, *observed)
		podLabels := map[string]string{"pod-template-hash": "6b8f9c7d54"}
		for k, v := range dep.Spec.Template.Labels {
			podLabels[k] = v
		}
		o.Pods = append(o.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: dep.Name + "-6b8f9c7d54-x7k2p", Namespace: dep.Namespace, Labels: podLabels},
			Spec:       corev1.PodSpec{NodeName: "status-healthy-0"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "epp", Image: image, State: corev1.ContainerState{Waiting: &waiting},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}},
			}}},
		})
	}
}

// eppStandingBy adds an Endpoint Picker Deployment of two replicas as the Deployment controller
// reports it with leader election: one pod Ready (the leader), the other running and not Ready,
// or waiting as standby says; the Deployment not Available (Recreate allows no unavailable pod).
// The recorded healthy servers are made svc's: its template revision, their pods in its pool.
func eppStandingBy(t *testing.T, svc *api.InferenceService, dep *appsv1.Deployment, standby *corev1.ContainerStateWaiting) func(o *diagnosis.Observed) {
	return func(o *diagnosis.Observed) {
		for i := range o.LeaderWorkerSets {
			o.LeaderWorkerSets[i].Labels[render.LabelRevision] = revisionOf(t, svc, o.LeaderWorkerSets[i].Name)
		}
		for i := range o.Pods {
			o.Pods[i].Labels[render.LabelServing] = "true"
		}
		observed := dep.DeepCopy()
		observed.Status = appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable,
				Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."}}}
		o.Deployments = append(o.Deployments, *observed)
		podLabels := map[string]string{"pod-template-hash": "6b8f9c7d54"}
		for k, v := range dep.Spec.Template.Labels {
			podLabels[k] = v
		}
		for _, name := range []string{"lead", "stand"} {
			ready := corev1.ConditionTrue
			state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
			if name == "stand" {
				ready = corev1.ConditionFalse
				if standby != nil {
					state = corev1.ContainerState{Waiting: standby}
				}
			}
			o.Pods = append(o.Pods, corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: dep.Name + "-6b8f9c7d54-" + name, Namespace: dep.Namespace, Labels: podLabels},
				Spec:       corev1.PodSpec{NodeName: "status-healthy-0"},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}},
					ContainerStatuses: []corev1.ContainerStatus{{Name: "epp", Image: dep.Spec.Template.Spec.Containers[0].Image, State: state}}},
			})
		}
	}
}

func TestDiagnosis(t *testing.T) {
	routed, epp := story1Routed(t)
	haRouted, haEPP := story1Routed(t, func(r *api.Role) { r.EndpointPicker = &api.EndpointPicker{Replicas: ptr.To(2)} })
	doors, doorsEPP := story1Routed(t, func(r *api.Role) {
		r.HTTPRoute, r.EndpointPicker = nil, &api.EndpointPicker{Replicas: ptr.To(2)}
	})
	cases := []struct {
		name    string
		svc     func(t *testing.T) *api.InferenceService // nil: --name, no spec
		fixture string
		mutate  func(o *diagnosis.Observed)
		phase   diagnosis.Phase
		exit    int
		want    []string // in the text report
		absent  []string
	}{
		{name: "a gang that cannot fit: the PodGroup and the GPUs it lacks", svc: story4, fixture: "gang-cannot-fit",
			phase: diagnosis.Pending, exit: 2, want: []string{
				"InferenceService deepseek-r1-disagg (namespace status-gang): not running yet",
				"PodGroup/deepseek-r1-disagg: Unschedulable: phase Inqueue, minMember 6: the gang's minimal set needs 48 GPUs at once; " +
					"the cluster's 5 ready GPU nodes have 40 free (Volcano: ",
				"prefill  0/2    deepseek-r1-disagg-prefill-0  Pending  PodGroup/deepseek-r1-disagg: waits for its gang (the PodGroup's cause above); Volcano: ",
				"decode   0/3    deepseek-r1-disagg-decode-0   Pending",
				"fix: each pod needs 8 free nvidia.com/gpu on one node (5 of the cluster's 5 ready nodes have that; 40 GPUs free in all): " +
					"add such nodes, use a smaller --tensor-parallel-size, or deploy with await: minimal and fewer replicas; " +
					"the gang's minimal set needs 48 GPUs",
			}},
		{name: "the same without the spec: the replicas found, no minimal set", fixture: "gang-cannot-fit",
			phase: diagnosis.Pending, exit: 2, want: []string{"PodGroup/deepseek-r1-disagg: Unschedulable", "deepseek-r1-disagg-decode-2"},
			absent: []string{"minimal set needs"}},
		{name: "an image that cannot be pulled: failed, with the kubelet's message", svc: func(t *testing.T) *api.InferenceService {
			svc := story1(t, "status-image") // as tests/e2e/status_test.go deployed it
			svc.Spec.Await = api.AwaitNone
			svc.Spec.Roles[0].Template.Annotations = map[string]string{"e2e.fusioninfer.io/image-pull-fails": "true"}
			svc.Spec.Roles[0].Template.Spec.Containers[0].Image = "vllm/vllm-openai:v0.33.0-typo"
			return svc
		}, fixture: "image-cannot-be-pulled", phase: diagnosis.Failed, exit: 3, want: []string{
			"InferenceService qwen-inference (namespace status-image): failed",
			`inference  0/1    qwen-inference-inference-0  Failed  Pod/qwen-inference-inference-0-0: container vllm: Back-off pulling image "vllm/vllm-openai:v0.33.0-typo"`,
			`fix: check the image "vllm/vllm-openai:v0.33.0-typo" and the pod's imagePullSecrets`,
		}},
		{name: "a healthy service: Running, nothing to report", svc: func(t *testing.T) *api.InferenceService {
			return story1(t, "status-healthy")
		}, fixture: "healthy", phase: diagnosis.Running, exit: 0, want: []string{
			"InferenceService qwen-inference (namespace status-healthy): Running\n",
			"inference  1/1    qwen-inference-inference-0  Running  -",
		}, absent: []string{"fix:"}},
		{name: "a replica not created yet", svc: func(t *testing.T) *api.InferenceService {
			svc := story1(t, "status-healthy")
			svc.Spec.Roles[0].Replicas = ptr.To(2)
			return svc
		}, fixture: "healthy", phase: diagnosis.Progressing, exit: 2, want: []string{
			"qwen-inference-inference-1  NotCreated  LeaderWorkerSet/qwen-inference-inference-1: not created yet",
		}},
		{name: "a server that crashes for memory", svc: func(t *testing.T) *api.InferenceService {
			return story1(t, "status-healthy")
		}, fixture: "healthy", mutate: func(o *diagnosis.Observed) {
			notAvailable(o)
			pod := &o.Pods[0]
			pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: "back-off 5m0s restarting failed container=vllm"}}
			pod.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "OOMKilled", ExitCode: 137}}
		}, phase: diagnosis.Failed, exit: 3, want: []string{
			"container vllm: back-off 5m0s restarting failed container=vllm; last run ended OOMKilled (exit code 137)",
			"fix: raise the container's memory limit",
		}},
		{name: "a server loading its model", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				unreadyPod(o)
			}, phase: diagnosis.Pending, exit: 2, want: []string{"Starting", "not ready yet: the server loads its model"}},
		{name: "an adapter that fails to load, named with its cause", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				pod := unreadyPod(o)
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: render.LoRALoaderContainerName,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
				probeFailed(o, pod, render.LoRALoaderContainerName, "adapter sql (/models/hf/org/sql/v1) failed to load: "+
					"400 Bad Request: LoRA rank 64 is greater than max_lora_rank 16.\n")
			}, phase: diagnosis.Pending, exit: 2, want: []string{
				"Pod/qwen-inference-inference-0-0: the server runs; its LoRA adapters are not all loaded: adapter sql (/models/hf/org/sql/v1) failed to load: " +
					"400 Bad Request: LoRA rank 64 is greater than max_lora_rank 16.",
				"fix: kubectl logs qwen-inference-inference-0-0 -c lora-loader",
			}},
		{name: "a server still loading its model, beside the adapters' loader", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				pod := unreadyPod(o)
				pod.Status.ContainerStatuses[0].Ready = false
				pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: render.LoRALoaderContainerName,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
				probeFailed(o, pod, render.LoRALoaderContainerName, "adapter sql (/models/hf/org/sql/v1) failed to load: "+
					"400 Bad Request: LoRA rank 64 is greater than max_lora_rank 16.\n")
			}, phase: diagnosis.Pending, exit: 2, want: []string{"not ready yet: the server loads its model"},
			absent: []string{"LoRA adapters"}},
		{name: "a data parallel rank that does not answer, named", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				pod := unreadyPod(o)
				pod.Status.ContainerStatuses[0].Ready = false
				probeFailed(o, pod, "vllm", "data parallel rank 3 (local rank 1, port 8001) did not answer GET /health: timed out\n")
			}, phase: diagnosis.Pending, exit: 2, want: []string{
				"Pod/qwen-inference-inference-0-0: runs, but data parallel rank 3 (local rank 1, port 8001) did not answer GET /health: timed out " +
					"(the pod is Ready, and its ranks routed, only when every rank answers)",
				"fix: kubectl logs qwen-inference-inference-0-0 -c vllm (every rank's server logs there)",
			}, absent: []string{"the server loads its model"}},
		{name: "a server's other probe failure stays the generic cause", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				pod := unreadyPod(o)
				pod.Status.ContainerStatuses[0].Ready = false
				probeFailed(o, pod, "vllm", "HTTP probe failed with statuscode: 503")
			}, phase: diagnosis.Pending, exit: 2, want: []string{"not ready yet: the server loads its model"}, absent: []string{"data parallel"}},
		{name: "a failed model download holds every replica", svc: func(t *testing.T) *api.InferenceService {
			svc := story1(t, "status-healthy")
			svc.Spec.Roles[0].Replicas = ptr.To(2)
			return svc
		}, fixture: "healthy", mutate: func(o *diagnosis.Observed) {
			o.Jobs = append(o.Jobs, batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference-model-download"},
				Status: batchv1.JobStatus{Failed: 11, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
					Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}}})
		}, phase: diagnosis.Failed, exit: 3, want: []string{
			"Job/qwen-inference-model-download: BackoffLimitExceeded: the model download failed: Job has reached the specified backoff limit",
			"qwen-inference-inference-1  Failed   Job/qwen-inference-model-download: waits for the model",
		}},
		{name: "a cache claim not bound", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				o.Claims = append(o.Claims, corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference-model"},
					Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("efs")}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}})
				o.Events = append(o.Events, corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "PersistentVolumeClaim", Name: "qwen-inference-model"},
					Type: corev1.EventTypeWarning, Reason: "ProvisioningFailed", Message: `storageclass.storage.k8s.io "efs" not found`})
			}, phase: diagnosis.Progressing, exit: 2, want: []string{
				`PersistentVolumeClaim/qwen-inference-model: Pending: not bound: storageclass.storage.k8s.io "efs" not found`,
			}},
		{name: "a replica that runs an older template", svc: func(t *testing.T) *api.InferenceService {
			svc := story1(t, "status-healthy")
			svc.Spec.Roles[0].Template.Spec.Containers[0].Image = "vllm/vllm-openai:v0.33.1"
			return svc
		}, fixture: "healthy", phase: diagnosis.Progressing, exit: 2, want: []string{
			"qwen-inference-inference-0  Updating  LeaderWorkerSet/qwen-inference-inference-0: runs template revision ",
			" (rollout batch 1 of 1): `pulumi up` has not applied it yet",
		}},
		{name: "a rollout pending: each replica's batch", svc: func(t *testing.T) *api.InferenceService {
			svc := story4(t)
			svc.Spec.Await = api.AwaitAll // batches: decode 0 + prefill 0, decode 1, decode 2, prefill 1
			for i := range svc.Spec.Roles {
				svc.Spec.Roles[i].Template.Spec.Containers[0].Image = "vllm/vllm-openai:v0.33.1"
			}
			return svc
		}, fixture: "gang-cannot-fit", phase: diagnosis.Progressing, exit: 2, want: []string{
			"deepseek-r1-disagg-decode-1   Updating  LeaderWorkerSet/deepseek-r1-disagg-decode-1: runs template revision " +
				revisionOf(t, story4(t), "deepseek-r1-disagg-decode-1") + ", the spec's is ",
			" (rollout batch 2 of 4): `pulumi up` has not applied it yet",
			" (rollout batch 4 of 4)",
		}},
		{name: "a node Karpenter cannot launch", svc: story4, fixture: "gang-cannot-fit", mutate: func(o *diagnosis.Observed) {
			nc := karpenter.NodeClaim{ObjectMeta: metav1.ObjectMeta{Name: "deepseek-r1-disagg-h100-x7k2p", Labels: map[string]string{karpenter.NodePoolLabelKey: "deepseek-r1-disagg-h100"}}}
			nc.Status.Conditions = []metav1.Condition{{Type: karpenter.ConditionTypeLaunched, Status: metav1.ConditionFalse, Reason: "InsufficientCapacityError",
				Message: "all requested instance types were unavailable during launch"}}
			o.NodeClaims = append(o.NodeClaims, nc)
		}, phase: diagnosis.Pending, exit: 2, want: []string{
			"NodeClaim/deepseek-r1-disagg-h100-x7k2p: InsufficientCapacityError: pool deepseek-r1-disagg-h100: Karpenter cannot launch its node: " +
				"all requested instance types were unavailable during launch",
		}},
		{name: "pods of a karpenter pool Karpenter has not acted on", svc: story4, fixture: "gang-cannot-fit", mutate: func(o *diagnosis.Observed) {
			for i := range o.Pods {
				o.Pods[i].Spec.NodeSelector = map[string]string{karpenter.NodePoolLabelKey: "deepseek-r1-disagg-h100"}
			}
		}, phase: diagnosis.Pending, exit: 2, want: []string{
			"fix: Karpenter has made no NodeClaim for NodePool deepseek-r1-disagg-h100: check that Karpenter runs (its logs) and that the pool's " +
				"limits and node class allow a node (kubectl describe nodepool deepseek-r1-disagg-h100)",
		}},
		{name: "a pool with no Ready endpoint", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				notAvailable(o)
				for i := range o.Pods {
					o.Pods[i].Labels[render.LabelServing] = "true"
					for j := range o.Pods[i].Status.Conditions {
						if o.Pods[i].Status.Conditions[j].Type == corev1.PodReady {
							o.Pods[i].Status.Conditions[j].Status = corev1.ConditionFalse
						}
					}
				}
				o.Deployments = append(o.Deployments, appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference-epp"},
					Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}}}})
			}, phase: diagnosis.Pending, exit: 2, want: []string{
				"InferencePool/qwen-inference-pool: NoReadyEndpoint: no pod it selects is Ready",
			}},
		// The Endpoint Picker's pods are found by its Deployment's selector (the service's and
		// the router role's labels), the observed one or else the rendered one.
		{name: "an Endpoint Picker that crash-loops", svc: func(t *testing.T) *api.InferenceService { return routed },
			fixture: "healthy", mutate: eppFailing(epp, false, corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
				Message: "back-off 5m0s restarting failed container=epp"}, epp.Spec.Template.Spec.Containers[0].Image),
			phase: diagnosis.Failed, exit: 3, want: []string{
				"Pod/" + epp.Name + "-6b8f9c7d54-x7k2p: CrashLoopBackOff: the Endpoint Picker: container epp: back-off 5m0s restarting failed container=epp; last run ended Error (exit code 1)",
				"kubectl logs " + epp.Name + "-6b8f9c7d54-x7k2p -c epp --previous",
			}, absent: []string{"Deployment/" + epp.Name + ": Unavailable"}},
		{name: "an Endpoint Picker whose image cannot be pulled, its Deployment read without a selector", svc: func(t *testing.T) *api.InferenceService { return routed },
			fixture: "healthy", mutate: eppFailing(epp, true, corev1.ContainerStateWaiting{Reason: "ImagePullBackOff",
				Message: `Back-off pulling image "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0"`}, epp.Spec.Template.Spec.Containers[0].Image),
			phase: diagnosis.Failed, exit: 3, want: []string{
				"Pod/" + epp.Name + "-6b8f9c7d54-x7k2p: ImagePullBackOff: the Endpoint Picker: container epp: Back-off pulling image",
				`check the image "` + epp.Spec.Template.Spec.Containers[0].Image + `"`,
			}, absent: []string{"Deployment/" + epp.Name + ": Unavailable"}},
		// issue 55: with leader election only the leader is Ready; the standby is healthy
		{name: "an Endpoint Picker of two replicas, the leader Ready and the standby not", svc: func(t *testing.T) *api.InferenceService { return haRouted },
			fixture: "healthy", mutate: eppStandingBy(t, haRouted, haEPP, nil),
			phase: diagnosis.Running, exit: 0, absent: []string{"Deployment/" + haEPP.Name, "NotReady", "the Endpoint Picker"}},
		{name: "an Endpoint Picker of two replicas whose standby crash-loops", svc: func(t *testing.T) *api.InferenceService { return haRouted },
			fixture: "healthy", mutate: eppStandingBy(t, haRouted, haEPP, &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=epp"}),
			phase: diagnosis.Failed, exit: 3, want: []string{"Pod/" + haEPP.Name + "-6b8f9c7d54-stand: CrashLoopBackOff: the Endpoint Picker: container epp"}},
		// issue 56: a standalone router's pickers do not elect: one not Ready is a door missing
		{name: "a standalone router's picker not Ready", svc: func(t *testing.T) *api.InferenceService { return doors },
			fixture: "healthy", mutate: eppStandingBy(t, doors, doorsEPP, nil),
			phase: diagnosis.Progressing, exit: 2, want: []string{"NotReady"}},
		{name: "a route no Gateway accepted", svc: func(t *testing.T) *api.InferenceService { return story1(t, "status-healthy") },
			fixture: "healthy", mutate: func(o *diagnosis.Observed) {
				route := gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "qwen-inference-httproute"}}
				route.Status.Parents = []gatewayv1.RouteParentStatus{{ParentRef: gatewayv1.ParentReference{Name: "inference-gateway"},
					Conditions: []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionFalse, Reason: "NotAllowedByListeners",
						Message: "no listener allows routes from namespace status-healthy"}}}}
				o.HTTPRoutes = append(o.HTTPRoutes, route)
			}, phase: diagnosis.Failed, exit: 3, want: []string{
				"HTTPRoute/qwen-inference-httproute: NotAllowedByListeners: Gateway inference-gateway: Accepted False: no listener allows routes",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, tc.fixture)
			if tc.mutate != nil {
				tc.mutate(o)
			}
			var svc *api.InferenceService
			if tc.svc != nil {
				svc = tc.svc(t)
			}
			name, namespace := o.LeaderWorkerSets[0].Labels["fusioninfer.io/service"], o.LeaderWorkerSets[0].Namespace
			report := diagnosis.Diagnose(name, namespace, svc, o)
			text := report.Text()
			assert.Equal(t, tc.phase, report.Phase, text)
			assert.Equal(t, tc.exit, report.ExitCode())
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
			for _, a := range tc.absent {
				assert.NotContains(t, text, a)
			}
		})
	}
}

// unreadyPod makes the first pod running but not Ready (the service not available) and returns it.
func unreadyPod(o *diagnosis.Observed) *corev1.Pod {
	notAvailable(o)
	pod := &o.Pods[0]
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			pod.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
	return pod
}

// probeFailed adds the kubelet's event for a failed readiness probe of the pod's container.
func probeFailed(o *diagnosis.Observed, pod *corev1.Pod, container, message string) {
	o.Events = append(o.Events, corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name,
		FieldPath: "spec.containers{" + container + "}"}, Type: corev1.EventTypeWarning, Reason: "Unhealthy", LastTimestamp: metav1.Now(),
		Message: "Readiness probe failed: " + message})
}

// notAvailable makes the fixture's LWS not Available, as when its pod stopped being ready.
func notAvailable(o *diagnosis.Observed) {
	for i := range o.LeaderWorkerSets[0].Status.Conditions {
		if o.LeaderWorkerSets[0].Status.Conditions[i].Type == "Available" {
			o.LeaderWorkerSets[0].Status.Conditions[i].Status = metav1.ConditionFalse
		}
	}
}

// TestFixturesRoundTrip: a recorded state reads back as written.
func TestFixturesRoundTrip(t *testing.T) {
	o := fixture(t, "image-cannot-be-pulled")
	data, err := o.YAML()
	require.NoError(t, err)
	again, err := diagnosis.ReadObserved(data)
	require.NoError(t, err)
	assert.Equal(t, o, again)
	assert.True(t, strings.Count(string(data), "\nkind: ") > 0)
}
