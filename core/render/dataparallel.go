package render

import (
	"fmt"
	"strconv"
	"strings"

	"al.essio.dev/pkg/shellescape"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
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
	p := role.Parallelism
	ranks := role.LocalRanks()
	serve := server.Command
	if len(serve) == 0 {
		serve = defaultServeCommand
	}
	words := append(append([]string{}, serve...), server.Args...)
	words = append(words, "--data-parallel-size", strconv.Itoa(p.Data), "--data-parallel-rpc-port", strconv.Itoa(int(p.RPCPort())))
	if p.TensorSize() > 1 {
		words = append(words, "--tensor-parallel-size", strconv.Itoa(p.TensorSize()))
	}
	if p.PipelineSize() > 1 {
		words = append(words, "--pipeline-parallel-size", strconv.Itoa(p.PipelineSize()))
	}
	if p.Expert {
		words = append(words, "--enable-expert-parallel")
	}
	command := shellescape.QuoteCommand(words)
	lines := []string{
		fmt.Sprintf("start=$(( ${%s:-0} * %d ))", lwsv1.LwsWorkerIndex, ranks),
		`trap 'stopping=1; kill -TERM $ranks 2>/dev/null' TERM INT`,
	}
	for i := range ranks {
		lines = append(lines, fmt.Sprintf(`CUDA_VISIBLE_DEVICES=%s %s --data-parallel-address "$%s" --data-parallel-rank $((start + %d)) --port %d & ranks="$ranks $!"`,
			rankDevices(i, p.RankGPUs()), command, lwsv1.LwsLeaderAddress, i, port+i))
	}
	return strings.Join(append(lines, rankWatch...), "\n")
}

// rankWatch ends the script's lines: until the pod stops, it looks every second for a rank that
// has ended, and then ends the container: the other ranks get TERM and are waited for, and the
// shell exits non-zero (the rank's status, or 1), so the kubelet restarts the container and LWS
// (RecreateGroupOnPodRestart) the replica's pods, as for any failed server. The other ranks could
// not serve on (docs/design/0026-wide-expert-parallelism.md), and the router takes a pod's ranks
// out only when the pod is not Ready, which a rank other than the probed one never makes it.
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
func dataParallelTemplate(tpl *corev1.PodTemplateSpec, role *api.Role) error {
	server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
	port, err := api.ServingPort(server)
	if err != nil {
		return err // validation refused it first
	}
	script := DataParallelScript(server, role, port)
	server.Command = append([]string{}, shellCommand...)
	server.Args = []string{script}
	for i := int32(1); i < role.LocalRanks(); i++ {
		server.Ports = append(server.Ports, corev1.ContainerPort{Name: rankPortName(i), ContainerPort: port + i, Protocol: corev1.ProtocolTCP})
	}
	return nil
}
