// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A container's end: a rank that exits, and a pod being deleted (preStop hooks, SIGTERM, the
// grace period, SIGKILL, then the finalizer released), as the kubelet ends them.

// endWhenAProcessEnds ends a container when its process ends, or any of its rank processes, as a data
// parallel pod's launch script (core/render DataParallelScript) ends its container when any rank's
// server ends (it TERMs the other ranks, waits for them and exits non-zero). So when one of a
// container's processes ends while its pod is not being deleted (a crash, a SIGKILL), the suite
// stops the container's other ranks (SIGTERM, SIGKILL after the pod's grace period) and reports
// the pod not Ready at once, as the kubelet does for a container that is not running, without
// waiting for a readiness probe to fail (pkg/kubelet/prober/prober_manager.go UpdatePodStatus:
// a container whose state is not Running is not ready). The suite restarts no container (the
// kubelet would, after its back-off, and LWS, by RecreateGroupOnPodRestart, would then recreate
// the replica's pods): the pod stays not Ready.
func (k *containers) endWhenAProcessEnds(pod *corev1.Pod, run *podRun, container string, ranks []*ContainerProcess) {
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
	if ended.Rank == noRank {
		k.logf("%s/%s %s: its process ended, so the container ends", pod.Namespace, pod.Name, container)
	} else {
		k.logf("%s/%s %s: rank %d ended, so the container ends: SIGTERM to its other ranks", pod.Namespace, pod.Name, container, ended.Rank)
	}
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
// the containers' preStop hooks first (their servers still serving: runPreStopHooks), then
// SIGTERM, at which a server stops accepting connections (vLLM does, GIE's
// config/manifests/vllm/gpu-deployment.yaml says: its preStop sleep is there to let the gateways
// take the pod out of rotation first), then SIGKILL for what still runs when the grace period
// ends; then it lets the pod go.
func (k *containers) terminate(pod *corev1.Pod, run *podRun) {
	<-run.started
	grace := gracePeriod(pod)
	k.logf("%s/%s: deleted; preStop sleep %s, grace %s", pod.Namespace, pod.Name, min(preStopSleep(pod), grace), grace)
	preStop := k.runPreStopHooks(pod, run, grace)
	closeAll(run.listeners)
	k.logf("%s/%s: no new connection; SIGTERM", pod.Namespace, pod.Name)
	stopProcesses(run.processes, grace-preStop)
	k.logf("%s/%s: stopped", pod.Namespace, pod.Name)
	k.removeFinalizer(pod)
}

// runPreStopHooks runs the pod's preStop hooks at once, as the kubelet runs each container's,
// and returns how long they took, once the last has ended or grace has passed: the sleeps
// (preStopSleep), and every other exec hook of a container the suite runs, on this machine as the
// container would run it, with the pod's address standing for its loopback (127.0.0.1), as the
// stand-ins take it (envoy-standin --loopback): a standalone router's proxy drains through its
// admin this way (core/render standalone.go proxyDrainHook).
func (k *containers) runPreStopHooks(pod *corev1.Pod, run *podRun, grace time.Duration) time.Duration {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-time.After(preStopSleep(pod)):
		case <-ctx.Done():
		}
	})
	for _, c := range pod.Spec.Containers {
		hook := c.Lifecycle
		if hook == nil || hook.PreStop == nil || hook.PreStop.Exec == nil || isSleep(hook.PreStop.Exec.Command) ||
			!slices.ContainsFunc(run.processes, func(p *ContainerProcess) bool { return p.Container == c.Name }) {
			continue
		}
		command := make([]string, len(hook.PreStop.Exec.Command))
		for i, arg := range hook.PreStop.Exec.Command {
			command[i] = strings.ReplaceAll(arg, "127.0.0.1", pod.Status.PodIP)
		}
		wg.Go(func() {
			out, err := exec.CommandContext(ctx, command[0], command[1:]...).CombinedOutput()
			k.logf("%s/%s: container %s's preStop hook ended (%v) %s", pod.Namespace, pod.Name, c.Name, err, strings.TrimSpace(string(out)))
		})
	}
	wg.Wait()
	return time.Since(start)
}

// isSleep: an exec hook of sleep with a number of seconds, which preStopSleep counts.
func isSleep(command []string) bool {
	if len(command) != 2 || filepath.Base(command[0]) != "sleep" {
		return false
	}
	_, err := strconv.ParseFloat(command[1], 64)
	return err == nil
}

// preStopSleep is the longest preStop sleep of the pod's containers: a sleep action, or an exec
// of sleep with a number of seconds (other hooks: runPreStopHooks).
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
		case hook.PreStop.Exec != nil && isSleep(hook.PreStop.Exec.Command):
			n, _ := strconv.ParseFloat(hook.PreStop.Exec.Command[1], 64)
			d = time.Duration(n * float64(time.Second))
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
