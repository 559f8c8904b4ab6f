// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// The suite's stand-in for the kubelet and container runtime of kwok's nodes (Options.Containers).
// kwok gives each pod an address of a network local to this machine (its --cidr: addPodNetwork)
// and makes it Running. For each container whose image a program stands for (images), the suite
// then runs that program as the container would run: its arguments and environment as the pod
// gives them, its volumes as directories, and its ports on loopback ports of its own (a program
// listens on every address of its port, so two pods' containers could not share one), with a
// forwarder from the pod's address and each declared port to them. A pod being deleted runs its
// preStop hooks still taking connections (as a kubelet's pod does), then takes no new connection;
// its processes get SIGTERM and, after the pod's grace period, SIGKILL, and the pod goes only
// once they have ended (a
// finalizer of the suite's holds it, as the kubelet keeps a terminating pod until its containers
// have stopped; kwok alone would delete it at once).

// containerFinalizer holds a pod being deleted until the suite has stopped its processes.
const containerFinalizer = "e2e.fusioninfer.io/containers"

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
	// ListenAfter is how long after Started its program was started (ListenAfterAnnotation: a
	// server loading its model); 0 for at once.
	ListenAfter time.Duration
	// Err is why the container could not be run (nothing else is set then), or how it ended.
	Err error

	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	ended  time.Time
	ready  time.Time // when the suite reported its pod Ready
	// listening: when its program first accepted a connection on each of its ports (polled, for a
	// process of ListenAfterAnnotation only).
	listening time.Time
}

// ListeningPollInterval is how often the suite tries a process's ports until it listens: a
// ListeningAt is up to that late.
const ListeningPollInterval = 20 * time.Millisecond

// ListeningAt says when the program first accepted a connection on each of its ports, for a
// process of ListenAfterAnnotation (polled every ListeningPollInterval, so up to that late);
// false before, or for another process.
func (p *ContainerProcess) ListeningAt() (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listening, !p.listening.IsZero()
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
	ended     bool // a container of the pod has ended (endWhenAProcessEnds); the suite restarts none
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
	Progress("running the pods' programs (vLLM: llm-d-inference-sim %s; Endpoint Pickers: GIE %s epp, %s lwepp; LoRA loader: this checkout's; Envoy: the test gateway from its bootstrap)",
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
		if len(processes) > 0 {
			go k.endWhenAProcessEnds(pod, run, container.Name, processes)
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
		run.listenAfter = max(run.listenAfter, l.listenAfter)
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
		Program: im.binary.name + " " + im.binary.version, Args: l.args, Ports: map[int32]int{}, Rank: l.rank, ListenAfter: l.listenAfter,
		exited: make(chan struct{})}
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
		go forward(ln, fmt.Sprintf("127.0.0.1:%d", hostPort), p.exited, l.listenAfter == 0)
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
	if l.kvEvents != nil {
		if err := l.kvEvents.start(); err != nil {
			_ = logFile.Close()
			closeAll(listeners)
			return nil, nil, err
		}
		fmt.Fprintf(logFile, "# KV-cache events: from %s to port %d under %q\n", l.kvEvents.simulatorEndpoint(), l.kvEvents.port, l.kvEvents.topic)
	}
	fmt.Fprintf(logFile, "# %s %s\n", binary, strings.Join(l.args, " "))
	cmd := exec.Command(binary, l.args...)
	if l.listenAfter > 0 {
		// The process runs from now, as the container does; its program (and so its ports) only
		// after the delay: sh sleeps, then becomes the program, in the same process group.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `sleep "$0" && exec "$@"`,
			strconv.FormatFloat(l.listenAfter.Seconds(), 'f', 3, 64), binary}, l.args...)...)
	}
	cmd.Env = append(l.env, "PATH="+os.Getenv("PATH"), "HOME="+run.scratch("home"))
	cmd.Dir = run.scratch("workdir")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	k.spawn <- func() { started <- cmd.Start() }
	if err := <-started; err != nil {
		_ = logFile.Close()
		closeAll(listeners)
		l.kvEvents.stop()
		return nil, nil, err
	}
	p.cmd, p.Started = cmd, time.Now()
	rank := ""
	if l.rank != noRank {
		rank = fmt.Sprintf(" rank %d", l.rank)
	}
	k.logf("%s/%s %s%s: started %s (pid %d), ports %v", pod.Namespace, pod.Name, container.Name, rank, p.Program, cmd.Process.Pid, p.Ports)
	if l.listenAfter > 0 {
		k.logf("%s/%s %s%s: its program starts in %s", pod.Namespace, pod.Name, container.Name, rank, l.listenAfter)
		go p.watchListening(func(format string, args ...any) {
			k.logf("%s/%s %s%s: "+format, append([]any{pod.Namespace, pod.Name, container.Name, rank}, args...)...)
		})
	}
	go func() {
		err := cmd.Wait()
		closeAll(listeners)
		l.kvEvents.stop()
		_ = logFile.Close()
		p.mu.Lock()
		p.ended, p.Err = time.Now(), err
		p.mu.Unlock()
		close(p.exited)
		k.logf("%s/%s %s%s: ended (%v); its ports refuse connections", pod.Namespace, pod.Name, container.Name, rank, err)
	}()
	return p, listeners, nil
}

// watchListening sets p.listening once the program accepts a connection on each of its loopback
// ports, or gives up when it ends.
func (p *ContainerProcess) watchListening(logf func(format string, args ...any)) {
	for _, port := range p.Ports {
		for {
			conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err == nil {
				_ = conn.Close()
				break
			}
			select {
			case <-p.exited:
				return
			case <-time.After(ListeningPollInterval):
			}
		}
	}
	p.mu.Lock()
	p.listening = time.Now()
	p.mu.Unlock()
	logf("listening, %s after its container started", p.listening.Sub(p.Started).Round(time.Millisecond))
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
	// listenAfter: its program starts this long after the container (ListenAfterAnnotation).
	listenAfter time.Duration
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

// forward accepts connections to a pod's address and port and copies each to and from the
// program's loopback port. kwok reports a pod Ready as it makes it Running (it runs no probes), a
// moment before its program listens; a connection waits for the program then (wait), as no
// connection would have been sent before a readiness probe passed. Once the program has taken a
// connection, or has ended, a connection it does not take ends at once, as a stopped program's
// port refuses one: a client waiting 30 s there would see a hang no pod shows. Without wait (a
// program that starts late on purpose, ListenAfterAnnotation) it ends at once before too: a
// request sent to a server that does not listen yet fails, as it would on a cluster.
func forward(l net.Listener, backend string, exited <-chan struct{}, wait bool) {
	var listened atomic.Bool
	listened.Store(!wait)
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
