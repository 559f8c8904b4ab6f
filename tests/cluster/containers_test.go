package cluster

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// The programs that stand for images, and the command lines they are run with.
func TestImagesHavePrograms(t *testing.T) {
	for _, tc := range []struct {
		image   string
		program string // "" for none
	}{
		{"vllm/vllm-openai:v0.33.0", "llm-d-inference-sim"},
		{"docker.io/vllm/vllm-openai:v0.11.0@sha256:0123", "llm-d-inference-sim"},
		{"registry.k8s.io/gateway-api-inference-extension/epp:" + GIEEndpointPickerVersion, "gie-epp"},
		{"mirror.example.com/gateway-api-inference-extension/epp:" + GIEEndpointPickerVersion, "gie-epp"},
		{"registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0", ""}, // a release the suite does not build
		{"registry.k8s.io/gateway-api-inference-extension/lwepp:" + GIELightweightEndpointPickerVersion, "gie-lwepp"},
		{"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0", ""},
		{"ghcr.io/llm-d-incubation/llm-d-fast-model-actuation/requester:v0.6.4", ""},
	} {
		im, ok := imageOf(tc.image)
		assert.Equal(t, tc.program != "", ok, tc.image)
		assert.Equal(t, tc.program, im.binary.name, tc.image)
		matched, err := regexp.MatchString(programImagePattern(), tc.image)
		require.NoError(t, err)
		assert.Equal(t, ok, matched, "kwok's selector of the pods with programs agrees: %s", tc.image)
	}
}

// The Endpoint Picker runs with the rendered Deployment's arguments, its configuration file's path
// under the ConfigMap's directory and its ports on loopback ports of its own, nothing else changed.
func TestEndpointPickerRunsWithTheRenderedArguments(t *testing.T) {
	svc := render.WithDefaults(&api.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "llm"},
		Spec: api.InferenceServiceSpec{Roles: []api.Role{
			{Name: "server", ComponentType: api.ComponentTypeWorker, Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "vllm", Image: "vllm/vllm-openai:v0.33.0", Args: []string{"--model", "m"}}}}}},
			{Name: "router", ComponentType: api.ComponentTypeRouter, HTTPRoute: map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}},
		}}})
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	var deployment *appsv1.Deployment
	var config *corev1.ConfigMap
	for _, o := range tree.Objects {
		switch obj := o.Object.(type) {
		case *appsv1.Deployment:
			deployment = obj
		case *corev1.ConfigMap:
			config = obj
		}
	}
	require.NotNil(t, deployment)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "chat-epp-x", Namespace: "llm", UID: "uid"}, Spec: deployment.Spec.Template.Spec,
		Status: corev1.PodStatus{PodIP: "127.20.0.5"}}
	run := testRun(t, pod, &pod.Spec.Containers[0], config)
	args, env, err := containerCommand(run)
	require.NoError(t, err)
	rendered := pod.Spec.Containers[0].Args
	require.Len(t, args, len(rendered))
	mapped := 0
	for i, arg := range rendered {
		if arg == args[i] {
			continue
		}
		mapped++
		if n, err := strconv.Atoi(arg); err == nil {
			assert.Equal(t, strconv.Itoa(run.ports[int32(n)]), args[i], "%s %s", rendered[i-1], arg)
			continue
		}
		assert.Equal(t, "/config/config.yaml", arg)
		data, err := os.ReadFile(args[i])
		require.NoError(t, err, "the configuration file is there")
		assert.Equal(t, config.Data["config.yaml"], string(data))
	}
	assert.Equal(t, 4, mapped, "the configuration file and the three ports (gRPC, health, metrics)")
	assert.Contains(t, env, "NAMESPACE=llm")
	assert.Contains(t, env, "POD_NAME=chat-epp-x")
	kubeconfig, err := os.ReadFile(strings.TrimPrefix(env[0], "KUBECONFIG="))
	require.NoError(t, err)
	assert.Contains(t, string(kubeconfig), `as: "system:serviceaccount:llm:chat-epp"`, "it acts as its ServiceAccount")
}

// vLLM's command line, in its forms, becomes llm-d-inference-sim's: the model, the served names,
// the flags the two share, the sim's own from the annotation; vLLM's other flags are left out.
func TestModelServerCommandFromVLLM(t *testing.T) {
	base := []string{"--force-dummy-tokenizer", "--zmq-endpoint="}
	for _, tc := range []struct {
		name       string
		command    []string
		args       []string
		annotation string
		port       int32 // the container port the server listens on
		want       []string
	}{{
		name: "flags", args: []string{"--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "8", "--max-model-len=8192"}, port: 8000,
		want: append(append([]string{"--model", "Qwen/Qwen3-8B", "--port", "PORT"}, base...), "--max-model-len", "8192"),
	}, {
		name: "vllm serve's positional model, its port and sleep mode", command: []string{"vllm", "serve"},
		args: []string{"ibm-granite/granite-3.3-2b-instruct", "--port=8200", "--enable-sleep-mode", "--max-num-seqs", "64"}, port: 8200,
		want: append(append([]string{"--model", "ibm-granite/granite-3.3-2b-instruct", "--port", "PORT"}, base...), "--max-num-seqs", "64", "--enable-sleep-mode"),
	}, {
		name: "served names, LoRA adapters and the sim's own arguments",
		args: []string{"--model", "m", "--served-model-name", "a", "b", "--lora-modules", "sql=/adapters/sql"}, port: 8000,
		annotation: "--time-to-first-token=10ms --enable-kvcache",
		want: append(append([]string{"--model", "m", "--port", "PORT"}, base...), "--served-model-name", "a", "b",
			"--lora-modules", `{"base_model_name":"m","name":"sql","path":"/adapters/sql"}`, "--time-to-first-token=10ms", "--enable-kvcache"),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u",
				Annotations: map[string]string{ModelServerArgsAnnotation: tc.annotation}},
				Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:v0.33.0", Command: tc.command, Args: tc.args}}},
				Status: corev1.PodStatus{PodIP: "127.20.0.6"}}
			run := testRun(t, pod, &pod.Spec.Containers[0], nil)
			launches, err := modelServerLaunches(run)
			require.NoError(t, err)
			require.Len(t, launches, 1)
			args, env := launches[0].args, launches[0].env
			port, ok := run.ports[tc.port]
			require.True(t, ok, "the server's port %d is forwarded", tc.port)
			for i, w := range tc.want {
				if w == "PORT" {
					tc.want[i] = strconv.Itoa(port)
				}
			}
			assert.Equal(t, tc.want, args)
			assert.Contains(t, env, "POD_NAME=p")
			assert.Contains(t, env, "POD_IP=127.20.0.6")
		})
	}
}

// testRun prepares a container of pod, with the ConfigMap in a fake API server.
func testRun(t *testing.T, pod *corev1.Pod, container *corev1.Container, config *corev1.ConfigMap) *containerRun {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte("users: [{name: admin, user: {token: \"t\"}}]\n"), 0o600))
	clients := fake.NewClientset()
	if config != nil {
		config = config.DeepCopy()
		config.Namespace = pod.Namespace
		clients = fake.NewClientset(config)
	}
	c := &Cluster{Dir: dir, Kubeconfig: kubeconfig, Clientset: clients}
	run := &containerRun{k: &containers{c: c}, pod: pod, container: container, ports: map[int32]int{}, mounts: map[string]string{}}
	for _, p := range container.Ports {
		_, err := run.listen(p.ContainerPort)
		require.NoError(t, err)
	}
	return run
}

// A deleted pod's containers get SIGTERM after their preStop sleep, the longest of them.
func TestPreStopSleep(t *testing.T) {
	sleep := func(seconds int64) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: seconds}}}
	}
	exec := func(command ...string) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: command}}}
	}
	for _, tc := range []struct {
		name  string
		hooks []*corev1.Lifecycle
		want  time.Duration
	}{
		{"none", []*corev1.Lifecycle{nil}, 0},
		{"a sleep action", []*corev1.Lifecycle{sleep(30)}, 30 * time.Second},
		{"sleep as a command", []*corev1.Lifecycle{exec("/usr/bin/sleep", "2.5")}, 2500 * time.Millisecond},
		{"another command is not run", []*corev1.Lifecycle{exec("/bin/sh", "-c", "sleep 5")}, 0},
		{"the longest of the containers'", []*corev1.Lifecycle{sleep(3), exec("sleep", "7"), nil}, 7 * time.Second},
	} {
		pod := &corev1.Pod{}
		for _, hook := range tc.hooks {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Lifecycle: hook})
		}
		assert.Equal(t, tc.want, preStopSleep(pod), tc.name)
	}
}

// A data parallel pod's shell script (render.DataParallelScript) runs one llm-d-inference-sim a
// local rank: each with the rank the script gives it (from the pod's LWS_WORKER_INDEX) and on
// the loopback port of the rank's own container port, as vLLM's external load-balancing mode
// runs one `vllm serve` a rank.
func TestModelServerLaunchesOneSimPerDataParallelRank(t *testing.T) {
	role := &api.Role{Multinode: &api.Multinode{NodeCount: 2}, Parallelism: &api.Parallelism{Data: 4, Expert: true}}
	server := &corev1.Container{Name: "vllm", Image: "vllm/vllm-openai:v0.33.0", Args: []string{"--model", "Qwen/Qwen3-8B", "--max-num-seqs", "4", "--port", "8000"},
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "http-rank-1", ContainerPort: 8001}}}
	server.Args = []string{render.DataParallelScript(server, role, 8000)}
	server.Command = []string{"/bin/sh", "-c"}
	server.Env = []corev1.EnvVar{{Name: "LWS_WORKER_INDEX", Value: "1"}, {Name: "LWS_LEADER_ADDRESS", Value: "chat-server-0.chat-server.llm"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "chat-server-0-1", Namespace: "llm", UID: "u"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{*server}}, Status: corev1.PodStatus{PodIP: "127.20.0.7"}}
	run := testRun(t, pod, &pod.Spec.Containers[0], nil)
	launches, err := modelServerLaunches(run)
	require.NoError(t, err)
	require.Len(t, launches, 2, "one server a local rank")
	for i, l := range launches {
		port := int32(8000 + i)
		assert.Equal(t, 2+i, l.rank, "global rank: worker index 1 x 2 local ranks + %d", i)
		assert.Equal(t, []int32{port}, l.ports)
		assert.Equal(t, []string{"--model", "Qwen/Qwen3-8B", "--port", strconv.Itoa(run.ports[port]), "--force-dummy-tokenizer", "--zmq-endpoint=",
			"--max-num-seqs", "4", "--data-parallel-rank", strconv.Itoa(2 + i)}, l.args)
		assert.Contains(t, l.env, "POD_NAME=chat-server-0-1")
	}
}
