// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
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
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
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
		im, ok := programOf(&corev1.Container{Image: tc.image})
		assert.Equal(t, tc.program != "", ok, tc.image)
		assert.Equal(t, tc.program, im.binary.name, tc.image)
		matched, err := regexp.MatchString(programImagePattern(), tc.image)
		require.NoError(t, err)
		assert.Equal(t, ok, matched, "kwok's selector of the pods with programs agrees: %s", tc.image)
	}
	// The downloader's image holds two programs: the LoRA loader sidecar runs as the loader
	// built from this checkout; the download Job's container is no program (kwok completes its pod),
	// and kwok's selector picks neither (a loader's pod is picked by its server's image).
	for _, tc := range []struct {
		command []string
		program string
	}{
		{[]string{render.LoRALoaderCommand}, "fusioninfer-lora-loader"},
		{[]string{"/usr/local/bin/" + render.LoRALoaderCommand}, "fusioninfer-lora-loader"},
		{[]string{render.DownloaderCommand}, ""},
		{nil, ""},
	} {
		c := &corev1.Container{Image: render.DownloaderImage, Command: tc.command}
		im, ok := programOf(c)
		assert.Equal(t, tc.program != "", ok, tc.command)
		assert.Equal(t, tc.program, im.binary.name, tc.command)
		matched, err := regexp.MatchString(programImagePattern(), c.Image)
		require.NoError(t, err)
		assert.False(t, matched, "kwok's selector leaves the downloader's pods to kwok")
	}
}

// The LoRA loader runs with the rendered sidecar's arguments: the adapter list under the
// ConfigMap's directory, the server at its pod's address (localhost in a pod is the pod's
// network), its readiness endpoint on a loopback port of its own that the probe reaches.
func TestLoRALoaderRunsWithTheRenderedArguments(t *testing.T) {
	svc := render.WithDefaults(&api.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "llm"},
		Spec: api.InferenceServiceSpec{
			Model: &api.Model{Source: "hf://Qwen/Qwen3-8B", Cache: &api.ModelCache{Size: "20Gi", StorageClassName: "shared"},
				Adapters: []api.LoRAAdapter{{Name: "sql", Source: "hf://org/sql-lora"}}},
			Roles: []api.Role{{Name: "server", ComponentType: api.ComponentTypeWorker, Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "vllm", Image: "vllm/vllm-openai:v0.33.0", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}}}}}}}}})
	tree, errs := render.Build(svc)
	require.Empty(t, errs)
	var template *corev1.PodSpec
	var config *corev1.ConfigMap
	for _, o := range tree.Objects {
		switch obj := o.Object.(type) {
		case *lwsv1.LeaderWorkerSet:
			template = &obj.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
		case *corev1.ConfigMap:
			if _, ok := obj.Data[render.AdapterListFile]; ok {
				config = obj
			}
		}
	}
	require.NotNil(t, template)
	require.NotNil(t, config)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "chat-server-0", Namespace: "llm", UID: "uid"}, Spec: *template,
		Status: corev1.PodStatus{PodIP: "127.20.0.7"}}
	var loader *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == render.LoRALoaderContainerName {
			loader = &pod.Spec.Containers[i]
		}
	}
	require.NotNil(t, loader)
	im, ok := programOf(loader)
	require.True(t, ok, "the loader's container has a program")
	run := testRun(t, pod, loader, config)
	launches, err := im.launches(run)
	require.NoError(t, err)
	require.Len(t, launches, 1, "the loader is one process")
	args := launches[0].args
	list, found := vllm.FlagValue(args, "--adapters")
	require.True(t, found, "%v", args)
	data, err := os.ReadFile(list)
	require.NoError(t, err, "the adapter list is there")
	assert.Equal(t, config.Data[render.AdapterListFile], string(data))
	assert.Equal(t, []string{"http://127.20.0.7:8000"}, flagValues(args, "--server"), "the server of its own pod, and no other")
	// the cache claim is a directory of the suite's, shared by the pods that mount it; the loader
	// finds an adapter's files at the list's path under its --root, as in its pod
	root, found := vllm.FlagValue(args, "--root")
	require.True(t, found, "%v", args)
	var adapters vllm.AdapterList
	require.NoError(t, json.Unmarshal(data, &adapters))
	claim := run.k.c.ClaimDir("llm", "chat-model")
	cached := filepath.Join(claim, strings.TrimPrefix(adapters.Adapters[0].Path, api.ModelMountPath), vllm.AdapterConfigFile)
	require.NoError(t, os.MkdirAll(filepath.Dir(cached), 0o755))
	require.NoError(t, os.WriteFile(cached, []byte("{}"), 0o644))
	_, err = os.Stat(filepath.Join(root, adapters.Adapters[0].Path, vllm.AdapterConfigFile))
	assert.NoError(t, err, "the adapter's files, written into the claim, are at its path under the loader's root")
	listen, _ := vllm.FlagValue(args, "--listen")
	assert.Regexp(t, `^127\.0\.0\.1:[0-9]+$`, listen, "it listens on a loopback port of its own")
	probe := loader.ReadinessProbe.Exec
	require.NotNil(t, probe, "its readiness probe runs the loader")
	probeArgs, err := im.execArgs(run, probe.Command[1:])
	require.NoError(t, err)
	asked, _ := vllm.FlagValue(probeArgs, "--listen")
	assert.Equal(t, listen, asked, "the probe asks the loader where it listens")
	assert.Contains(t, probeArgs, "--probe")
}

// A ConfigMap volume follows its ConfigMap, as the kubelet refreshes a mounted ConfigMap (not
// one mounted with subPath): a loader sees an adapter added by pulumi up.
func TestConfigMapVolumesFollowTheirConfigMap(t *testing.T) {
	config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "adapters"}, Data: map[string]string{"adapters.json": `{"adapters": []}`}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u"}, Spec: corev1.PodSpec{
		Volumes: []corev1.Volume{{Name: "list", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "adapters"}}}}},
		Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "list", MountPath: "/etc/list"}}}}}}
	run := testRun(t, pod, &pod.Spec.Containers[0], config)
	require.NoError(t, run.mountVolumes())
	file := filepath.Join(run.mounts["/etc/list"], "adapters.json")
	changed := config.DeepCopy()
	changed.Namespace = "n"
	changed.Data["adapters.json"] = `{"adapters": [{"name": "sql", "path": "/models/sql"}]}`
	run.k.configMapChanged(changed)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, changed.Data["adapters.json"], string(data))
	other := changed.DeepCopy()
	other.Namespace = "elsewhere"
	other.Data["adapters.json"] = "{}"
	run.k.configMapChanged(other)
	data, err = os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, changed.Data["adapters.json"], string(data), "another namespace's ConfigMap of the name is not this pod's")
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
	}, {
		// the sim serves LoRA always (its load and unload endpoints, pkg/communication/http.go) and
		// has no rank: --max-loras, its adapters a batch may mix, is what it reads
		name: "LoRA on, as the adapters' servers are rendered",
		args: []string{"--model", "m", "--enable-lora", "--max-loras", "2", "--max-lora-rank", "16"}, port: 8000,
		want: append(append([]string{"--model", "m", "--port", "PORT"}, base...), "--max-loras", "2"),
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

// An exec readiness probe runs the container's own program (the LoRA loader's `--probe`) and
// passes when it exits 0; a probe of another program is refused, not taken for a pass.
func TestExecProbeRunsTheContainersProgram(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "n", UID: "u"}}
	for _, tc := range []struct {
		name, binary string
		command      []string
		ready        bool
	}{
		{"the program says ready", "/bin/true", []string{"loader", "--probe"}, true},
		{"the program says not ready", "/bin/false", []string{"/usr/local/bin/loader", "--probe"}, false},
		{"another program", "/bin/true", []string{"sh", "-c", "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			container := &corev1.Container{Name: "c", ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				Exec: &corev1.ExecAction{Command: tc.command}}}}
			run := testRun(t, pod, container, nil)
			run.image = image{command: "loader", execArgs: func(_ *containerRun, words []string) ([]string, error) { return words, nil }}
			run.binary = tc.binary
			check, err := run.readinessCheck()
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				defer cancel()
				err = run.probe(ctx, check)
			}
			assert.Equal(t, tc.ready, err == nil, "%v", err)
		})
	}
}

// A data parallel server's readiness probe (render.RankReadinessProbe) is an exec of the vLLM
// image's python3: the suite runs this machine's python3 with the container's environment (its
// POD_IP the pod's address), within the probe's timeout, as the kubelet runs it in the container.
// It passes when every rank answers at the pod's address; when one hangs, it fails within the
// timeout, and its output, naming the rank, is the failure's message (the kubelet's event's).
func TestDataParallelReadinessProbeRunsPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 here")
	}
	const podIP = "127.20.0.9"
	const probeTimeout = 5
	for _, tc := range []struct {
		name string
		hang bool
		want string
	}{
		{name: "every rank answers"},
		{name: "local rank 1 hangs", hang: true, want: "data parallel rank 3 (local rank 1, port %d) did not answer GET /health: timed out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var listeners []net.Listener
			base := 0
			for attempt := 0; len(listeners) < 2 && attempt < 50; attempt++ {
				closeAll(listeners)
				listeners = nil
				first, err := net.Listen("tcp", podIP+":0")
				require.NoError(t, err)
				base = first.Addr().(*net.TCPAddr).Port
				listeners = append(listeners, first)
				if second, err := net.Listen("tcp", net.JoinHostPort(podIP, strconv.Itoa(base+1))); err == nil {
					listeners = append(listeners, second)
				}
			}
			require.Len(t, listeners, 2)
			t.Cleanup(func() { closeAll(listeners) })
			for i, l := range listeners {
				if i == 1 && tc.hang {
					continue // its connections are taken by the kernel and never answered, as a SIGSTOPped server's
				}
				go func() { _ = http.Serve(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})) }()
			}
			server := &corev1.Container{Name: "vllm", Image: "vllm/vllm-openai:v0.33.0",
				Env: []corev1.EnvVar{{Name: "LWS_WORKER_INDEX", Value: "1"}, {Name: api.PodIPVariable,
					ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}}
			// the rendered default's 5 s, not the API's 1 s: the interpreter's start alone can
			// take a second on a loaded machine
			server.ReadinessProbe = render.RankReadinessProbe(&corev1.Container{ReadinessProbe: &corev1.Probe{TimeoutSeconds: probeTimeout}}, int32(base), 2)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "moe-0-1", Namespace: "llm", UID: "u"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{*server}}, Status: corev1.PodStatus{PodIP: podIP}}
			run := testRun(t, pod, &pod.Spec.Containers[0], nil)
			im, ok := programOf(server)
			require.True(t, ok)
			run.image = im
			check, err := run.readinessCheck()
			require.NoError(t, err)
			err = check()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			// The check cuts the command short at the probe's timeout, as the kubelet does, and
			// then says "timed out": the script's own message proves it gave up first. Order, not
			// a window on time.Since, which a loaded machine's scheduling broke (issue 54).
			assert.Equal(t, fmt.Sprintf(tc.want, base+1), err.Error())
		})
	}
}
