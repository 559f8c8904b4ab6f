// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/expansion"
)

// vLLM's launch translated to llm-d-inference-sim's: its command line, a data parallel pod's
// script (one simulator a rank), and the arguments a pod's annotation adds.

// ModelServerArgsAnnotation on a pod adds llm-d-inference-sim's own arguments (space-separated) to
// those its vLLM command line translates to: latencies, KV-cache size, fake metrics, what the
// simulated accelerator is like.
const ModelServerArgsAnnotation = "e2e.fusioninfer.io/model-server-args"

// ListenAfterAnnotation on a pod (a Go duration) makes its simulated model servers start
// listening that long after their container starts, as vLLM listens only once it has loaded the
// model: until then the pod's port refuses connections, and a probe of it fails. A test-cluster
// feature, for the tests of the servers' readiness probes (docs/e2e.md). Unlike
// ReadyAfterAnnotation, which keeps the pod Pending, the pod runs meanwhile: it is Ready when its
// probes say so, and with none (as the kubelet does) as soon as its container starts.
const ListenAfterAnnotation = "e2e.fusioninfer.io/listen-after"

// listenDelay is the pod's ListenAfterAnnotation, 0 without it.
func listenDelay(pod *corev1.Pod) (time.Duration, error) {
	value, ok := pod.Annotations[ListenAfterAnnotation]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(value)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("annotation %s: %q is not a duration of 0 or more (a Go duration: 20s)", ListenAfterAnnotation, value)
	}
	return d, nil
}

// vLLM's flags llm-d-inference-sim reads with the same meaning (its pkg/common/parser.go
// ParseCommandParamsAndLoadConfig): values, and switches.
var (
	sharedModelServerFlags    = []string{"--max-num-seqs", "--max-model-len", "--max-loras", "--max-cpu-loras", "--seed"}
	sharedModelServerSwitches = []string{"--enable-sleep-mode"}
)

// modelServerLaunches are llm-d-inference-sim's processes for a vLLM container: one for its
// command line, or, when it runs a shell script (a data parallel pod's, core/render
// DataParallelScript), one for each `vllm serve` the script starts. vLLM's external
// load-balancing mode runs one server a data parallel rank, each on its own port (vLLM
// docs/serving/data_parallel_deployment.md, "External Load Balancing"); so does the suite, each
// rank a process of its own that can stop while the pod's other ranks serve on. (The sim's own
// --data-parallel-size would serve every rank from one process, on --port + i: pkg/llm-d-inference-sim/
// simulator.go Start.) Its variables are the container's and the pod's name, namespace and
// address, which llm-d's manifests give it through the downward API: it then names the pod and
// port that served each response (x-inference-pod, x-inference-port: pkg/communication/http.go
// addResponseHeaders). Its volumes are not mounted: it reads no file.
func modelServerLaunches(run *containerRun) ([]launch, error) {
	env, err := run.environment(false) // what the sim does not read may be left out
	if err != nil {
		return nil, err
	}
	// The kubelet expands $(VAR) in the command and args with the container's variables.
	container := run.container.DeepCopy()
	vars := map[string]string{}
	for _, v := range env {
		name, value, _ := strings.Cut(v, "=")
		vars[name] = value
	}
	container.Command, container.Args = expansion.All(container.Command, vars), expansion.All(container.Args, vars)
	servers := []*corev1.Container{container}
	if vllm.IsShellScript(container) {
		if servers, err = run.scriptServers(container, env); err != nil {
			return nil, err
		}
	}
	env = append(env, "POD_NAME="+run.pod.Name, "POD_NAMESPACE="+run.pod.Namespace, "POD_IP="+run.pod.Status.PodIP)
	delay, err := listenDelay(run.pod)
	if err != nil {
		return nil, err
	}
	var launches []launch
	for _, server := range servers {
		l, err := run.modelServerLaunch(server)
		if err != nil {
			return nil, err
		}
		l.env, l.listenAfter = env, delay
		launches = append(launches, l)
	}
	if len(launches) == 1 && launches[0].rank == noRank {
		launches[0].ports = slices.Sorted(maps.Keys(run.ports)) // the container's one process
	}
	slices.SortFunc(launches, func(a, b launch) int { return a.rank - b.rank })
	return launches, nil
}

// recordingVLLM is the `vllm` a shell script finds first on its PATH when the suite reads which
// servers it starts: it writes its arguments (NUL-terminated) to a file named after its process
// and exits.
const recordingVLLM = "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$VLLM_ARGV_DIR/$$\"\n"

// ignoringStop runs a command with TERM and INT ignored, for it and what it starts: a
// non-interactive shell cannot trap a signal ignored on entry (POSIX, Shell Command Language,
// "trap"), and an ignored signal stays ignored across fork and exec.
const ignoringStop = `trap '' TERM INT; exec "$@"`

// scriptServers runs the container's shell script once, with its variables, as the container's
// shell would, but with recordingVLLM for vllm: the command lines of the servers it starts, each
// rank's with what the script computed for it (its rank from LWS_WORKER_INDEX, its port). A data
// parallel script ends its container when a rank ends (core/render DataParallelScript): the first
// recorder to exit has the script TERM the others, perhaps before they have written; so the script
// runs with TERM ignored, every recorder writes, and the script's non-zero end is expected then.
func (run *containerRun) scriptServers(container *corev1.Container, env []string) ([]*corev1.Container, error) {
	bin, argv := run.scratch("script-bin"), run.scratch("script-servers")
	if err := os.WriteFile(filepath.Join(bin, "vllm"), []byte(recordingVLLM), 0o755); err != nil {
		return nil, err
	}
	words := vllm.CommandLine(container)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", ignoringStop, "sh"}, words...)...)
	cmd.Env = append(env, "PATH="+bin+string(filepath.ListSeparator)+os.Getenv("PATH"), "VLLM_ARGV_DIR="+argv)
	out, scriptErr := cmd.CombinedOutput()
	files, err := os.ReadDir(argv)
	if err != nil {
		return nil, err
	}
	if scriptErr != nil && (len(files) == 0 || ctx.Err() != nil) {
		return nil, fmt.Errorf("the server's shell script: %w: %s", scriptErr, bytes.TrimSpace(out))
	}
	var servers []*corev1.Container
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(argv, f.Name()))
		if err != nil {
			return nil, err
		}
		servers = append(servers, &corev1.Container{Command: []string{"vllm"}, Args: strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")})
	}
	if len(servers) == 0 {
		return nil, errors.New("the server's shell script starts no vllm")
	}
	return servers, nil
}

// llmdSimMaxRank is the highest --data-parallel-rank llm-d-inference-sim takes (v0.10.2
// pkg/common/config.go validate: "data parallel rank must be between 0 and 7"); the rank only
// names its log lines (pkg/llm-d-inference-sim/simulator.go Start), so a higher one is left out.
const llmdSimMaxRank = 7

// modelServerLaunch is llm-d-inference-sim's command line for one vLLM command line: its model
// and served names, its port (the container's, on a loopback port), its data parallel rank, the
// flags the two share, and the sim's own from ModelServerArgsAnnotation; never the network: the
// sim's own tokenizer (it otherwise asks huggingface.co whether the model exists,
// pkg/tokenizer/tokenizer.go modelExists), and no KV-cache event publisher
// (pkg/kv-cache/block_cache.go dials --zmq-endpoint unless it is empty) unless vLLM's command line
// publishes events: then the sim's go to kvEventsPublisher, which publishes them as vLLM would
// (kvevents.go), with the server's block size. --data-parallel-size is not passed on: each
// process is one rank.
func (run *containerRun) modelServerLaunch(c *corev1.Container) (launch, error) {
	words := vllm.CommandLine(c)
	model, ok := vllm.Model(c)
	if !ok {
		return launch{}, errors.New("vLLM's command line names no model")
	}
	serving := int32(8000) // vLLM's default --port
	if v, found := vllm.FlagValue(words, "--port"); found {
		n, err := strconv.Atoi(v)
		if err != nil {
			return launch{}, fmt.Errorf("vLLM's --port %q", v)
		}
		serving = int32(n)
	}
	port, err := run.listen(serving)
	if err != nil {
		return launch{}, err
	}
	l := launch{ports: []int32{serving}, rank: noRank}
	if v, found := vllm.FlagValue(words, "--data-parallel-rank"); found {
		if l.rank, err = strconv.Atoi(v); err != nil || l.rank < 0 {
			return launch{}, fmt.Errorf("vLLM's --data-parallel-rank %q", v)
		}
	}
	zmqEndpoint := ""
	if l.kvEvents, err = kvEventsOf(words, l.rank); err != nil {
		return launch{}, err
	}
	if l.kvEvents != nil {
		if l.kvEvents.to, err = run.listen(l.kvEvents.port); err != nil {
			return launch{}, err
		}
		if l.kvEvents.from, err = freePort(); err != nil {
			return launch{}, err
		}
		l.ports = append(l.ports, l.kvEvents.port)
		zmqEndpoint = l.kvEvents.simulatorEndpoint()
	}
	args := []string{"--model", model, "--port", strconv.Itoa(port), "--force-dummy-tokenizer", "--zmq-endpoint=" + zmqEndpoint}
	if l.kvEvents != nil {
		args = append(args, "--enable-kvcache")
		if v, found := vllm.FlagValue(words, vllm.FlagBlockSize.Name); found {
			args = append(args, "--block-size", v)
		}
	}
	if names := flagValues(words, "--served-model-name"); len(names) > 0 {
		args = append(append(args, "--served-model-name"), names...)
	}
	for _, flag := range sharedModelServerFlags {
		if v, found := vllm.FlagValue(words, flag); found {
			args = append(args, flag, v)
		}
	}
	for _, flag := range sharedModelServerSwitches {
		if vllm.HasFlag(c, flag) {
			args = append(args, flag)
		}
	}
	if l.rank != noRank && l.rank <= llmdSimMaxRank {
		args = append(args, "--data-parallel-rank", strconv.Itoa(l.rank))
	}
	if adapters := flagValues(words, "--lora-modules"); len(adapters) > 0 {
		args = append(args, "--lora-modules")
		for _, adapter := range adapters {
			json, err := loraModuleJSON(adapter, model)
			if err != nil {
				return launch{}, err
			}
			args = append(args, json)
		}
	}
	l.args = append(args, strings.Fields(run.pod.Annotations[ModelServerArgsAnnotation])...)
	return l, nil
}
