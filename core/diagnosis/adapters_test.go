// SPDX-License-Identifier: Apache-2.0

package diagnosis_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// serverPod is the healthy fixture's one server pod.
const serverPod = "qwen-inference-inference-0-0"

// withLoader gives the fixture's server pod the adapters' loader, running and ready as given,
// and what its loader said (none: it was not asked).
func withLoader(o *diagnosis.Observed, ready bool, said *diagnosis.LoRALoader) {
	pod := &o.Pods[0]
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: render.LoRALoaderContainerName})
	pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{Name: render.LoRALoaderContainerName,
		Ready: ready, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	if !ready {
		notAvailable(o)
		for i := range pod.Status.Conditions {
			if pod.Status.Conditions[i].Type == corev1.PodReady {
				pod.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
	}
	if said != nil {
		o.LoRALoaders = map[string]diagnosis.LoRALoader{pod.Name: *said}
	}
}

var (
	sqlLoaded  = vllm.AdapterState{Name: "sql", Path: "/models/hf/org/sql/v1", Loaded: true}
	chatLoaded = vllm.AdapterState{Name: "chat", Path: "/models/hf/org/chat/v1", Loaded: true}
	goneFailed = vllm.AdapterState{Name: "gone", Path: "/models/hf/org/gone/v1",
		Error: "no adapter_config.json in /models/hf/org/gone/v1: the adapter's files are not there"}
)

// TestAdaptersOfEachPod: the status lists, per replica and pod, the adapters its loader loaded
// and each that failed with its cause, from the loader's own state; a loader that cannot be asked
// is said so, and fails nothing.
func TestAdaptersOfEachPod(t *testing.T) {
	cases := []struct {
		name   string
		ready  bool
		said   *diagnosis.LoRALoader
		phase  diagnosis.Phase
		want   []diagnosis.PodAdapters
		text   []string
		absent []string
	}{
		{name: "every adapter loaded", ready: true,
			said:  &diagnosis.LoRALoader{State: &vllm.LoaderState{Adapters: []vllm.AdapterState{sqlLoaded, chatLoaded}}},
			phase: diagnosis.Running,
			want:  []diagnosis.PodAdapters{{Pod: serverPod, Loaded: []string{"sql", "chat"}}},
			text:  []string{"POD                           LORA ADAPTERS\n", serverPod + "  loaded: sql, chat\n"}},
		{name: "an adapter whose files are not there, named with its cause, the others loaded",
			said: &diagnosis.LoRALoader{State: &vllm.LoaderState{Adapters: []vllm.AdapterState{sqlLoaded, goneFailed},
				Problem: "adapter gone (/models/hf/org/gone/v1) failed to load: " + goneFailed.Error}},
			phase: diagnosis.Pending,
			want: []diagnosis.PodAdapters{{Pod: serverPod, Loaded: []string{"sql"},
				Failed: []diagnosis.FailedAdapter{{Name: "gone", Path: "/models/hf/org/gone/v1", Cause: goneFailed.Error}}}},
			text: []string{
				// the replica's cause, from the loader's state when no probe event says it
				"Pod/" + serverPod + ": the server runs; its LoRA adapters are not all loaded: adapter gone (/models/hf/org/gone/v1) failed to load: no adapter_config.json",
				serverPod + "  loaded: sql\n",
				"  failed: gone (/models/hf/org/gone/v1): no adapter_config.json in /models/hf/org/gone/v1: the adapter's files are not there\n",
			}},
		{name: "no adapter loaded yet: the loader says why", ready: false,
			said:  &diagnosis.LoRALoader{State: &vllm.LoaderState{Adapters: []vllm.AdapterState{}, Problem: "the model server is not answering yet: connection refused"}},
			phase: diagnosis.Pending,
			want:  []diagnosis.PodAdapters{{Pod: serverPod, Loaded: []string{}, Unknown: "the model server is not answering yet: connection refused"}},
			text:  []string{serverPod + "  not known: the model server is not answering yet: connection refused\n"}},
		{name: "a loader that does not answer fails nothing", ready: true,
			said:  &diagnosis.LoRALoader{Err: "the API server's proxy to port 8091: 503 Service Unavailable"},
			phase: diagnosis.Running,
			want: []diagnosis.PodAdapters{{Pod: serverPod, Loaded: []string{},
				Unknown: "its loader could not be asked: the API server's proxy to port 8091: 503 Service Unavailable"}},
			text: []string{serverPod + "  not known: its loader could not be asked: the API server's proxy to port 8091: 503 Service Unavailable\n"}},
		{name: "a loader not asked", ready: true, phase: diagnosis.Running,
			want: []diagnosis.PodAdapters{{Pod: serverPod, Loaded: []string{}, Unknown: "its loader was not asked (the pod does not run, or has no address yet)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := fixture(t, "healthy")
			withLoader(o, tc.ready, tc.said)
			report := diagnosis.Diagnose("qwen-inference", "status-healthy", story1(t, "status-healthy"), o)
			text := report.Text()
			assert.Equal(t, tc.phase, report.Phase, text)
			require.Len(t, report.Roles, 1)
			assert.Equal(t, tc.want, report.Roles[0].Replicas[0].Adapters, text)
			for _, w := range tc.text {
				assert.Contains(t, text, w)
			}
		})
	}
}

// TestNoAdaptersWithoutALoader: a pod without the loader lists none.
func TestNoAdaptersWithoutALoader(t *testing.T) {
	o := fixture(t, "healthy")
	report := diagnosis.Diagnose("qwen-inference", "status-healthy", story1(t, "status-healthy"), o)
	assert.Empty(t, report.Roles[0].Replicas[0].Adapters)
	assert.NotContains(t, report.Text(), "LORA ADAPTERS")
}

// TestTheProbeEventStillNamesTheCause: without the loader's state (an older loader, a proxy
// refused), the cause is the kubelet's event of the loader's probe, as before.
func TestTheProbeEventStillNamesTheCause(t *testing.T) {
	o := fixture(t, "healthy")
	withLoader(o, false, nil)
	o.Events = append(o.Events, corev1.Event{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: serverPod,
		FieldPath: "spec.containers{" + render.LoRALoaderContainerName + "}"}, Type: corev1.EventTypeWarning, Reason: "Unhealthy",
		LastTimestamp: metav1.Now(), Message: "Readiness probe failed: adapter sql (/models/hf/org/sql/v1) failed to load: 400 Bad Request: rank\n"})
	var svc *api.InferenceService = story1(t, "status-healthy")
	text := diagnosis.Diagnose("qwen-inference", "status-healthy", svc, o).Text()
	assert.Contains(t, text, "its LoRA adapters are not all loaded: adapter sql (/models/hf/org/sql/v1) failed to load: 400 Bad Request: rank")
}
