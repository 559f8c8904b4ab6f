// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The kubelet's prober for the suite's containers: readiness probes (HTTP, gRPC, TCP, exec) run
// against the container's program until the pod is Ready, then every periodSeconds.

// markReady waits until each container the suite runs passes its readiness probe (an HTTP GET,
// a gRPC health check, a TCP connection to its program, or an exec of the program itself; with
// none, until its declared ports accept), then reports the pod Ready, as the kubelet's prober does;
// it probes every 100 ms until then (the kubelet every periodSeconds: a pod here is Ready up to a
// period sooner), for as long as the pod runs.
// It then goes on probing every periodSeconds, as the kubelet's probe worker does
// (k8s.io/kubernetes pkg/kubelet/prober/worker.go doProbe): failureThreshold failures in a row
// report the pod not Ready, successThreshold passes Ready again; a container without a readiness
// probe stays ready. A pod being deleted is no longer probed.
func (k *containers) markReady(pod *corev1.Pod, run *podRun, runs []*containerRun) {
	// As the kubelet's probe worker, which probes a container that is not ready for as long as
	// the pod runs: an Endpoint Picker's standby passes its readiness probe only once elected,
	// which may be long after it started.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			k.mu.Lock()
			stopping := run.stopping || run.ended
			k.mu.Unlock()
			if stopping {
				cancel()
				return
			}
			time.Sleep(time.Second)
		}
	}()
	checks := make([]func() error, len(runs))
	for i, run := range runs {
		check, err := run.readinessCheck()
		if err == nil {
			err = run.probe(ctx, check)
		}
		if err != nil {
			k.logf("%s/%s %s: not ready when the pod stopped: %v", pod.Namespace, pod.Name, run.container.Name, err)
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

// readinessCheck is one run of what makes the container ready: its readiness probe; with none,
// its startup probe (the kubelet counts a container without a readiness probe ready once it has
// started, and started once its startup probe passes: k8s.io/kubernetes
// pkg/kubelet/prober/prober_manager.go UpdatePodStatus); with neither, nothing for a server that
// listens late on purpose (ListenAfterAnnotation: Ready as its container starts, as on a
// cluster), and otherwise the program listening on each declared port (kwok starts the pod a
// moment before the suite runs its program).
func (run *containerRun) readinessCheck() (func() error, error) {
	switch {
	case run.container.ReadinessProbe != nil:
		return run.probeCheck(run.container.ReadinessProbe)
	case run.container.StartupProbe != nil:
		return run.probeCheck(run.container.StartupProbe)
	case run.listenAfter > 0:
		return func() error { return nil }, nil
	}
	return run.probeCheck(nil)
}

// probeCheck is one run of a probe (nil: the program listens on each declared port).
func (run *containerRun) probeCheck(probe *corev1.Probe) (func() error, error) {
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
