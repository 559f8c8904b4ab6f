package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/vllm"
)

// The suite's stand-in for the kubelet and container runtime of kwok's nodes (Options.Containers).
// kwok gives each pod an address of a network local to this machine (its --cidr: addPodNetwork)
// and makes it Running. For each container whose image a program stands for (images), the suite
// then runs that program as the container would run: its arguments and environment as the pod
// gives them, its volumes as directories, and its ports on loopback ports of its own (a program
// listens on every address of its port, so two pods' containers could not share one), with a
// forwarder from the pod's address and each declared port to them. A pod being deleted runs its
// preStop sleep still taking connections (as a kubelet's pod does), then takes no new connection;
// its processes get SIGTERM and, after the pod's grace period, SIGKILL, and the pod goes only
// once they have ended (a
// finalizer of the suite's holds it, as the kubelet keeps a terminating pod until its containers
// have stopped; kwok alone would delete it at once).

// containerFinalizer holds a pod being deleted until the suite has stopped its processes.
const containerFinalizer = "e2e.fusioninfer.io/containers"

// ModelServerArgsAnnotation on a pod adds llm-d-inference-sim's own arguments (space-separated) to
// those its vLLM command line translates to: latencies, KV-cache size, fake metrics, what the
// simulated accelerator is like.
const ModelServerArgsAnnotation = "e2e.fusioninfer.io/model-server-args"

// image is what a program stands for: an image repository (without its registry) at a tag, ""
// for every tag, and the processes the program runs as for a container of it. An image that
// holds several programs has an entry for each, told apart by the container's command.
type image struct {
	repository, tag string
	// command is the program of the image the container runs (its command's first word, a path
	// or a name on the image's PATH); "" for the image's entrypoint.
	command  string
	binary   binary
	launches func(run *containerRun) ([]launch, error)
	// execArgs maps the arguments of an exec probe that runs the program itself, as launches maps
	// the container's; nil: the suite runs no exec probe of the image's program.
	execArgs func(run *containerRun, words []string) ([]string, error)
	// python: the image has python3 (every vLLM image: vLLM is a Python program), so the suite runs
	// an exec probe of python3 with this machine's (a data parallel server's,
	// render.RankReadinessProbe).
	python bool
}

// launch is one process of a container: its arguments and variables, the container ports it
// serves, and the data parallel rank it is (vLLM's --data-parallel-rank; noRank for none).
type launch struct {
	args, env []string
	ports     []int32
	rank      int
}

// noRank is the rank of a process that serves no data parallel rank.
const noRank = -1

// images are the container images the suite has programs for. llm-d-inference-sim stands for
// every vLLM (as llm-d's own tests use it); an Endpoint Picker only for its own release; the LoRA
// loader sidecar (the downloader's image at any tag: this project's release) is the loader of
// this checkout.
var images = []image{
	{repository: "vllm/vllm-openai", binary: inferenceSim, launches: modelServerLaunches, python: true},
	{repository: "gateway-api-inference-extension/epp", tag: GIEEndpointPickerVersion, binary: gieEndpointPicker, launches: containerLaunch},
	{repository: "gateway-api-inference-extension/lwepp", tag: GIELightweightEndpointPickerVersion, binary: gieLightweightEndpointPicker,
		launches: containerLaunch},
	{repository: imageRepository(render.DownloaderImage), command: render.LoRALoaderCommand, binary: loraLoader, launches: loraLoaderLaunch,
		execArgs: loraLoaderArgs},
}

// imageRepository is an image reference's repository, without its registry, tag and digest.
func imageRepository(ref string) string {
	name, _ := splitImage(ref)
	if first, rest, ok := strings.Cut(name, "/"); ok && strings.ContainsAny(first, ".:") {
		return rest
	}
	return name
}

// splitImage is an image reference's name (registry/repository) and tag ("" for none).
func splitImage(ref string) (name, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// containerPrograms are the binaries of images.
func containerPrograms() []binary {
	var out []binary
	for _, im := range images {
		out = append(out, im.binary)
	}
	return out
}

// programOf is the entry of images for a container: its image reference
// (registry/repository:tag@digest) and, for an image of several programs, its command.
func programOf(c *corev1.Container) (image, bool) {
	name, tag := splitImage(c.Image)
	command := ""
	if len(c.Command) > 0 {
		command = path.Base(c.Command[0])
	}
	for _, im := range images {
		if (name == im.repository || strings.HasSuffix(name, "/"+im.repository)) && (im.tag == "" || tag == im.tag) &&
			(im.command == "" || command == im.command) {
			return im, true
		}
	}
	return image{}, false
}

// programImagePattern is a regular expression an image reference matches when a program stands
// for the image's entrypoint, as programOf decides. kwok's selector uses it: a pod of a program
// that is another's sidecar (the LoRA loader) is picked by its server's image, and a pod of the
// image's other programs (the download Job's) is left to kwok, which runs it to completion.
func programImagePattern() string {
	var alternatives []string
	for _, im := range images {
		if im.command != "" {
			continue
		}
		tag := `(:[^/@]+)?`
		if im.tag != "" {
			tag = ":" + regexp.QuoteMeta(im.tag)
		}
		alternatives = append(alternatives, `(^|/)`+regexp.QuoteMeta(im.repository)+tag+`(@.*)?$`)
	}
	return strings.Join(alternatives, "|")
}

// programPodsQuery is a kwok selector key (a jq query) that yields true for each container of a
// pod whose image a program stands for.
func programPodsQuery() string {
	return ".spec.containers.[].image | test(" + strconv.Quote(programImagePattern()) + ")"
}

// addPodNetwork routes a network of the cluster's own to this machine (`ip route add local NET dev
// lo`: on Linux every address of a local route can be bound) and returns it as kwok's --cidr. The
// network is a /24 of 198.18.0.0/15, which RFC 2544 reserves for benchmarks; one of 127.0.0.0/8
// would need no route, but the API server refuses loopback addresses in Endpoints and
// EndpointSlices (k8s.io/kubernetes pkg/apis/core/validation ValidateEndpointIP: "may not be in
// the loopback range"), so such pods could back no Service: not the Endpoint Picker's, which
// `pulumi up` waits for and the gateway reaches. Adding the route needs CAP_NET_ADMIN (CI runs as
// root); Stop removes it.
func (c *Cluster) addPodNetwork() (string, error) {
	var lastErr error
	for _, n := range rand.Perm(512) {
		network := fmt.Sprintf("198.%d.%d.0/24", 18+n/256, n%256)
		out, err := exec.Command("ip", "route", "add", "local", network, "dev", "lo").CombinedOutput()
		if err == nil {
			c.podNetwork = network
			return fmt.Sprintf("198.%d.%d.1/24", 18+n/256, n%256), nil
		}
		lastErr = fmt.Errorf("ip route add local %s dev lo: %v: %s", network, err, strings.TrimSpace(string(out)))
		if !strings.Contains(string(out), "File exists") { // taken by another cluster on this machine: try the next
			break
		}
	}
	return "", fmt.Errorf("the pods' network (it needs CAP_NET_ADMIN: run as root): %w", lastErr)
}

// removePodNetwork removes the route addPodNetwork added.
func (c *Cluster) removePodNetwork() {
	if c.podNetwork != "" {
		_ = exec.Command("ip", "route", "del", "local", c.podNetwork, "dev", "lo").Run()
	}
}

// ContainerProcess is a container the suite runs as a process.
type ContainerProcess struct {
	Namespace, Pod, Container string
	PodIP                     string
	// Program is the binary and its version; Args its arguments as run.
	Program string
	Args    []string
	// Ports maps each of the container's ports the process serves to the loopback port its
	// program listens on.
	Ports map[int32]int
	// Rank is the data parallel rank the process serves (a vLLM container runs one a local rank,
	// vLLM's --data-parallel-rank), or -1: the container is one process.
	Rank int
	// Log is the file of the process's output.
	Log     string
	Started time.Time
	// Err is why the container could not be run (nothing else is set then), or how it ended.
	Err error

	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	ended  time.Time
	ready  time.Time // when the suite reported its pod Ready
}

// ReadyAt says when the suite reported the process's pod Ready, once its readiness probes
// passed; nothing can have been routed to the pod before.
func (p *ContainerProcess) ReadyAt() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready, !p.ready.IsZero()
}

// Ended says when the process ended, if it has.
func (p *ContainerProcess) Ended() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ended, !p.ended.IsZero()
}

// URL is http://127.0.0.1:{loopback port} for a container port: the program itself, not through
// the pod's address.
func (p *ContainerProcess) URL(port int32) string {
	return fmt.Sprintf("http://127.0.0.1:%d", p.Ports[port])
}

// containers runs the pods' programs.
type containers struct {
	c      *Cluster
	cancel context.CancelFunc
	// spawn starts processes from one OS thread that lives as long as the suite: children get
	// SIGKILL when the thread that started them ends (Pdeathsig).
	spawn chan func()

	log *os.File // Dir/containers.log: what the stand-in did, when

	mu        sync.Mutex
	pods      map[types.UID]*podRun
	processes []*ContainerProcess
	changed   chan struct{} // closed and replaced when processes changes
	// configMapDirs are the directories of the ConfigMap volumes mounted, by namespace/name.
	configMapDirs map[string][]string
}

// podRun is what runs for one pod.
type podRun struct {
	started   chan struct{} // closed once its processes and forwarders are up (or failed)
	stopping  bool
	ended     bool // a container of the pod has ended (endWithAnyRank); the suite restarts none
	listeners []net.Listener
	processes []*ContainerProcess
}

// startContainers watches every pod and runs the programs of those kwok makes Running.
func (c *Cluster) startContainers(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	k := &containers{c: c, cancel: cancel, spawn: make(chan func()), pods: map[types.UID]*podRun{}, changed: make(chan struct{})}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine, killing what it started
		for {
			select {
			case f := <-k.spawn:
				f()
			case <-ctx.Done():
				return
			}
		}
	}()
	if err := os.MkdirAll(filepath.Join(c.Dir, "containers"), 0o755); err != nil {
		return err
	}
	log, err := os.Create(filepath.Join(c.Dir, "containers.log"))
	if err != nil {
		return err
	}
	k.log = log
	factory := informers.NewSharedInformerFactory(c.Clientset, 0)
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.reconcile(obj.(*corev1.Pod), false) },
		UpdateFunc: func(_, obj any) { k.reconcile(obj.(*corev1.Pod), false) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				k.reconcile(pod, true)
			}
		},
	}); err != nil {
		cancel()
		return err
	}
	configMaps := factory.Core().V1().ConfigMaps().Informer()
	if _, err := configMaps.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { k.configMapChanged(obj.(*corev1.ConfigMap)) },
	}); err != nil {
		cancel()
		return err
	}
	factory.Start(ctx.Done())
	c.containers = k
	Progress("running the pods' programs (vLLM: llm-d-inference-sim %s; Endpoint Pickers: GIE %s epp, %s lwepp; LoRA loader: this checkout's)",
		InferenceSimVersion, GIEEndpointPickerVersion, GIELightweightEndpointPickerVersion)
	return nil
}

// reconcile starts a Running pod's programs, or stops a deleted pod's.
func (k *containers) reconcile(pod *corev1.Pod, deleted bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	run, known := k.pods[pod.UID]
	switch {
	case deleted || pod.DeletionTimestamp != nil:
		if known && !run.stopping {
			run.stopping = true
			go k.terminate(pod, run)
		} else if !known && !deleted && slices.Contains(pod.Finalizers, containerFinalizer) {
			go k.removeFinalizer(pod)
		}
	case !known && pod.Status.Phase == corev1.PodRunning && pod.Status.PodIP != "" && hasProgram(pod):
		run = &podRun{started: make(chan struct{})}
		k.pods[pod.UID] = run
		go k.run(pod.DeepCopy(), run)
	}
}

func hasProgram(pod *corev1.Pod) bool {
	for _, c := range pod.Spec.Containers {
		if _, ok := programOf(&c); ok {
			return true
		}
	}
	return false
}

// run starts the pod's processes and forwarders, after the finalizer that holds the pod until
// they have stopped.
func (k *containers) run(pod *corev1.Pod, run *podRun) {
	defer close(run.started)
	ctx := context.Background()
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, containerFinalizer)
	if _, err := k.c.Clientset.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		k.record(&ContainerProcess{Namespace: pod.Namespace, Pod: pod.Name, PodIP: pod.Status.PodIP, Err: fmt.Errorf("holding the pod: %w", err)})
		return
	}
	var started []*containerRun
	for i := range pod.Spec.Containers {
		container := &pod.Spec.Containers[i]
		im, ok := programOf(container)
		if !ok {
			continue
		}
		processes, listeners, prepared, err := k.start(pod, container, im)
		run.listeners = append(run.listeners, listeners...)
		run.processes = append(run.processes, processes...)
		for _, p := range processes {
			k.record(p)
		}
		if len(processes) > 0 && processes[0].Rank != noRank {
			go k.endWithAnyRank(pod, run, container.Name, processes)
		}
		if err != nil {
			p := &ContainerProcess{Namespace: pod.Namespace, Pod: pod.Name, Container: container.Name, PodIP: pod.Status.PodIP, Rank: noRank, Err: err}
			Progress("pod %s/%s: container %s not run: %v", pod.Namespace, pod.Name, container.Name, err)
			k.record(p)
			return
		}
		started = append(started, prepared)
	}
	if pod.Annotations[NotReadyAnnotation] == "" {
		go k.markReady(pod, run, started)
	}
}

// logf writes a line of what the stand-in did to Dir/containers.log.
func (k *containers) logf(format string, args ...any) {
	fmt.Fprintf(k.log, "%s %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// record adds a process (or a container that could not be run) to what the suite has run.
func (k *containers) record(p *ContainerProcess) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.processes = append(k.processes, p)
	close(k.changed)
	k.changed = make(chan struct{})
}

// start runs one container's processes (one, or one a data parallel rank), each with forwarders
// from the pod's address and each of its ports. A process that ends takes its forwarders with it:
// its ports then refuse connections, as a pod's port nothing listens on does, while the
// container's other processes go on serving.
func (k *containers) start(pod *corev1.Pod, container *corev1.Container, im image) ([]*ContainerProcess, []net.Listener, *containerRun, error) {
	binary, err := im.binary.build()
	if err != nil {
		return nil, nil, nil, err
	}
	run := &containerRun{k: k, pod: pod, container: container, image: im, binary: binary, ports: map[int32]int{}, mounts: map[string]string{}}
	for _, port := range container.Ports {
		if _, err := run.listen(port.ContainerPort); err != nil {
			return nil, nil, nil, err
		}
	}
	launches, err := im.launches(run)
	if err != nil {
		return nil, nil, nil, err
	}
	var processes []*ContainerProcess
	var listeners []net.Listener
	for _, l := range launches {
		p, own, err := k.startProcess(run, binary, im, l)
		listeners = append(listeners, own...)
		if err != nil {
			stopProcesses(processes, 0)
			closeAll(listeners)
			return nil, nil, nil, err
		}
		processes = append(processes, p)
	}
	return processes, listeners, run, nil
}

// startProcess runs one process of a container, with the forwarders of its ports.
func (k *containers) startProcess(run *containerRun, binary string, im image, l launch) (*ContainerProcess, []net.Listener, error) {
	pod, container := run.pod, run.container
	p := &ContainerProcess{Namespace: pod.Namespace, Pod: pod.Name, Container: container.Name, PodIP: pod.Status.PodIP,
		Program: im.binary.name + " " + im.binary.version, Args: l.args, Ports: map[int32]int{}, Rank: l.rank, exited: make(chan struct{})}
	listeners := make([]net.Listener, 0, len(l.ports))
	for _, containerPort := range l.ports {
		hostPort := run.ports[containerPort]
		p.Ports[containerPort] = hostPort
		ln, err := net.Listen("tcp", net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(containerPort))))
		if err != nil {
			closeAll(listeners)
			return nil, nil, fmt.Errorf("the pod's address %s:%d: %w", pod.Status.PodIP, containerPort, err)
		}
		listeners = append(listeners, ln)
		go forward(ln, fmt.Sprintf("127.0.0.1:%d", hostPort), p.exited)
	}
	name := pod.Namespace + "." + pod.Name + "." + container.Name
	if l.rank != noRank {
		name += ".rank-" + strconv.Itoa(l.rank)
	}
	p.Log = filepath.Join(k.c.Dir, "containers", name+".log")
	logFile, err := os.Create(p.Log)
	if err != nil {
		closeAll(listeners)
		return nil, nil, err
	}
	fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(l.args, " "))
	cmd := exec.Command(binary, l.args...)
	cmd.Env = append(l.env, "PATH="+os.Getenv("PATH"), "HOME="+run.scratch("home"))
	cmd.Dir = run.scratch("workdir")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	k.spawn <- func() { started <- cmd.Start() }
	if err := <-started; err != nil {
		_ = logFile.Close()
		closeAll(listeners)
		return nil, nil, err
	}
	p.cmd, p.Started = cmd, time.Now()
	rank := ""
	if l.rank != noRank {
		rank = fmt.Sprintf(" rank %d", l.rank)
	}
	k.logf("%s/%s %s%s: started %s (pid %d), ports %v", pod.Namespace, pod.Name, container.Name, rank, p.Program, cmd.Process.Pid, p.Ports)
	go func() {
		err := cmd.Wait()
		closeAll(listeners)
		_ = logFile.Close()
		p.mu.Lock()
		p.ended, p.Err = time.Now(), err
		p.mu.Unlock()
		close(p.exited)
		k.logf("%s/%s %s%s: ended (%v); its ports refuse connections", pod.Namespace, pod.Name, container.Name, rank, err)
	}()
	return p, listeners, nil
}

// Stop ends the process as its container's runtime would stop it: SIGTERM, then SIGKILL after
// grace. Its ports refuse connections from then on; the pod's other processes go on.
func (p *ContainerProcess) Stop(grace time.Duration) {
	if p.cmd != nil {
		stopProcesses([]*ContainerProcess{p}, grace)
	}
}

// Signal sends sig to the process (its group: the program and what it started), as `kill` in the
// container would: SIGSTOP makes a hung server, which keeps its port open and answers nothing,
// and SIGCONT brings it back.
func (p *ContainerProcess) Signal(sig syscall.Signal) error {
	if p.cmd == nil {
		return p.startError()
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// markReady waits until each container the suite runs passes its readiness probe (an HTTP GET,
// a gRPC health check, a TCP connection to its program, or an exec of the program itself; with
// none, until its declared ports accept), then reports the pod Ready, as the kubelet's prober does.
// It then goes on probing every periodSeconds, as the kubelet's probe worker does
// (k8s.io/kubernetes pkg/kubelet/prober/worker.go doProbe): failureThreshold failures in a row
// report the pod not Ready, successThreshold passes Ready again; a container without a readiness
// probe stays ready. A pod being deleted is no longer probed.
func (k *containers) markReady(pod *corev1.Pod, run *podRun, runs []*containerRun) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	checks := make([]func() error, len(runs))
	for i, run := range runs {
		check, err := run.readinessCheck()
		if err == nil {
			err = run.probe(ctx, check)
		}
		if err != nil {
			k.logf("%s/%s %s: never ready: %v", pod.Namespace, pod.Name, run.container.Name, err)
			return
		}
		checks[i] = check
	}
	k.mu.Lock()
	ended := run.ended
	k.mu.Unlock()
	// Taken before the API hears of it: nothing can be routed to the pod before this instant.
	now := time.Now()
	if ended || !k.reportReady(pod, nil, "") {
		return
	}
	for _, p := range run.processes {
		p.mu.Lock()
		p.ready = now
		p.mu.Unlock()
	}
	k.keepProbing(pod, runs, checks)
}

// keepProbing probes the containers that have a readiness probe every periodSeconds (the
// shortest of theirs; a probe that takes longer delays the next, as the kubelet's worker's ticker
// does, pkg/kubelet/prober/worker.go run) and reports the pod's readiness when it changes, until
// the pod is deleted. Each failed probe is an event, as the kubelet's (probeFailed).
func (k *containers) keepProbing(pod *corev1.Pod, runs []*containerRun, checks []func() error) {
	period := time.Duration(0)
	for _, run := range runs {
		if probe := run.container.ReadinessProbe; probe != nil {
			p := time.Duration(max(probe.PeriodSeconds, 1)) * time.Second
			if probe.PeriodSeconds == 0 {
				p = 10 * time.Second // the API's default
			}
			if period == 0 || p < period {
				period = p
			}
		}
	}
	if period == 0 {
		return
	}
	failures, successes := make([]int32, len(runs)), make([]int32, len(runs))
	ready := make([]bool, len(runs))
	for i := range ready {
		ready[i] = true
	}
	podReady := true
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	why := ""
	var reported []string // the containers last reported not ready
	for {
		<-ticker.C
		k.mu.Lock()
		run, known := k.pods[pod.UID]
		stopping := !known || run.stopping || run.ended
		k.mu.Unlock()
		if stopping {
			return
		}
		for i, run := range runs {
			probe := run.container.ReadinessProbe
			if probe == nil {
				continue
			}
			if err := checks[i](); err != nil {
				k.probeFailed(pod, run.container.Name, err)
				why = fmt.Sprintf("container %s: readiness probe failed: %v", run.container.Name, err)
				failures[i], successes[i] = failures[i]+1, 0
				if ready[i] && failures[i] >= max(probe.FailureThreshold, 1) {
					ready[i] = false
				}
			} else {
				failures[i], successes[i] = 0, successes[i]+1
				if !ready[i] && successes[i] >= max(probe.SuccessThreshold, 1) {
					ready[i] = true
				}
			}
		}
		var notReady []string
		for i, run := range runs {
			if !ready[i] {
				notReady = append(notReady, run.container.Name)
			}
		}
		if all := len(notReady) == 0; all != podReady || !slices.Equal(notReady, reported) {
			if !k.reportReady(pod, notReady, why) {
				return
			}
			podReady, reported = all, notReady
		}
	}
}

// probeFailed records a failed readiness probe as the kubelet does (k8s.io/kubernetes
// pkg/kubelet/prober/prober.go probe, recordContainerEvent): a Warning event Unhealthy on the
// pod's container, "Readiness probe failed: " and the probe's message (an exec probe's output).
func (k *containers) probeFailed(pod *corev1.Pod, container string, err error) {
	now := metav1.Now()
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pod.Name + ".", Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
			FieldPath: "spec.containers{" + container + "}"},
		Reason: "Unhealthy", Message: "Readiness probe failed: " + err.Error(), Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "kubelet", Host: pod.Spec.NodeName}, FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := k.c.Clientset.CoreV1().Events(pod.Namespace).Create(ctx, event, metav1.CreateOptions{}); err != nil {
		k.logf("%s/%s: recording a failed probe: %v", pod.Namespace, pod.Name, err)
	}
}

// reportReady sets the pod's Ready and ContainersReady conditions and its containers' ready as
// the kubelet's status manager does: each container ready but those of notReady, the pod ready
// when none is not (why: why it is not ready); false when the pod is gone or being deleted.
func (k *containers) reportReady(pod *corev1.Pod, notReady []string, why string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ready := len(notReady) == 0
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	pods := k.c.Clientset.CoreV1().Pods(pod.Namespace)
	for {
		current, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || current.UID != pod.UID || current.DeletionTimestamp != nil {
			return false
		}
		now := metav1.Now()
		for _, kind := range []corev1.PodConditionType{corev1.ContainersReady, corev1.PodReady} {
			for i := range current.Status.Conditions {
				if c := &current.Status.Conditions[i]; c.Type == kind {
					c.Status, c.Reason, c.LastTransitionTime = status, "", now
				}
			}
		}
		for i := range current.Status.ContainerStatuses {
			current.Status.ContainerStatuses[i].Ready = !slices.Contains(notReady, current.Status.ContainerStatuses[i].Name)
		}
		_, err = pods.UpdateStatus(ctx, current, metav1.UpdateOptions{})
		if err == nil {
			if ready {
				k.logf("%s/%s: Ready", pod.Namespace, pod.Name)
			} else {
				k.logf("%s/%s: not Ready (%s)", pod.Namespace, pod.Name, why)
			}
			return true
		}
		if !apierrors.IsConflict(err) {
			k.logf("%s/%s: reporting it Ready=%v: %v", pod.Namespace, pod.Name, ready, err)
			return false
		}
	}
}

// readinessCheck is one run of the container's readiness probe (with none: the program listens
// on each declared port).
func (run *containerRun) readinessCheck() (func() error, error) {
	probe := run.container.ReadinessProbe
	check := func() error { // no probe: the program listens on each declared port
		for _, port := range run.ports {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err != nil {
				return err
			}
			_ = conn.Close()
		}
		return nil
	}
	switch {
	case probe == nil:
	case probe.HTTPGet != nil:
		port, err := run.probePort(probe.HTTPGet.Port)
		if err != nil {
			return nil, err
		}
		scheme := strings.ToLower(string(probe.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		url := fmt.Sprintf("%s://127.0.0.1:%d%s", scheme, port, probe.HTTPGet.Path)
		client := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // as the kubelet probes
		check = func() error {
			resp, err := client.Get(url)
			if err != nil {
				return err
			}
			_ = resp.Body.Close()
			if resp.StatusCode < 200 || resp.StatusCode >= 400 {
				return fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			return nil
		}
	case probe.GRPC != nil:
		port, ok := run.ports[probe.GRPC.Port]
		if !ok {
			return nil, fmt.Errorf("the gRPC probe's port %d is not the container's", probe.GRPC.Port)
		}
		check = func() error { // a connection a probe, as the kubelet's gRPC prober dials each time
			conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", port), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				return err
			}
			defer conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: ptr.Deref(probe.GRPC.Service, "")})
			if err != nil {
				return err
			}
			if resp.Status != healthpb.HealthCheckResponse_SERVING {
				return fmt.Errorf("gRPC health: %s", resp.Status)
			}
			return nil
		}
	case probe.Exec != nil:
		command, err := run.execProbeCommand(probe.Exec.Command)
		if err != nil {
			return nil, err
		}
		timeout := time.Duration(max(probe.TimeoutSeconds, 1)) * time.Second // the kubelet's default: 1 s
		// As the kubelet's exec prober (k8s.io/kubernetes pkg/probe/exec/exec.go Probe): exit 0 is
		// a pass; otherwise the command's output (stdout and stderr) is the failure's message, and
		// a command still running at the probe's timeout fails it.
		check = func() error {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			out, err := command(ctx).CombinedOutput()
			switch {
			case ctx.Err() != nil:
				return fmt.Errorf("command %q timed out", probe.Exec.Command[0])
			case err != nil && len(bytes.TrimSpace(out)) > 0:
				return errors.New(string(bytes.TrimSpace(out)))
			}
			return err
		}
	case probe.TCPSocket != nil:
		port, err := run.probePort(probe.TCPSocket.Port)
		if err != nil {
			return nil, err
		}
		check = func() error {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err == nil {
				_ = conn.Close()
			}
			return err
		}
	}
	return check, nil
}

// execProbeCommand is how the suite runs an exec probe's command: the container's own program
// (image.execArgs), or, for an image with python3, this machine's python3 with the container's
// variables (its POD_IP the pod's address), as the kubelet runs the command in the container.
func (run *containerRun) execProbeCommand(words []string) (func(ctx context.Context) *exec.Cmd, error) {
	switch {
	case len(words) > 0 && run.image.execArgs != nil && path.Base(words[0]) == run.image.command:
		args, err := run.image.execArgs(run, words[1:])
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) *exec.Cmd { return exec.CommandContext(ctx, run.binary, args...) }, nil
	case len(words) > 0 && run.image.python && path.Base(words[0]) == "python3":
		python, err := exec.LookPath("python3")
		if err != nil {
			return nil, fmt.Errorf("the exec probe runs python3, which this machine does not have: %w", err)
		}
		env, err := run.environment(false)
		if err != nil {
			return nil, err
		}
		env = append(env, "PATH="+os.Getenv("PATH"), "HOME="+run.scratch("home"))
		return func(ctx context.Context) *exec.Cmd {
			cmd := exec.CommandContext(ctx, python, words[1:]...)
			cmd.Env = env
			return cmd
		}, nil
	}
	first := ""
	if len(words) > 0 {
		first = words[0]
	}
	return nil, fmt.Errorf("the exec probe of %q: the suite runs exec probes of the container's own program (or of python3 in a vLLM image) only", first)
}

// probe waits until check passes.
func (run *containerRun) probe(ctx context.Context, check func() error) error {
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %v", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probePort is the loopback port of a probe's port, a number or the name of a container port.
func (run *containerRun) probePort(port intstr.IntOrString) (int, error) {
	number := port.IntVal
	if port.Type == intstr.String {
		for _, p := range run.container.Ports {
			if p.Name == port.StrVal {
				number = p.ContainerPort
			}
		}
	}
	if hostPort, ok := run.ports[number]; ok {
		return hostPort, nil
	}
	return 0, fmt.Errorf("the probe's port %s is not one of the container's", port.String())
}

// endWithAnyRank does as a data parallel pod's launch script (core/render DataParallelScript),
// which ends its container when any rank's server ends: it TERMs the other ranks, waits for them
// and exits non-zero. So when one of a container's rank processes ends while its pod is not being
// deleted, the suite stops the container's other ranks (SIGTERM, SIGKILL after the pod's grace
// period) and reports the pod not Ready, as the kubelet does for a container that is not running.
// The suite restarts no container (the kubelet would, and LWS, by RecreateGroupOnPodRestart,
// would then recreate the replica's pods): the pod stays not Ready.
func (k *containers) endWithAnyRank(pod *corev1.Pod, run *podRun, container string, ranks []*ContainerProcess) {
	first := make(chan *ContainerProcess, len(ranks))
	for _, p := range ranks {
		go func() {
			<-p.exited
			first <- p
		}()
	}
	ended := <-first
	k.mu.Lock()
	stopping := run.stopping
	if !stopping {
		run.ended = true
	}
	k.mu.Unlock()
	if stopping { // the pod is being deleted, or the cluster stopped: terminate or stopAll stops them all
		return
	}
	k.logf("%s/%s %s: rank %d ended, so the container ends: SIGTERM to its other ranks", pod.Namespace, pod.Name, container, ended.Rank)
	stopProcesses(ranks, gracePeriod(pod))
	k.logf("%s/%s %s: ended", pod.Namespace, pod.Name, container)
	k.reportReady(pod, []string{container}, "its container "+container+" ended")
}

// gracePeriod is the pod's termination grace period (the API's default: 30 s).
func gracePeriod(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return 30 * time.Second
}

// terminate stops a deleted pod's processes as the kubelet does, within the pod's grace period:
// the containers' preStop sleeps first (their servers still serving), then SIGTERM, at which a
// server stops accepting connections (vLLM does, GIE's config/manifests/vllm/gpu-deployment.yaml
// says: its preStop sleep is there to let the gateways take the pod out of rotation first), then
// SIGKILL for what still runs when the grace period ends; then it lets the pod go.
func (k *containers) terminate(pod *corev1.Pod, run *podRun) {
	<-run.started
	grace := gracePeriod(pod)
	preStop := min(preStopSleep(pod), grace)
	k.logf("%s/%s: deleted; preStop %s, grace %s", pod.Namespace, pod.Name, preStop, grace)
	time.Sleep(preStop)
	closeAll(run.listeners)
	k.logf("%s/%s: no new connection; SIGTERM", pod.Namespace, pod.Name)
	stopProcesses(run.processes, grace-preStop)
	k.logf("%s/%s: stopped", pod.Namespace, pod.Name)
	k.removeFinalizer(pod)
}

// preStopSleep is the longest preStop sleep of the pod's containers: a sleep action, or an exec
// of sleep with a number of seconds. Other hooks are not run.
func preStopSleep(pod *corev1.Pod) time.Duration {
	var longest time.Duration
	for _, c := range pod.Spec.Containers {
		hook := c.Lifecycle
		if hook == nil || hook.PreStop == nil {
			continue
		}
		var d time.Duration
		switch {
		case hook.PreStop.Sleep != nil:
			d = time.Duration(hook.PreStop.Sleep.Seconds) * time.Second
		case hook.PreStop.Exec != nil && len(hook.PreStop.Exec.Command) == 2 && filepath.Base(hook.PreStop.Exec.Command[0]) == "sleep":
			if n, err := strconv.ParseFloat(hook.PreStop.Exec.Command[1], 64); err == nil {
				d = time.Duration(n * float64(time.Second))
			}
		}
		longest = max(longest, d)
	}
	return longest
}

// stopProcesses sends SIGTERM to each process group, then SIGKILL to those still running after grace.
func stopProcesses(processes []*ContainerProcess, grace time.Duration) {
	for _, p := range processes {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	}
	deadline := time.After(grace)
	for _, p := range processes {
		select {
		case <-p.exited:
		case <-deadline:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	}
}

func (k *containers) removeFinalizer(pod *corev1.Pod) {
	patch := fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, containerFinalizer)
	_, err := k.c.Clientset.CoreV1().Pods(pod.Namespace).Patch(context.Background(), pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		Progress("pod %s/%s: removing the finalizer %s: %v", pod.Namespace, pod.Name, containerFinalizer, err)
	}
}

// stopAll ends every process at once (the cluster is stopping).
func (k *containers) stopAll() {
	if k == nil {
		return
	}
	k.mu.Lock()
	var processes []*ContainerProcess
	for _, run := range k.pods {
		run.stopping = true
		closeAll(run.listeners)
		processes = append(processes, run.processes...)
	}
	k.mu.Unlock()
	var running []*ContainerProcess
	for _, p := range processes {
		if _, ended := p.Ended(); !ended {
			running = append(running, p)
		}
	}
	stopProcesses(running, 5*time.Second)
	k.cancel()
	_ = k.log.Close()
}

// ContainerProcesses are the containers the suite has run (or failed to run) for the pods of a
// namespace, in the order they started, those that have ended too.
func (c *Cluster) ContainerProcesses(namespace string) []*ContainerProcess {
	k := c.containers
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []*ContainerProcess
	for _, p := range k.processes {
		if p.Namespace == namespace {
			out = append(out, p)
		}
	}
	return out
}

// ContainerProcess waits until the suite runs a container of a pod and returns its process; an
// error if it could not be run.
func (c *Cluster) ContainerProcess(ctx context.Context, namespace, pod, container string) (*ContainerProcess, error) {
	k := c.containers
	for {
		k.mu.Lock()
		changed := k.changed
		var found *ContainerProcess
		for _, p := range k.processes {
			if p.Namespace == namespace && p.Pod == pod && (p.Container == container || p.Container == "") {
				found = p
			}
		}
		k.mu.Unlock()
		if found != nil {
			return found, found.startError()
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("the suite runs no container %s of pod %s/%s: %w", container, namespace, pod, ctx.Err())
		}
	}
}

// startError is why the container could not be run; nil for a process that started.
func (p *ContainerProcess) startError() error {
	if p.cmd == nil {
		return fmt.Errorf("pod %s/%s container %s: %w", p.Namespace, p.Pod, p.Container, p.Err)
	}
	return nil
}

// containerRun is a container being prepared: its ports and volumes on this machine.
type containerRun struct {
	k         *containers
	pod       *corev1.Pod
	container *corev1.Container
	image     image
	binary    string            // the program's file
	ports     map[int32]int     // container port -> loopback port
	mounts    map[string]string // mount path -> directory
}

// listen gives a container port a loopback port of its own (once).
func (run *containerRun) listen(containerPort int32) (int, error) {
	if port, ok := run.ports[containerPort]; ok {
		return port, nil
	}
	port, err := freePort()
	if err == nil {
		run.ports[containerPort] = port
	}
	return port, err
}

// scratch is a directory of the container's own.
func (run *containerRun) scratch(name string) string {
	dir := filepath.Join(run.k.c.Dir, "containers", string(run.pod.UID), run.container.Name, name)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// ClaimDir is the directory that stands for a PersistentVolumeClaim's volume: one for the claim,
// shared by every container that mounts it, as a ReadWriteMany volume is. Nothing fills it (kwok
// completes a download Job's pod without running it): a test writes what the download would have.
func (c *Cluster) ClaimDir(namespace, claim string) string {
	dir := filepath.Join(c.Dir, "claims", namespace, claim)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// root is a directory that stands for the container's file system as far as its mounts go: each
// mount path a link to its volume's directory (after mountVolumes), for a program given absolute
// paths in a file, which containerCommand cannot map.
func (run *containerRun) root() (string, error) {
	root := run.scratch("root")
	for mount, dir := range run.mounts {
		link := filepath.Join(root, mount)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return "", err
		}
		if err := os.Symlink(dir, link); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return root, nil
}

// mountVolumes makes a directory for each volume the container mounts: a ConfigMap's keys as
// files, rewritten when the ConfigMap changes (configMapChanged), an emptyDir empty, a claim's
// the claim's own (ClaimDir). Other volume kinds are refused.
func (run *containerRun) mountVolumes() error {
	for _, mount := range run.container.VolumeMounts {
		var volume *corev1.Volume
		for i := range run.pod.Spec.Volumes {
			if run.pod.Spec.Volumes[i].Name == mount.Name {
				volume = &run.pod.Spec.Volumes[i]
			}
		}
		if volume == nil {
			return fmt.Errorf("volume mount %s: the pod has no such volume", mount.Name)
		}
		dir := run.scratch(filepath.Join("volumes", mount.Name))
		switch {
		case volume.ConfigMap != nil:
			cm, err := run.k.c.Clientset.CoreV1().ConfigMaps(run.pod.Namespace).Get(context.Background(), volume.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: %w", mount.Name, err)
			}
			if err := writeConfigMap(dir, cm); err != nil {
				return err
			}
			if mount.SubPath == "" { // the kubelet never refreshes a subPath mount
				run.k.mu.Lock()
				if run.k.configMapDirs == nil {
					run.k.configMapDirs = map[string][]string{}
				}
				key := cm.Namespace + "/" + cm.Name
				run.k.configMapDirs[key] = append(run.k.configMapDirs[key], dir)
				run.k.mu.Unlock()
			}
		case volume.EmptyDir != nil:
		case volume.PersistentVolumeClaim != nil:
			dir = run.k.c.ClaimDir(run.pod.Namespace, volume.PersistentVolumeClaim.ClaimName)
		default:
			return fmt.Errorf("volume %s: the suite mounts ConfigMaps, emptyDirs and claims only", mount.Name)
		}
		run.mounts[mount.MountPath] = filepath.Join(dir, mount.SubPath)
	}
	return nil
}

// configMapChanged rewrites the directories of a changed ConfigMap's volumes, as the kubelet
// refreshes a mounted ConfigMap (here at the change, not within its sync period of about a
// minute).
func (k *containers) configMapChanged(cm *corev1.ConfigMap) {
	k.mu.Lock()
	dirs := slices.Clone(k.configMapDirs[cm.Namespace+"/"+cm.Name])
	k.mu.Unlock()
	for _, dir := range dirs {
		if err := writeConfigMap(dir, cm); err != nil && k.log != nil {
			k.logf("ConfigMap %s/%s into %s: %v", cm.Namespace, cm.Name, dir, err)
		}
	}
}

// writeConfigMap writes a ConfigMap's keys as files of dir, each replaced whole (a reader never
// sees half a file, as the kubelet's atomic writer swaps the volume's files at once).
func writeConfigMap(dir string, cm *corev1.ConfigMap) error {
	for key, value := range cm.Data {
		tmp := filepath.Join(dir, "."+key+".tmp")
		if err := os.WriteFile(tmp, []byte(value), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, key)); err != nil {
			return err
		}
	}
	return nil
}

// environment is the container's variables (values and the downward API's pod fields) and
// KUBECONFIG acting as the pod's ServiceAccount, as its in-cluster configuration would. With
// strict, a variable it cannot resolve is an error; else it is left out.
func (run *containerRun) environment(strict bool) ([]string, error) {
	pod := run.pod
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	kubeconfig, err := run.k.c.serviceAccountKubeconfig(pod.Namespace, account)
	if err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + kubeconfig}
	fields := map[string]string{
		"metadata.name": pod.Name, "metadata.namespace": pod.Namespace, "metadata.uid": string(pod.UID),
		"spec.nodeName": pod.Spec.NodeName, "spec.serviceAccountName": account, "status.podIP": pod.Status.PodIP,
	}
	for _, v := range run.container.Env {
		switch {
		case v.ValueFrom == nil:
			env = append(env, v.Name+"="+v.Value)
		case v.ValueFrom.FieldRef != nil && fields[v.ValueFrom.FieldRef.FieldPath] != "":
			env = append(env, v.Name+"="+fields[v.ValueFrom.FieldRef.FieldPath])
		case strict:
			return nil, fmt.Errorf("variable %s: the suite resolves values and the pod's name, namespace, uid, node, account and address only", v.Name)
		}
	}
	return env, nil
}

// containerLaunch is the container as one process: containerCommand, serving every port.
func containerLaunch(run *containerRun) ([]launch, error) {
	args, env, err := containerCommand(run)
	if err != nil {
		return nil, err
	}
	return []launch{{args: args, env: env, ports: slices.Sorted(maps.Keys(run.ports)), rank: noRank}}, nil
}

// containerCommand is the container's own command line (its command after the image's program,
// which is ours, then its args) with what a container's namespaces give it mapped to this
// machine: a path under a volume's mount path to the volume's directory, a container port given
// to a port flag (--*-port, --port) to the program's loopback port.
func containerCommand(run *containerRun) ([]string, []string, error) {
	if err := run.mountVolumes(); err != nil {
		return nil, nil, err
	}
	env, err := run.environment(true)
	if err != nil {
		return nil, nil, err
	}
	words := append(append([]string{}, run.container.Command...), run.container.Args...)
	if len(run.container.Command) > 0 {
		words = words[1:]
	}
	mounts := make([]string, 0, len(run.mounts))
	for mount := range run.mounts {
		mounts = append(mounts, mount)
	}
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) }) // the deepest mount first
	mapPath := func(v string) string {
		for _, mount := range mounts {
			if v == mount || strings.HasPrefix(v, strings.TrimSuffix(mount, "/")+"/") {
				return run.mounts[mount] + strings.TrimPrefix(v, mount)
			}
		}
		return v
	}
	mapPort := func(flag, v string) string {
		if flag != "--port" && !strings.HasSuffix(flag, "-port") {
			return v
		}
		if n, err := strconv.Atoi(v); err == nil {
			if port, ok := run.ports[int32(n)]; ok {
				return strconv.Itoa(port)
			}
		}
		return v
	}
	out := make([]string, len(words))
	for i, w := range words {
		if name, value, ok := strings.Cut(w, "="); ok && strings.HasPrefix(name, "-") {
			out[i] = name + "=" + mapPort(name, mapPath(value))
			continue
		}
		previous := ""
		if i > 0 {
			previous = words[i-1]
		}
		out[i] = mapPort(previous, mapPath(w))
	}
	return out, env, nil
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
	servers := []*corev1.Container{run.container}
	if vllm.IsShellScript(run.container) {
		if servers, err = run.scriptServers(env); err != nil {
			return nil, err
		}
	}
	env = append(env, "POD_NAME="+run.pod.Name, "POD_NAMESPACE="+run.pod.Namespace, "POD_IP="+run.pod.Status.PodIP)
	var launches []launch
	for _, server := range servers {
		l, err := run.modelServerLaunch(server)
		if err != nil {
			return nil, err
		}
		l.env = env
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
func (run *containerRun) scriptServers(env []string) ([]*corev1.Container, error) {
	bin, argv := run.scratch("script-bin"), run.scratch("script-servers")
	if err := os.WriteFile(filepath.Join(bin, "vllm"), []byte(recordingVLLM), 0o755); err != nil {
		return nil, err
	}
	words := vllm.CommandLine(run.container)
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
// pkg/tokenizer/tokenizer.go modelExists) and no KV-cache event publisher
// (pkg/kv-cache/block_cache.go dials --zmq-endpoint unless it is empty). --data-parallel-size is
// not passed on: each process is one rank.
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
	args := []string{"--model", model, "--port", strconv.Itoa(port), "--force-dummy-tokenizer", "--zmq-endpoint="}
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

// loraLoaderLaunch is the LoRA loader sidecar's one process: its command line (containerCommand's)
// with what its pod's network gives it mapped to this machine (loraLoaderArgs).
func loraLoaderLaunch(run *containerRun) ([]launch, error) {
	args, env, err := containerCommand(run)
	if err != nil {
		return nil, err
	}
	if args, err = loraLoaderArgs(run, args); err != nil {
		return nil, err
	}
	// the list's paths are the pod's: the loader finds the adapters' files under its mounts
	root, err := run.root()
	if err != nil {
		return nil, err
	}
	args = append(args, "--root", root)
	return []launch{{args: args, env: env, ports: slices.Sorted(maps.Keys(run.ports)), rank: noRank}}, nil
}

// loraLoaderDefaultListen is the loader's --listen default (cmd/fusioninfer-lora-loader).
const loraLoaderDefaultListen = ":8091"

// loraLoaderArgs maps the loader's arguments, its container's or its exec readiness probe's
// (`fusioninfer-lora-loader --probe`, which asks the running loader at --listen): each of its
// servers (--server repeats, one a data parallel rank) at localhost, the pod's own network, is
// that server's forwarder at the pod's address; its --listen port is a loopback port of the
// container's own, the same for the loader and its probe.
func loraLoaderArgs(run *containerRun, args []string) ([]string, error) {
	args = slices.Clone(args)
	for i, arg := range args {
		server, inline := strings.CutPrefix(arg, "--server=")
		switch {
		case inline:
		case arg == "--server" && i+1 < len(args):
			server = args[i+1]
		default:
			continue
		}
		u, err := url.Parse(server)
		if err != nil {
			return nil, fmt.Errorf("the loader's --server %q: %w", server, err)
		}
		if host := u.Hostname(); host != "localhost" && host != "127.0.0.1" {
			continue
		}
		u.Host = net.JoinHostPort(run.pod.Status.PodIP, u.Port())
		if inline {
			args[i] = "--server=" + u.String()
		} else {
			args[i+1] = u.String()
		}
	}
	listen, found := vllm.FlagValue(args, "--listen")
	if !found {
		listen = loraLoaderDefaultListen
	}
	_, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("the loader's --listen %q: %w", listen, err)
	}
	containerPort, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("the loader's --listen %q: %w", listen, err)
	}
	port, err := run.listen(int32(containerPort))
	if err != nil {
		return nil, err
	}
	return append(args, "--listen", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))), nil
}

// flagValues are the values of a flag that takes several (argparse's nargs="+"): the words after
// it up to the next flag.
func flagValues(words []string, flag string) []string {
	var out []string
	for i, w := range words {
		if w == flag {
			for _, v := range words[i+1:] {
				if strings.HasPrefix(v, "-") {
					break
				}
				out = append(out, v)
			}
		} else if v, ok := strings.CutPrefix(w, flag+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

// loraModuleJSON is a vLLM --lora-modules value (name=path, or JSON) in the sim's JSON form.
func loraModuleJSON(adapter, model string) (string, error) {
	if strings.HasPrefix(adapter, "{") {
		return adapter, nil
	}
	name, path, ok := strings.Cut(adapter, "=")
	if !ok {
		return "", fmt.Errorf("vLLM's --lora-modules %q: neither name=path nor JSON", adapter)
	}
	data, err := json.Marshal(map[string]string{"name": name, "path": path, "base_model_name": model})
	return string(data), err
}

// forward accepts connections to a pod's address and port and copies each to and from the
// program's loopback port. kwok reports a pod Ready as it makes it Running (it runs no probes), a
// moment before its program listens; a connection waits for the program then, as no connection
// would have been sent before a readiness probe passed. Once the program has taken a connection,
// or has ended, a connection it does not take ends at once, as a stopped program's port refuses
// one: a client waiting 30 s there would see a hang no pod shows.
func forward(l net.Listener, backend string, exited <-chan struct{}) {
	var listened atomic.Bool
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			var upstream net.Conn
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if upstream, err = net.Dial("tcp", backend); err == nil || listened.Load() || time.Now().After(deadline) {
					break
				}
				select {
				case <-exited:
					return
				default:
				}
			}
			if err != nil {
				return
			}
			listened.Store(true)
			// HTTP and gRPC need no half-closed connection: the first side to end ends both.
			go func() { _, _ = io.Copy(upstream, conn); _ = upstream.Close(); _ = conn.Close() }()
			_, _ = io.Copy(conn, upstream)
			_ = upstream.Close()
		}()
	}
}

func closeAll(listeners []net.Listener) {
	for _, l := range listeners {
		_ = l.Close()
	}
}
