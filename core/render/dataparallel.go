// SPDX-License-Identifier: Apache-2.0

package render

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// vLLM's data parallel launch, in its external load-balancing mode (vLLM 0.33's
// docs/serving/data_parallel_deployment.md, "External Load Balancing";
// docs/design/0026-wide-expert-parallelism.md): every pod of a replica, leader and workers alike,
// runs one `vllm serve` a local rank, each its own HTTP server on the server's port + its local
// rank, its own GPUs, and its global rank from the pod's LWS worker index; the ranks meet at the
// leader's address on the RPC port. No Ray.

// rankPortName names local rank i's port (i >= 1; rank 0 keeps the template's own port).
func rankPortName(i int32) string { return "http-rank-" + strconv.Itoa(int(i)) }

// DataParallelScript is the shell script of a data parallel pod: its first global rank from
// LWS_WORKER_INDEX (unset on the leader: 0), then each local rank's server in the background on
// its GPUs and port, then a wait that passes TERM and INT on to the ranks, so they drain when the
// pod stops (the shell is the container's PID 1, which ignores signals it has no trap for). Every
// word of the server's command line is shell-quoted, as the Ray launch's.
func DataParallelScript(server *corev1.Container, role *api.Role, port int32) string {
	return dataParallelScript(server, role, port, nil)
}

// dataParallelScript is DataParallelScript, whose ranks also publish their KV-cache events when
// events is given (strategy precise-prefix-cache).
func dataParallelScript(server *corev1.Container, role *api.Role, port int32, events *rankEvents) string {
	p := role.Parallelism
	ranks := role.LocalRanks()
	serve := server.Command
	if len(serve) == 0 {
		serve = defaultServeCommand
	}
	// each rank is given its own --port: the server's (its own, or the routing sidecar's move)
	// is rank 0's, the base of the others, and is not said twice
	words := vllm.FlagPort.Without(append(append([]string{}, serve...), server.Args...))
	words = append(words, vllm.FlagDataParallelSize.Name, strconv.Itoa(p.Data), vllm.FlagDataParallelRPCPort.Name, strconv.Itoa(int(p.RPCPort())))
	if p.TensorSize() > 1 {
		words = append(words, vllm.FlagTensorParallelSize.Name, strconv.Itoa(p.TensorSize()))
	}
	if p.PipelineSize() > 1 {
		words = append(words, vllm.FlagPipelineParallelSize.Name, strconv.Itoa(p.PipelineSize()))
	}
	if p.Expert {
		words = append(words, vllm.FlagEnableExpertParallel.Name)
	}
	command := shellescape.QuoteCommand(words)
	lines := []string{fmt.Sprintf("start=$(( ${%s:-0} * %d ))", lwsv1.LwsWorkerIndex, ranks)}
	if events != nil {
		lines = append(lines, events.baseLine())
	}
	lines = append(lines, `trap 'stopping=1; kill -TERM $ranks 2>/dev/null' TERM INT`)
	for i, rankPort := range api.RankPorts(port, ranks) {
		rankCommand := command
		if events != nil {
			rankCommand += " " + events.words(int32(i))
		}
		lines = append(lines, fmt.Sprintf(`CUDA_VISIBLE_DEVICES=%s %s %s "$%s" %s $((start + %d)) %s %d & ranks="$ranks $!"`,
			rankDevices(int32(i), p.RankGPUs()), rankCommand, vllm.FlagDataParallelAddress.Name, lwsv1.LwsLeaderAddress,
			vllm.FlagDataParallelRank.Name, i, vllm.FlagPort.Name, rankPort))
	}
	return strings.Join(append(lines, rankWatch...), "\n")
}

// rankWatch ends the script's lines: until the pod stops, it looks every second for a rank that
// has ended, and then ends the container: the other ranks get TERM and are waited for, and the
// shell exits non-zero (the rank's status, or 1), so the kubelet restarts the container and LWS
// (RecreateGroupOnPodRestart) the replica's pods, as for any failed server. The other ranks could
// not serve on (docs/design/0026-wide-expert-parallelism.md), and the router takes a pod's ranks
// out only when the pod is not Ready, which the readiness probe (RankReadinessProbe) would make it
// only failureThreshold periods later, and without restarting the replica.
// POSIX sh has no `wait -n` and `kill -0` succeeds on a zombie, so a rank has ended when it has
// no /proc entry (reaped by a wait) or is a zombie there. The watch's sleep runs in the
// background so that a trapped TERM or INT interrupts its wait at once; the last wait lets the
// ranks drain.
var rankWatch = []string{
	`ended() { state=; { while read -r key value _; do [ "$key" = State: ] && state=$value; done < "/proc/$1/status"; } 2>/dev/null; [ -z "$state" ] || [ "$state" = Z ]; }`,
	`while [ -z "$stopping" ]; do`,
	`  for rank in $ranks; do`,
	`    if [ -z "$stopping" ] && ended "$rank"; then`,
	`      wait "$rank"; status=$?`,
	`      echo "data parallel rank process $rank ended (status $status): stopping the pod's other ranks" >&2`,
	`      kill -TERM $ranks 2>/dev/null; wait; [ "$status" -ne 0 ] || status=1; exit "$status"`,
	`    fi`,
	`  done`,
	`  sleep 1 & wait $!`,
	`done`,
	`wait`,
}

// rankDevices are local rank i's GPUs, as the container numbers the devices it was given.
func rankDevices(i int32, perRank int) string {
	devices := make([]string, perRank)
	for d := range devices {
		devices[d] = strconv.Itoa(int(i)*perRank + d)
	}
	return strings.Join(devices, ",")
}

// dataParallelTemplate turns the role's template into every pod's of a data parallel replica:
// the ranks' launch, and a port declared for each rank after the first.
func dataParallelTemplate(tpl *corev1.PodTemplateSpec, role *api.Role, events *rankEvents) error {
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	port, err := api.ServingPort(server)
	if err != nil {
		return err // validation refused it first
	}
	script := dataParallelScript(server, role, port, events)
	server.ReadinessProbe = RankReadinessProbe(server, port, role.LocalRanks())
	if !slices.ContainsFunc(server.Env, func(v corev1.EnvVar) bool { return v.Name == api.PodIPVariable }) { // else it is the pod's address: validation
		server.Env = append(server.Env, corev1.EnvVar{Name: api.PodIPVariable,
			ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}})
	}
	server.Command = append([]string{}, shellCommand...)
	server.Args = []string{script}
	sharedMemory(&tpl.Spec, server)
	for i, rankPort := range api.RankPorts(port, role.LocalRanks())[1:] {
		server.Ports = append(server.Ports, corev1.ContainerPort{Name: rankPortName(int32(i + 1)), ContainerPort: rankPort, Protocol: corev1.ProtocolTCP})
	}
	return nil
}

// sharedMemorySize bounds a data parallel pod's /dev/shm: what llm-d's wide-ep-lws guide gives
// its pods ("2Gi for NCCL 2.27 to be safe", guides/wide-ep-lws/manifests/modelserver/base/
// decode.yaml). It counts against the pod's memory.
var sharedMemorySize = resource.MustParse("2Gi")

// sharedMemory mounts a memory-backed emptyDir at /dev/shm in a data parallel server that mounts
// nothing there: a container's own /dev/shm is 64 MiB, and NCCL, which the ranks' collectives
// and expert all-to-all use, fails or falls back slower without more (llm-d's wide-ep-lws guide
// gives its pods the same). A template's own /dev/shm is kept.
func sharedMemory(pod *corev1.PodSpec, server *corev1.Container) {
	if slices.ContainsFunc(server.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == sharedMemoryPath }) {
		return
	}
	pod.Volumes = append(pod.Volumes, corev1.Volume{Name: api.SharedMemoryVolumeName, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(sharedMemorySize.DeepCopy())}}})
	server.VolumeMounts = append(server.VolumeMounts, corev1.VolumeMount{Name: api.SharedMemoryVolumeName, MountPath: sharedMemoryPath})
}

const sharedMemoryPath = "/dev/shm"

// RankNotAnsweringPrefix begins what a data parallel pod's readiness probe prints when a rank
// does not answer (rankHealthScript); the kubelet's event for the failed probe carries it
// (pkg/probe/exec: the command's output is the probe's message), and the diagnosis reads it.
const RankNotAnsweringPrefix = "data parallel rank "

// rankHealthScript is the Python of a data parallel pod's readiness probe: it sends the probe's
// HTTP GET to each local rank at the pod's address (POD_IP; vLLM listens on every address, as
// the kubelet's HTTP prober reaches it there) and exits non-zero at the first rank that does not
// answer 2xx or 3xx (the kubelet's HTTP prober's success, pkg/probe/http), naming it, its global
// rank (LWS_WORKER_INDEX x local ranks + i, as the launch computes it) and its port. Every GET
// shares a budget below the probe's timeoutSeconds, so a hung rank is named by the probe rather
// than cut short by the kubelet's timeout. http.client takes an IPv6 address bare and brackets
// it in the Host header itself. Its arguments: scheme, host ("" for POD_IP), path, the GETs'
// seconds, rank 0's port, the local ranks, then the probe's headers as "Name: value".
const rankHealthScript = `import http.client, os, sys, time
scheme, host, path, budget, base, ranks = sys.argv[1:7]
headers = dict(h.split(": ", 1) for h in sys.argv[7:])
host = host or os.environ["` + api.PodIPVariable + `"]
deadline = time.monotonic() + float(budget)
first = int(os.environ.get("` + lwsv1.LwsWorkerIndex + `") or 0) * int(ranks)
for i in range(int(ranks)):
    port = int(base) + i
    try:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timed out")
        if scheme == "HTTPS":
            import ssl
            conn = http.client.HTTPSConnection(host, port, timeout=left, context=ssl._create_unverified_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=left)
        conn.request("GET", path, headers=headers)
        status = conn.getresponse().status
        conn.close()
        if not 200 <= status < 400:
            raise OSError("HTTP %d" % status)
    except Exception as e:
        sys.exit("` + RankNotAnsweringPrefix + `%d (local rank %d, port %d) did not answer GET %s: %s" % (first + i, i, port, path, e))
`

// rankProbeMargin is what a data parallel pod's readiness probe leaves of its timeoutSeconds for
// the interpreter's start and exit (-I -S: no site packages, which a vLLM image has many of): a
// fifth of it, at least 0.4 s. A node busy loading models can take most of a second to start
// Python, and a budget measured from the script's first line does not see that second.
func rankProbeMargin(timeoutSeconds int32) float64 {
	return max(0.4, float64(timeoutSeconds)/5)
}

// RankReadinessProbe is a data parallel server's readiness probe: the template's (or the default
// of every server, defaultServerProbes': vLLM's GET /health) with its HTTP GET sent to every local rank, ports
// port..port+ranks-1, by the image's python3 (every vLLM image has it; not bash or curl). A pod
// is ready, and its ranks in the pool, only when every rank answers: one probe a container is
// all Kubernetes gives, and the Endpoint Picker keeps every rank of a Ready pod
// (docs/design/0026-wide-expert-parallelism.md). Validation allows only an httpGet on the
// server's port, or none (api's validateRankReadiness).
func RankReadinessProbe(server *corev1.Container, port, ranks int32) *corev1.Probe {
	probe := &corev1.Probe{}
	if server.ReadinessProbe != nil {
		probe = server.ReadinessProbe.DeepCopy()
	}
	get := api.RankHealthGet(server)
	scheme := get.Scheme
	if scheme == "" {
		scheme = corev1.URISchemeHTTP
	}
	timeout := probe.TimeoutSeconds
	if timeout == 0 {
		timeout = 1 // the API's default
	}
	budget := strconv.FormatFloat(float64(timeout)-rankProbeMargin(timeout), 'f', -1, 64)
	command := []string{"python3", "-I", "-S", "-c", rankHealthScript, string(scheme), get.Host, get.Path, budget,
		strconv.Itoa(int(port)), strconv.Itoa(int(ranks))}
	for _, h := range get.HTTPHeaders {
		command = append(command, h.Name+": "+h.Value)
	}
	probe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: command}}
	return probe
}
