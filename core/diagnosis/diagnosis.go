// SPDX-License-Identifier: Apache-2.0

package diagnosis

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/core/rolestatus"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/karpenter"
)

// Phase is where a service or a role stands, in the words of the component's status output
// (core/rolestatus: one model, one reading of the LWS status, one rule).
type Phase = rolestatus.Phase

// The phases, as rolestatus defines them.
const (
	Unknown     = rolestatus.Unknown
	Pending     = rolestatus.Pending
	Progressing = rolestatus.Progressing
	Running     = rolestatus.Running
	Failed      = rolestatus.Failed
	// ScaledToZero: every role is at zero replicas, waiting for a request (minReplicas 0).
	ScaledToZero = rolestatus.ScaledToZero
)

// Replica phases, more precise than the service's.
const (
	ReplicaRunning  = "Running"
	ReplicaMissing  = "NotCreated"
	ReplicaPending  = "Pending"  // pods not placed
	ReplicaStarting = "Starting" // placed, not ready
	ReplicaUpdating = "Updating"
	ReplicaFailed   = "Failed"
	// ReplicaIdle: an elastic LWS its autoscaler has at none.
	ReplicaIdle = "Idle"
)

// Cause is what holds something back: the object to look at, the reason, the message of the
// controller that said so, and what to do.
type Cause struct {
	Object  string `json:"object"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
	failed  bool
}

// Replica is one replica's LWS.
type Replica struct {
	Name     string `json:"name"`
	Phase    string `json:"phase"`
	Revision string `json:"revision,omitempty"`
	Cause    *Cause `json:"cause,omitempty"`
	// Adapters are the LoRA adapters of each of its pods that runs the loader, leader first.
	Adapters []PodAdapters `json:"adapters,omitempty"`
	// Load is its servers' load now (requests running and waiting, KV-cache usage), when their
	// metrics were read.
	Load *Load `json:"load,omitempty"`
}

// Role is one serving role.
type Role struct {
	Name          string    `json:"name"`
	ReadyReplicas int       `json:"readyReplicas"`
	Replicas      []Replica `json:"replicas"`
	Phase         Phase     `json:"phase"`
	// IdleSince is, for a role ScaledToZero, when its autoscaler last saw load (KEDA's
	// lastActiveTime); nil when it never has.
	IdleSince *metav1.Time `json:"idleSince,omitempty"`
}

// Report is the diagnosis of one service.
type Report struct {
	Service   string `json:"service"`
	Namespace string `json:"namespace"`
	Phase     Phase  `json:"phase"`
	// Causes are what holds the whole service back: its model's download, its claims, its gang,
	// its router and route.
	Causes []Cause `json:"causes,omitempty"`
	Roles  []Role  `json:"roles"`
	// MetricsSource says where the replicas' load was read, when it was.
	MetricsSource string `json:"metricsSource,omitempty"`
	// Request is a shell line that sends the service one completion through its router
	// (render.RouterSummary's), when the spec is known and has a router.
	Request string `json:"request,omitempty"`
}

// waitingFailures are the reasons a container waits that waiting will not cure.
var waitingFailures = []string{"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "CrashLoopBackOff",
	"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}

// Diagnose explains the observed state of the service named name in namespace. With svc (the
// spec it was deployed from) the replicas it should have are known, including those not created;
// without, the replicas are those found.
func Diagnose(name, namespace string, svc *api.InferenceService, o *Observed) *Report {
	r := &Report{Service: name, Namespace: namespace}
	d := newDiagnoser(o, svc)
	if svc != nil {
		if tree, errs := render.Build(svc); len(errs) == 0 {
			for _, obj := range tree.Objects {
				if dep, ok := obj.Object.(*appsv1.Deployment); ok {
					d.selectors[dep.Name] = dep.Spec.Selector
				}
				if lws, ok := obj.Object.(*lwsv1.LeaderWorkerSet); ok {
					d.revisions[lws.Name] = lws.Labels[render.LabelRevision]
					d.planned = append(d.planned, obj.Ref)
				}
				if obj.Batch > 0 {
					d.batch[obj.Name] = obj.Batch
					d.batches = max(d.batches, obj.Batch)
				}
			}
			if svc.Spec.GangScheduled() {
				d.minimalSetGPUs = render.Summarize(tree).MinimalGPUs
			}
		}
	}
	r.Causes = append(r.Causes, d.modelCauses()...)
	r.Causes = append(r.Causes, d.podGroupCauses()...)
	r.Causes = append(r.Causes, d.karpenterPoolCauses()...)
	r.Causes = append(r.Causes, d.routerCauses(name)...)
	r.Causes = append(r.Causes, d.inferenceGroupCauses(name)...)
	lwsByName := map[string]*lwsv1.LeaderWorkerSet{}
	for i := range o.LeaderWorkerSets {
		lwsByName[o.LeaderWorkerSets[i].Name] = &o.LeaderWorkerSets[i]
	}
	var all []Replica
	var allObserved []rolestatus.Replica
	for _, role := range d.expectedReplicas(lwsByName) {
		rr := Role{Name: role.name}
		var observed []rolestatus.Replica
		for _, lwsName := range role.lwss {
			lws := rolestatus.OfLeaderWorkerSet(lwsByName[lwsName])
			rep := d.replica(lwsName, lwsByName[lwsName], lws, r.Causes)
			rep.Adapters = d.adapters(lwsName)
			rep.Load = d.load(lwsName)
			if rep.Phase == ReplicaRunning {
				rr.ReadyReplicas++
			}
			rr.Replicas = append(rr.Replicas, rep)
			observed = append(observed, lws)
		}
		rr.Phase = phaseOf(rr.Replicas, observed, nil)
		if rr.Phase == ScaledToZero {
			rr.IdleSince = d.lastActive(role.lwss)
		}
		r.Roles = append(r.Roles, rr)
		all, allObserved = append(all, rr.Replicas...), append(allObserved, observed...)
	}
	r.Phase = phaseOf(all, allObserved, r.Causes)
	if o.Metrics != nil {
		r.MetricsSource = o.Metrics.Source
	}
	return r
}

// phaseOf is rolestatus.Of over the replicas' LWSs, with what the diagnosis knows beyond their
// status: a replica that failed (its pods' causes), one that runs an older revision than the
// spec's (updating), one whose pods are not ready though its LWS last said so, and the service's
// causes: a failed one fails the service, any other keeps it
// from Running.
func phaseOf(replicas []Replica, observed []rolestatus.Replica, causes []Cause) Phase {
	all := make([]rolestatus.Replica, len(observed))
	for i, r := range observed {
		r.Failed = replicas[i].Phase == ReplicaFailed
		r.Updating = r.Updating || replicas[i].Phase == ReplicaUpdating
		if replicas[i].Phase != ReplicaRunning && r.ReadyReplicas == r.Replicas { // its pods say not yet
			r.ReadyReplicas = max(r.Replicas-1, 0)
		}
		all[i] = r
	}
	phase := rolestatus.Of(all)
	for _, c := range causes {
		switch {
		case c.failed:
			return Failed
		case phase == Running:
			phase = Progressing
		}
	}
	return phase
}

type diagnoser struct {
	o   *Observed
	svc *api.InferenceService
	// revisions are the template revisions the spec asks of each LWS, when the spec is known;
	// planned are those LWSs, in the spec's order.
	revisions map[string]string
	planned   []render.Ref
	// minimalSetGPUs are the GPUs of the gang's minimal set; 0 without a spec or a gang.
	minimalSetGPUs int64
	// batch is each LWS's place in the rollout chain (render.Ref.Batch) of batches in all.
	batch   map[string]int
	batches int
	// pods are each LWS's pods, its leader first; gpusInUse what the pods bound to a node ask.
	pods      map[string][]corev1.Pod
	gpusInUse map[string]int64
	// poolCauses are what keeps each karpenter pool (by NodePool name) from giving its pending
	// pods nodes (karpenterPoolCauses), which those pods' replicas point to.
	poolCauses map[string]*Cause
	// selectors are the pod selectors of the Deployments the spec renders (the Endpoint Picker's,
	// FMA's controller), by name: an observed Deployment without one is read with it.
	selectors map[string]*metav1.LabelSelector
}

// newDiagnoser indexes the observed pods once: by LWS, and their GPUs by node.
func newDiagnoser(o *Observed, svc *api.InferenceService) *diagnoser {
	d := &diagnoser{o: o, svc: svc, revisions: map[string]string{}, batch: map[string]int{},
		pods: map[string][]corev1.Pod{}, gpusInUse: map[string]int64{}, poolCauses: map[string]*Cause{},
		selectors: map[string]*metav1.LabelSelector{}}
	for i := range o.Pods {
		p := &o.Pods[i]
		if lws := p.Labels[lwsv1.SetNameLabelKey]; lws != "" {
			d.pods[lws] = append(d.pods[lws], *p)
		}
		if p.Spec.NodeName != "" && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			d.gpusInUse[p.Spec.NodeName] += podGPUs(p)
		}
	}
	for _, pods := range d.pods {
		sort.SliceStable(pods, func(i, j int) bool {
			a, b := workerIndex(&pods[i]), workerIndex(&pods[j])
			return a < b || (a == b && pods[i].Name < pods[j].Name)
		})
	}
	return d
}

// workerIndex is a pod's index in its LWS group (0: the leader), -1 if it has none.
func workerIndex(pod *corev1.Pod) int {
	i, err := strconv.Atoi(pod.Labels[lwsv1.WorkerIndexLabelKey])
	if err != nil {
		return -1
	}
	return i
}

// inBatch says where an LWS's update stands in the rollout, "" when it is not rolled in batches.
func (d *diagnoser) inBatch(lws string) string {
	if b := d.batch[lws]; b > 0 {
		return fmt.Sprintf(" (rollout batch %d of %d)", b, d.batches)
	}
	return ""
}

type expectedRole struct {
	name string
	lwss []string
}

// expectedReplicas are the LWSs of each serving role: those of the spec's tree, else what exists.
func (d *diagnoser) expectedReplicas(found map[string]*lwsv1.LeaderWorkerSet) []expectedRole {
	var roles []expectedRole
	index := map[string]int{}
	add := func(role, lws string) {
		i, ok := index[role]
		if !ok {
			i = len(roles)
			index[role] = i
			roles = append(roles, expectedRole{name: role})
		}
		if !slices.Contains(roles[i].lwss, lws) {
			roles[i].lwss = append(roles[i].lwss, lws)
		}
	}
	if d.svc != nil {
		for _, ref := range d.planned {
			add(ref.Role, ref.Name)
		}
		return roles
	}
	names := make([]string, 0, len(found))
	for name := range found {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		add(found[name].Labels[render.LabelRoleName], name)
	}
	return roles
}

// replica explains one LWS: Running when Available, else the first cause among its pods.
// status is the LWS's status as rolestatus reads it.
func (d *diagnoser) replica(name string, lws *lwsv1.LeaderWorkerSet, status rolestatus.Replica, serviceCauses []Cause) Replica {
	rep := Replica{Name: name}
	if lws == nil {
		rep.Phase = ReplicaMissing
		rep.Cause = &Cause{Object: "LeaderWorkerSet/" + name, Reason: "NotCreated",
			Message: "not created yet: `pulumi up` creates it after what it depends on (the model's download, the minimal set with await: minimal)"}
		for _, c := range serviceCauses {
			if strings.HasPrefix(c.Object, "Job/") || strings.HasPrefix(c.Object, "PersistentVolumeClaim/") {
				rep.Cause = &Cause{Object: c.Object, Reason: c.Reason, Message: "waits for the model: " + c.Message, Fix: c.Fix, failed: c.failed}
				break
			}
		}
		if rep.Cause.failed {
			rep.Phase = ReplicaFailed
		}
		return rep
	}
	rep.Revision = lws.Labels[render.LabelRevision]
	available, updating := status.Available, status.Updating
	var podCause *Cause
	podPhase := ""
	for _, pod := range d.pods[name] {
		if podCause, podPhase = d.podCause(&pod); podCause != nil {
			break
		}
	}
	switch want := d.revisions[name]; {
	case podPhase == ReplicaFailed:
		rep.Phase, rep.Cause = podPhase, podCause
		return rep
	case want != "" && want != rep.Revision:
		rep.Phase = ReplicaUpdating
		rep.Cause = &Cause{Object: "LeaderWorkerSet/" + name, Reason: "OldRevision", Message: fmt.Sprintf("runs template revision %s, "+
			"the spec's is %s%s: `pulumi up` has not applied it yet (a rollout updates a replica after the batch before it is back)",
			rep.Revision, want, d.inBatch(name)), Fix: "pulumi up"}
		return rep
	case status.Replicas == 0: // an elastic LWS at none: nothing to wait for
		rep.Phase = ReplicaIdle
		return rep
	case available && !updating:
		rep.Phase = ReplicaRunning
		return rep
	case podCause != nil:
		rep.Phase, rep.Cause = podPhase, podCause
		return rep
	}
	switch {
	case updating:
		rep.Phase = ReplicaUpdating
		rep.Cause = &Cause{Object: "LeaderWorkerSet/" + name, Reason: "UpdateInProgress",
			Message: "rolling out revision " + rep.Revision + d.inBatch(name) + ": LWS is replacing the replica's pods"}
	case len(lws.Status.Conditions) == 0:
		rep.Phase = ReplicaPending
		rep.Cause = &Cause{Object: "LeaderWorkerSet/" + name, Reason: "NotObserved",
			Message: "the LeaderWorkerSet controller has not reported on it", Fix: "check that the LWS controller runs (lws-system)"}
	default:
		rep.Phase = ReplicaPending
		rep.Cause = &Cause{Object: "LeaderWorkerSet/" + name, Reason: "NoPods", Message: "no pods yet" + conditionMessage(lws.Status.Conditions)}
	}
	return rep
}

// atZero reports whether every LWS found is at none: roles scaled to zero, whose router holds a
// request until one wakes rather than refusing it.
func (d *diagnoser) atZero() bool {
	return len(d.o.LeaderWorkerSets) > 0 && !slices.ContainsFunc(d.o.LeaderWorkerSets, func(l lwsv1.LeaderWorkerSet) bool {
		return l.Spec.Replicas == nil || *l.Spec.Replicas > 0
	})
}

// lastActive is when KEDA last saw load for any of the LWSs (its ScaledObject's lastActiveTime;
// the render names a ScaledObject after the LWS it scales), the latest; nil when never.
func (d *diagnoser) lastActive(lwss []string) *metav1.Time {
	var last *metav1.Time
	for _, so := range d.o.ScaledObjects {
		if so.Status == nil || so.Status.LastActiveTime == nil || so.Spec.ScaleTargetRef == nil || !slices.Contains(lwss, so.Spec.ScaleTargetRef.Name) {
			continue
		}
		if last == nil || last.Before(so.Status.LastActiveTime) {
			last = so.Status.LastActiveTime
		}
	}
	return last
}

// podCause is what holds a pod back, nil when it is ready.
func (d *diagnoser) podCause(pod *corev1.Pod) (*Cause, string) {
	object := "Pod/" + pod.Name
	if pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		return &Cause{Object: object, Reason: orDefault(pod.Status.Reason, string(pod.Status.Phase)), failed: true,
			Message: orDefault(pod.Status.Message, "the pod ended"), Fix: "kubectl describe pod " + pod.Name}, ReplicaFailed
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && slices.Contains(waitingFailures, w.Reason) {
			msg := fmt.Sprintf("container %s: %s", cs.Name, orDefault(w.Message, w.Reason))
			fix := "kubectl logs " + pod.Name + " -c " + cs.Name + " --previous"
			if t := cs.LastTerminationState.Terminated; t != nil {
				msg += fmt.Sprintf("; last run ended %s (exit code %d)", t.Reason, t.ExitCode)
				if t.Message != "" {
					msg += ": " + t.Message
				}
				if t.Reason == "OOMKilled" {
					fix = "raise the container's memory limit (the server was killed for using more)"
				}
			}
			if strings.Contains(w.Reason, "Image") {
				fix = fmt.Sprintf("check the image %q and the pod's imagePullSecrets", cs.Image)
			}
			return &Cause{Object: object, Reason: w.Reason, Message: msg, Fix: fix, failed: true}, ReplicaFailed
		}
	}
	if scheduled := podCondition(pod, corev1.PodScheduled); pod.Spec.NodeName == "" {
		msg := "waiting to be scheduled"
		if scheduled != nil && scheduled.Message != "" {
			msg = scheduled.Message
		} else if e := d.lastWarning("Pod", pod.Name); e != nil {
			msg = e.Message
		}
		if pc := d.poolCauses[pod.Spec.NodeSelector[karpenter.NodePoolLabelKey]]; pc != nil {
			return &Cause{Object: pc.Object, Reason: pc.Reason, Message: "waits for a node of the pool (its cause above); Volcano: " + msg,
				Fix: pc.Fix}, ReplicaPending
		}
		cause := &Cause{Object: object, Reason: "Unschedulable", Message: msg, Fix: d.capacityFix(pod)}
		if group := pod.Annotations[volcanov1beta1.KubeGroupNameAnnotationKey]; group != "" {
			cause.Object = "PodGroup/" + group
			if pg := d.podGroup(group); pg != nil && podGroupCondition(pg, volcanov1beta1.PodGroupUnschedulableType) != nil {
				cause.Message = "waits for its gang (the PodGroup's cause above); Volcano: " + msg
			}
		}
		return cause, ReplicaPending
	}
	var server *corev1.ContainerStatus
	if len(pod.Spec.Containers) > 0 {
		server = containerStatus(pod, pod.Spec.Containers[api.ServingContainerIndex(&pod.Spec)].Name)
	}
	if loader := containerStatus(pod, render.LoRALoaderContainerName); loader != nil && !loader.Ready && loader.State.Running != nil &&
		server != nil && server.Ready { // a server still loading its model is the generic cause below
		// the loader says why: its own state, read now, else its exec probe's output
		// (cmd/fusioninfer-lora-loader, --probe), which the kubelet's event carries (pkg/probe/exec:
		// the command's output is the probe's message)
		msg := "the server runs; its LoRA adapters are not all loaded"
		if problem := d.loaderProblem(pod.Name); problem != "" {
			msg += ": " + strings.ReplaceAll(strings.TrimSpace(problem), "\n", "; ")
		} else if e := d.lastContainerWarning(pod.Name, render.LoRALoaderContainerName); e != nil {
			msg += ": " + strings.TrimSpace(strings.TrimPrefix(e.Message, "Readiness probe failed: "))
		}
		return &Cause{Object: object, Reason: "AdaptersNotLoaded", Message: msg,
			Fix: "kubectl logs " + pod.Name + " -c " + render.LoRALoaderContainerName}, ReplicaStarting
	}
	if server != nil && server.State.Running != nil && !rolestatus.PodReady(pod) {
		// A data parallel server's readiness probe names the first rank that did not answer
		// (core/render RankReadinessProbe), and the kubelet's event carries its output.
		if e := d.lastContainerWarning(pod.Name, server.Name); e != nil {
			if msg := strings.TrimSpace(strings.TrimPrefix(e.Message, "Readiness probe failed: ")); strings.HasPrefix(msg, render.RankNotAnsweringPrefix) {
				return &Cause{Object: object, Reason: "RankNotAnswering",
					Message: "runs, but " + msg + " (the pod is Ready, and its ranks routed, only when every rank answers)",
					Fix:     "kubectl logs " + pod.Name + " -c " + server.Name + " (every rank's server logs there)"}, ReplicaStarting
			}
		}
	}
	if !rolestatus.PodReady(pod) {
		return &Cause{Object: object, Reason: "NotReady", Message: fmt.Sprintf("running on %s, not ready yet: the server loads its model "+
			"or fails its readiness probe", pod.Spec.NodeName), Fix: "kubectl logs " + pod.Name}, ReplicaStarting
	}
	return nil, ""
}

// capacityFix says what would make room for a pod that cannot be placed.
func (d *diagnoser) capacityFix(pod *corev1.Pod) string {
	if pool := pod.Spec.NodeSelector[karpenter.NodePoolLabelKey]; pool != "" {
		return d.karpenterFix(pool)
	}
	gpus := podGPUs(pod)
	fix := "add nodes, or free the resources other pods hold"
	if gpus > 0 {
		fix = fmt.Sprintf("each pod needs %d free nvidia.com/gpu on one node", gpus)
		if nodes, room, free := d.freeGPUs(gpus); nodes > 0 {
			fix += fmt.Sprintf(" (%d of the cluster's %d ready nodes have that; %d GPUs free in all)", room, nodes, free)
		}
		fix += ": add such nodes, use a smaller --tensor-parallel-size, or deploy with await: minimal and fewer replicas"
	}
	if need := d.minimalSetGPUs; need > 0 {
		fix += fmt.Sprintf("; the gang's minimal set needs %d GPUs (fusioninfer plan shows where it fits)", need)
	}
	return fix
}

// karpenterFix is what to look at for a pod that waits for the nodes of a karpenter pool. The
// NodeClaims are read when the spec is known: without one for the pool, Karpenter has not acted.
func (d *diagnoser) karpenterFix(pool string) string {
	claims := "kubectl get nodeclaims -l " + karpenter.NodePoolLabelKey + "=" + pool
	if d.svc == nil {
		return fmt.Sprintf("Karpenter launches the nodes of NodePool %s: see its NodeClaims (%s)", pool, claims)
	}
	for i := range d.o.NodeClaims {
		if d.o.NodeClaims[i].Labels[karpenter.NodePoolLabelKey] == pool {
			return fmt.Sprintf("Karpenter launches the nodes of NodePool %s: wait for them, or see its NodeClaims (%s)", pool, claims)
		}
	}
	return fmt.Sprintf("Karpenter has made no NodeClaim for NodePool %s: check that Karpenter runs (its logs) and that the pool's "+
		"limits and node class allow a node (kubectl describe nodepool %s)", pool, pool)
}

// podGPUs is what a pod's containers ask of nvidia.com/gpu.
func podGPUs(pod *corev1.Pod) int64 {
	gpus := int64(0)
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[api.GPUResourceName]; ok {
			gpus += q.Value()
		} else if q, ok := c.Resources.Requests[api.GPUResourceName]; ok {
			gpus += q.Value()
		}
	}
	return gpus
}

// freeGPUs counts the ready, schedulable nodes, those with at least perPod GPUs free (allocatable
// less what the pods bound to them ask), and the GPUs free in all.
func (d *diagnoser) freeGPUs(perPod int64) (nodes, room int, free int64) {
	for i := range d.o.Nodes {
		n := &d.o.Nodes[i]
		if n.Spec.Unschedulable || !nodeReady(n) {
			continue
		}
		q, ok := n.Status.Allocatable[api.GPUResourceName]
		if !ok {
			continue
		}
		nodes++
		left := q.Value() - d.gpusInUse[n.Name]
		free += max(left, 0)
		if left >= perPod {
			room++
		}
	}
	return nodes, room, free
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// modelCauses: the download Jobs that have not completed, the claims not bound.
func (d *diagnoser) modelCauses() []Cause {
	var out []Cause
	for _, c := range d.o.Claims {
		if c.Status.Phase == corev1.ClaimPending {
			msg := "not bound"
			if e := d.lastWarning("PersistentVolumeClaim", c.Name); e != nil {
				msg += ": " + e.Message
			}
			out = append(out, Cause{Object: "PersistentVolumeClaim/" + c.Name, Reason: "Pending", Message: msg,
				Fix: fmt.Sprintf("check the storage class %q: it must provision volumes many nodes can mount", deref(c.Spec.StorageClassName))})
		}
	}
	for i := range d.o.Jobs {
		job := &d.o.Jobs[i]
		if jobConditionOf(job, batchv1.JobComplete) != nil {
			continue
		}
		object := "Job/" + job.Name
		if c := jobConditionOf(job, batchv1.JobFailed); c != nil {
			out = append(out, Cause{Object: object, Reason: orDefault(c.Reason, "Failed"), Message: "the model download failed: " + c.Message,
				Fix: "kubectl logs job/" + job.Name + " (a rerun resumes: delete the Job and run pulumi up)", failed: true})
			continue
		}
		cause := Cause{Object: object, Reason: "Downloading", Message: fmt.Sprintf("the model is downloading (%d active, %d failed attempts)",
			job.Status.Active, job.Status.Failed), Fix: "kubectl logs job/" + job.Name + " -f"}
		for _, pod := range d.o.Pods {
			if pod.Labels["job-name"] == job.Name {
				if c, _ := d.podCause(&pod); c != nil && c.Reason != "NotReady" {
					cause = Cause{Object: c.Object, Reason: c.Reason, Message: "the model download cannot run: " + c.Message, Fix: c.Fix, failed: c.failed}
				}
			}
		}
		out = append(out, cause)
	}
	return out
}

// podGroupCauses: a gang Volcano cannot place.
func (d *diagnoser) podGroupCauses() []Cause {
	var out []Cause
	for i := range d.o.PodGroups {
		pg := &d.o.PodGroups[i]
		if c := podGroupCondition(pg, volcanov1beta1.PodGroupUnschedulableType); c != nil && pg.Status.Phase != volcanov1beta1.PodGroupRunning {
			msg := c.Message
			if e := d.lastWarning("PodGroup", pg.Name); msg == "" && e != nil {
				msg = e.Message
			}
			if need := d.minimalSetGPUs; need > 0 {
				nodes, _, free := d.freeGPUs(1)
				msg = fmt.Sprintf("the gang's minimal set needs %d GPUs at once; the cluster's %d ready GPU nodes have %d free (Volcano: %s)",
					need, nodes, free, msg)
			}
			out = append(out, Cause{Object: "PodGroup/" + pg.Name, Reason: string(c.Type), Message: fmt.Sprintf("phase %s, minMember %d: %s",
				pg.Status.Phase, pg.Spec.MinMember, msg), Fix: "fusioninfer plan -f FILE --nodes N --gpus-per-node G shows what the gang needs"})
		}
	}
	return out
}

// routerCauses: an Endpoint Picker not available, an InferencePool with no Ready endpoint, a
// route no Gateway accepted.
func (d *diagnoser) routerCauses(service string) []Cause {
	var out []Cause
	if len(d.o.Deployments) > 0 && !d.atZero() && !slices.ContainsFunc(d.o.Pods, func(pod corev1.Pod) bool {
		return render.InPool(pod.Labels) && rolestatus.PodReady(&pod)
	}) {
		out = append(out, Cause{Object: "InferencePool/" + api.PoolName(service), Reason: "NoReadyEndpoint",
			Message: "no pod it selects is Ready: the Endpoint Picker has no server to pick, and the gateway refuses every request",
			Fix:     "see the replicas below: the pool's endpoints are their serving pods"})
	}
	for i := range d.o.Deployments {
		dep := &d.o.Deployments[i]
		if deploymentAvailable(dep) {
			continue
		}
		standingBy := d.leaderServes(service, dep)
		cause := Cause{Object: "Deployment/" + dep.Name, Reason: "Unavailable", Message: "the Endpoint Picker is not available" + deploymentMessage(dep)}
		found := false
		pods := d.deploymentPods(dep)
		for _, pod := range d.o.Pods {
			if pods.Matches(labels.Set(pod.Labels)) {
				if c, _ := d.podCause(&pod); c != nil && !(standingBy && c.Reason == "NotReady") {
					cause = Cause{Object: c.Object, Reason: c.Reason, Message: "the Endpoint Picker: " + c.Message, Fix: c.Fix, failed: c.failed}
					found = true
					break
				}
			}
		}
		if standingBy && !found {
			continue
		}
		out = append(out, cause)
	}
	for i := range d.o.HTTPRoutes {
		route := &d.o.HTTPRoutes[i]
		if len(route.Status.Parents) == 0 {
			out = append(out, Cause{Object: "HTTPRoute/" + route.Name, Reason: "NoParentStatus",
				Message: "no Gateway has reported on it", Fix: "check that its parentRefs name a Gateway whose controller runs"})
			continue
		}
		for _, parent := range route.Status.Parents {
			for _, c := range parent.Conditions {
				if c.Status == metav1.ConditionFalse && (c.Type == "Accepted" || c.Type == "ResolvedRefs") {
					out = append(out, Cause{Object: "HTTPRoute/" + route.Name, Reason: c.Reason,
						Message: fmt.Sprintf("Gateway %s: %s %s: %s", parent.ParentRef.Name, c.Type, c.Status, c.Message),
						Fix:     "the Gateway must support InferencePool backends (or set shadowService: true)", failed: c.Type == "Accepted"})
				}
			}
		}
	}
	return out
}

func (d *diagnoser) podGroup(name string) *volcanov1beta1.PodGroup {
	for i := range d.o.PodGroups {
		if d.o.PodGroups[i].Name == name {
			return &d.o.PodGroups[i]
		}
	}
	return nil
}

// lastWarning is the newest Warning event about an object.
func (d *diagnoser) lastWarning(kind, name string) *corev1.Event {
	var last *corev1.Event
	for i := range d.o.Events {
		e := &d.o.Events[i]
		if e.InvolvedObject.Kind == kind && e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning &&
			(last == nil || eventTime(e).After(eventTime(last).Time)) {
			last = e
		}
	}
	return last
}

// lastContainerWarning is the latest warning event about one container of a pod (a probe's).
func (d *diagnoser) lastContainerWarning(pod, container string) *corev1.Event {
	var last *corev1.Event
	for i := range d.o.Events {
		e := &d.o.Events[i]
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod && e.InvolvedObject.FieldPath == "spec.containers{"+container+"}" &&
			e.Type == corev1.EventTypeWarning && (last == nil || eventTime(e).After(eventTime(last).Time)) {
			last = e
		}
	}
	return last
}

// containerStatus is the status of a pod's container by name, nil when it has none yet.
func containerStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

func eventTime(e *corev1.Event) metav1.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.NewTime(e.EventTime.Time)
	}
	return e.CreationTimestamp
}

func conditionMessage(conditions []metav1.Condition) string {
	for _, c := range conditions {
		if c.Status == metav1.ConditionFalse && c.Message != "" {
			return ": " + c.Type + " " + c.Message
		}
	}
	return ""
}

func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

func podGroupCondition(pg *volcanov1beta1.PodGroup, t volcanov1beta1.PodGroupConditionType) *volcanov1beta1.PodGroupCondition {
	for i := range pg.Status.Conditions {
		if c := &pg.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func jobConditionOf(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// deploymentPods selects a Deployment's pods as its controller does: by its own selector (the
// Endpoint Picker's is the service's and the router role's labels, render/router.go
// eppSelector), the rendered one when the observed object carries none; nothing without either.
func (d *diagnoser) deploymentPods(dep *appsv1.Deployment) labels.Selector {
	selector := dep.Spec.Selector
	if selector == nil {
		selector = d.selectors[dep.Name]
	}
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// leaderServes: the Endpoint Picker's replicas elect a leader (its container has the release's
// leader election flag: a gateway-mode router's do, a standalone router's run active-active), and
// one is Ready. With leader election only the leader is Ready (eppconfig's HealthServices), so the
// Deployment is never Available with two replicas or more (Recreate: no pod may be unavailable),
// and its standbys, running and not Ready, are healthy as the release defines them.
func (d *diagnoser) leaderServes(service string, dep *appsv1.Deployment) bool {
	_, known := d.pickerRelease(service)
	replicas := int32(1)
	if dep.Spec.Replicas != nil {
		replicas = *dep.Spec.Replicas
	}
	elects := slices.ContainsFunc(dep.Spec.Template.Spec.Containers, func(c corev1.Container) bool {
		return slices.Contains(c.Args, eppconfig.FlagLeaderElection)
	})
	return known && replicas > 1 && elects && dep.Status.ReadyReplicas >= 1
}

func deploymentAvailable(dep *appsv1.Deployment) bool {
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func deploymentMessage(dep *appsv1.Deployment) string {
	for _, c := range dep.Status.Conditions {
		if c.Status == corev1.ConditionFalse && c.Message != "" {
			return ": " + c.Message
		}
	}
	return ""
}

func orDefault(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
