// SPDX-License-Identifier: Apache-2.0

package featurespace

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	"sigs.k8s.io/gateway-api-inference-extension/pkg/epp/metadata"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
	"github.com/fusioninfer/pulumi-fusioninfer/mirror/keda"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/epploader"
)

// An Invariant is a rule every rendered service keeps; Check gives one message a violation,
// naming the pod and the port, rank or label.
type Invariant struct {
	Name  string
	Check func(tree *render.Tree, pods []*Pod) []string
}

// Invariants are the rules every rendered service keeps, each named by the class of thing it
// holds (ports, targets, selectors, adapters, gpus, probes, config) and what it holds of it:
// issue 42's "check that keeps the class closed", issue 45's (what monitoring aims at is
// declared) and issue 47's (every server has a readiness probe).
var Invariants = []Invariant{
	{"ports/one-process-a-port", oneProcessAPort},
	{"ports/one-port-flag-a-server", onePortFlagAServer},
	{"targets/pool-targets-listened-and-declared", poolTargets},
	{"targets/services-target-listened-and-declared", serviceTargets},
	{"targets/probes-target-listened-ports", probeTargets},
	{"targets/sidecar-and-loader-reach-their-server", inPodTargets},
	{"targets/podmonitors-scrape-declared-ports", podMonitorTargets},
	{"selectors/keda-query-selects-the-serving-pods", kedaQueries},
	{"selectors/dashboard-selects-scraped-labels", dashboardSelectors},
	{"adapters/every-routed-rank-serves-the-adapters", adaptersOnEveryRank},
	{"gpus/gpus-asked-are-gpus-used", gpusAskedAreUsed},
	{"probes/servers-have-readiness-probes", serversHaveReadinessProbes},
	{"config/epp-config-loads", eppConfigLoads},
	{"doors/a-door-waits-for-no-lease", doorsWaitForNoLease},
	{"doors/only-the-picker-names-a-destination", onlyThePickerNamesADestination},
	{"doors/a-held-request-outlives-every-timeout", aHeldRequestOutlivesEveryTimeout},
	{"autoscaling/a-role-at-zero-wakes-on-a-running-pod", aRoleAtZeroWakesOnARunningPod},
	{"gang/a-gang-needs-no-elastic-pod", aGangNeedsNoElasticPod},
	{"kvevents/every-endpoint-publishes-where-the-picker-dials", everyEndpointPublishesWhereThePickerDials},
	{"kvevents/servers-hash-blocks-as-the-picker", serversHashBlocksAsThePicker},
	{"memory/an-offload-fits-the-pods-memory", anOffloadFitsThePodsMemory},
}

// A pod that runs the router's proxy is a door of the router's Service, in the Service only
// while Ready: none of its containers elects a leader, which would leave every pod but the
// leader's not Ready and the Service one door, closed for a lease's length when it goes
// (docs/design/0044-a-standalone-door-that-stays-open.md).
func doorsWaitForNoLease(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		if !slices.ContainsFunc(pod.Processes, func(p *Process) bool { return p.Program == ProgramEnvoy }) {
			continue
		}
		for _, c := range pod.Spec.Containers {
			if slices.Contains(c.Args, eppconfig.FlagLeaderElection) {
				out = append(out, fmt.Sprintf("%s: container %s elects a leader (%s) in a pod that is a door of the router's Service", pod.Desc, c.Name, eppconfig.FlagLeaderElection))
			}
		}
	}
	return out
}

// A proxy routes by the header the picker sets only after removing a client's own copy of it, so
// a request goes where the picker said or nowhere.
func onlyThePickerNamesADestination(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		for _, p := range pod.Processes {
			if p.Program == ProgramEnvoy && !slices.ContainsFunc(p.Removes, func(h string) bool { return strings.EqualFold(h, metadata.DestinationEndpointKey) }) {
				out = append(out, fmt.Sprintf("%s: %s routes by %s without removing the client's own (removes %v)", pod.Desc, p.Name, metadata.DestinationEndpointKey, p.Removes))
			}
		}
	}
	return out
}

// No two processes of a pod listen on one port.
func oneProcessAPort(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		owner := map[int32]*Process{}
		for _, proc := range pod.Processes {
			for _, port := range proc.Listens {
				if other := owner[port]; other != nil && other != proc {
					out = append(out, fmt.Sprintf("%s: port %d is taken by %s and by %s", pod.Desc, port, other, proc))
				}
				owner[port] = proc
			}
		}
	}
	return out
}

// A server's command line gives its port once: a second --port is a port nobody chose.
func onePortFlagAServer(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		for _, proc := range pod.Processes {
			if len(proc.PortFlags) > 1 {
				out = append(out, fmt.Sprintf("%s: %s's command line gives --port %d times (%s); it listens on the last",
					pod.Desc, proc, len(proc.PortFlags), strings.Join(proc.PortFlags, ", ")))
			}
		}
	}
	return out
}

// selects is whether a selector's labels are all the pod's.
func selects(selector map[string]string, pod *Pod) bool {
	return k8slabels.SelectorFromSet(selector).Matches(k8slabels.Set(pod.Labels))
}

// targetPort checks a port an object outside the pod aims at: a process listens on it and the
// pod declares it.
func targetPort(pod *Pod, port int32, who string) []string {
	var out []string
	if pod.Listener(port) == nil {
		out = append(out, fmt.Sprintf("%s: %s targets port %d, where no process of the pod listens (%s)", pod.Desc, who, port, listening(pod)))
	}
	if !pod.DeclaresPort(port) {
		out = append(out, fmt.Sprintf("%s: %s targets port %d, which the pod does not declare (containerPort)", pod.Desc, who, port))
	}
	return out
}

// listening says what listens where in a pod, for messages.
func listening(pod *Pod) string {
	var parts []string
	for _, proc := range pod.Processes {
		for _, port := range proc.Listens {
			parts = append(parts, fmt.Sprintf("%d: %s", port, proc))
		}
	}
	if len(parts) == 0 {
		return "nothing listens"
	}
	return strings.Join(parts, "; ")
}

// pool is the tree's InferencePool: its selector and target ports.
func pool(tree *render.Tree) (name string, selector map[string]string, ports []int32, ok bool) {
	for _, o := range tree.Objects {
		switch p := o.Object.(type) {
		case *inferencev1.InferencePool:
			selector = map[string]string{}
			for k, v := range p.Spec.Selector.MatchLabels {
				selector[string(k)] = string(v)
			}
			for _, tp := range p.Spec.TargetPorts {
				ports = append(ports, int32(tp.Number))
			}
			return p.Name, selector, ports, true
		case *inferencev1alpha2.InferencePool:
			selector = map[string]string{}
			for k, v := range p.Spec.Selector {
				selector[string(k)] = string(v)
			}
			return p.Name, selector, []int32{p.Spec.TargetPortNumber}, true
		}
	}
	return "", nil, nil, false
}

// Every port the InferencePool targets is listened on and declared by every pod it selects,
// and it selects every serving role's pods that serve.
func poolTargets(tree *render.Tree, pods []*Pod) []string {
	name, selector, ports, ok := pool(tree)
	if !ok {
		return nil
	}
	var out []string
	selected := 0
	for _, pod := range pods {
		if !selects(selector, pod) {
			continue
		}
		selected++
		for _, port := range ports {
			out = append(out, targetPort(pod, port, "InferencePool "+name)...)
		}
	}
	if selected == 0 {
		out = append(out, fmt.Sprintf("InferencePool %s selects no pod (%v)", name, selector))
	}
	return out
}

// Every port a Service of the tree sends to (its target port, by number or by name) is
// listened on and declared by every pod it selects, and it selects one: the Endpoint Picker's, the
// shadow Service's and a standalone router's Service, whose clients enter through the proxy.
func serviceTargets(tree *render.Tree, pods []*Pod) []string {
	var out []string
	for _, svc := range Objects[*corev1.Service](tree) {
		if len(svc.Spec.Selector) == 0 {
			continue
		}
		selected := 0
		for _, pod := range pods {
			if !selects(svc.Spec.Selector, pod) {
				continue
			}
			selected++
			for _, sp := range svc.Spec.Ports {
				port := sp.TargetPort.IntVal
				switch {
				case sp.TargetPort.Type == intstr.String:
					named, ok := pod.NamedPort(sp.TargetPort.StrVal)
					if !ok {
						out = append(out, fmt.Sprintf("%s: Service %s port %s targets port %q, which the pod does not name", pod.Desc, svc.Name, sp.Name, sp.TargetPort.StrVal))
						continue
					}
					port = named
				case port == 0:
					port = sp.Port
				}
				out = append(out, targetPort(pod, port, fmt.Sprintf("Service %s (port %s)", svc.Name, sp.Name))...)
			}
		}
		if selected == 0 {
			out = append(out, fmt.Sprintf("Service %s selects no pod (%v)", svc.Name, svc.Spec.Selector))
		}
	}
	return out
}

// probePorts are the ports a probe sends to: an HTTP GET's, a TCP socket's or gRPC's (a named
// port: the container's port of that name), or a data parallel pod's exec probe that GETs each
// rank (python3 -c script scheme host path budget port ranks).
func probePorts(probe *corev1.Probe, c *corev1.Container, pod *Pod) (ports []int32, problems []string) {
	resolve := func(port string, number int32) {
		if port == "" {
			ports = append(ports, number)
			return
		}
		for _, cp := range c.Ports {
			if cp.Name == port {
				ports = append(ports, cp.ContainerPort)
				return
			}
		}
		problems = append(problems, fmt.Sprintf("%s: a probe of container %s names port %q, which the container does not declare", pod.Desc, c.Name, port))
	}
	switch {
	case probe.HTTPGet != nil:
		resolve(probe.HTTPGet.Port.StrVal, probe.HTTPGet.Port.IntVal)
	case probe.TCPSocket != nil:
		resolve(probe.TCPSocket.Port.StrVal, probe.TCPSocket.Port.IntVal)
	case probe.GRPC != nil:
		ports = append(ports, probe.GRPC.Port)
	case probe.Exec != nil:
		cmd := probe.Exec.Command
		if i := indexOf(cmd, "-c"); len(cmd) > 0 && cmd[0] == "python3" && i >= 0 && len(cmd) >= i+8 {
			base, ranks := atoi32(cmd[i+6]), atoi32(cmd[i+7])
			for r := range ranks {
				ports = append(ports, base+r)
			}
		}
	}
	return ports, problems
}

// Every probe targets a port a process of its pod listens on.
func probeTargets(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		for _, c := range pod.containers() {
			for kind, probe := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
				if probe == nil {
					continue
				}
				ports, problems := probePorts(probe, c, pod)
				out = append(out, problems...)
				for _, port := range ports {
					if pod.Listener(port) == nil {
						out = append(out, fmt.Sprintf("%s: the %s probe of container %s targets port %d, where no process listens (%s)",
							pod.Desc, kind, c.Name, port, listening(pod)))
					}
				}
			}
		}
	}
	slices.Sort(out) // the probes' map order
	return out
}

// The routing sidecar and the LoRA loader send to a vLLM server of their pod, and a standalone
// router's Envoy proxy sends ext_proc to the Endpoint Picker's ext_proc port: not to another
// program or port, or to no one.
func inPodTargets(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		for _, proc := range pod.Processes {
			for _, t := range proc.Targets {
				switch l := pod.Listener(t.Port); {
				case l == nil:
					out = append(out, fmt.Sprintf("%s: %s sends to port %d (%s), where no process listens (%s)", pod.Desc, proc, t.Port, t.What, listening(pod)))
				case l.Program != t.Program:
					out = append(out, fmt.Sprintf("%s: %s sends to port %d (%s), where %s listens, not a %s", pod.Desc, proc, t.Port, t.What, l, t.Program))
				case t.Serves != "" && l.Serves[t.Port] != t.Serves:
					out = append(out, fmt.Sprintf("%s: %s sends %s to port %d (%s), where %s serves %s", pod.Desc, proc, t.Serves, t.Port, t.What, l, cmp.Or(l.Serves[t.Port], "nothing it names")))
				}
			}
		}
	}
	return out
}

// Objects are the tree's objects of a type, in order.
func Objects[T any](tree *render.Tree) []T {
	var out []T
	for _, o := range tree.Objects {
		if obj, ok := o.Object.(T); ok {
			out = append(out, obj)
		}
	}
	return out
}

// podMonitors are the tree's PodMonitors.
func podMonitors(tree *render.Tree) []*monitoringv1.PodMonitor {
	return Objects[*monitoringv1.PodMonitor](tree)
}

// vectorSelectors are the series selectors of a PromQL query.
func vectorSelectors(query string) ([]*parser.VectorSelector, error) {
	expr, err := parser.ParseExpr(query)
	if err != nil {
		return nil, err
	}
	var out []*parser.VectorSelector
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out, nil
}

func selectsWith(selector metav1.LabelSelector, pod *Pod) bool {
	s, err := metav1.LabelSelectorAsSelector(&selector)
	return err == nil && s.Matches(k8slabels.Set(pod.Labels))
}

// Every PodMonitor selects pods, and every endpoint it scrapes is a port they
// declare (Prometheus' pod discovery makes a target only of a declared port) and listen on.
func podMonitorTargets(tree *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pm := range podMonitors(tree) {
		selected := 0
		for _, pod := range pods {
			if !selectsWith(pm.Spec.Selector, pod) {
				continue
			}
			selected++
			for _, ep := range pm.Spec.PodMetricsEndpoints {
				who := "PodMonitor " + pm.Name
				switch {
				case ep.Port != nil:
					port, ok := pod.NamedPort(*ep.Port)
					if !ok {
						out = append(out, fmt.Sprintf("%s: %s scrapes the port named %q, which the pod does not declare", pod.Desc, who, *ep.Port))
						continue
					}
					out = append(out, targetPort(pod, port, who)...)
				case ep.PortNumber != nil:
					out = append(out, targetPort(pod, *ep.PortNumber, who)...)
				}
			}
		}
		if selected == 0 {
			out = append(out, fmt.Sprintf("PodMonitor %s selects no pod (%v)", pm.Name, pm.Spec.Selector))
		}
	}
	return out
}

// servingPods are the pods of a role in which a vLLM server runs.
func servingPods(pods []*Pod, role string) []*Pod {
	var out []*Pod
	for _, pod := range pods {
		if pod.Role == role && slices.ContainsFunc(pod.Processes, func(p *Process) bool { return p.Program == ProgramVLLM }) {
			out = append(out, pod)
		}
	}
	return out
}

// A KEDA query's pod matcher selects every pod that serves the role whose load it
// reads, and no pod of another role; its namespace is the service's.
func kedaQueries(tree *render.Tree, pods []*Pod) []string {
	var out []string
	for _, so := range Objects[*keda.ScaledObject](tree) {
		for _, trigger := range so.Spec.Triggers {
			query := trigger.Metadata["query"]
			selectors, err := vectorSelectors(query)
			if err != nil {
				out = append(out, fmt.Sprintf("ScaledObject %s: its query %q does not parse: %v", so.Name, query, err))
				continue
			}
			for _, vs := range selectors {
				for _, m := range vs.LabelMatchers {
					switch m.Name {
					case "namespace":
						if !m.Matches(tree.Service.Namespace) {
							out = append(out, fmt.Sprintf("ScaledObject %s: its query selects namespace %s, not the service's %s", so.Name, m, tree.Service.Namespace))
						}
					case "pod":
						out = append(out, podMatcherSelectsOneRole(so.Name, m, pods)...)
					}
				}
			}
		}
	}
	return out
}

// podMatcherSelectsOneRole: the pods a query's pod matcher selects are of one role, and are all
// of that role's serving pods.
func podMatcherSelectsOneRole(who string, m *labels.Matcher, pods []*Pod) []string {
	roles := map[string]bool{}
	for _, pod := range pods {
		if m.Matches(pod.Name) {
			roles[pod.Role] = true
		}
	}
	if len(roles) != 1 {
		return []string{fmt.Sprintf("ScaledObject %s: its query's %s selects the pods of %d roles (%v), not one role's", who, m, len(roles), roles)}
	}
	var out []string
	for role := range roles {
		for _, pod := range servingPods(pods, role) {
			if !m.Matches(pod.Name) {
				out = append(out, fmt.Sprintf("ScaledObject %s: its query's %s leaves out %s, a server of role %s", who, m, pod.Desc, role))
			}
		}
	}
	return out
}

// Every label a dashboard query selects on is one the PodMonitors set from a label
// of the pods they scrape, with a value some such pod has; a StatefulSet matcher selects every
// replica's leader StatefulSet (an LWS's, of its name) of one role.
func dashboardSelectors(tree *render.Tree, pods []*Pod) []string {
	var text string
	for _, o := range tree.Objects {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok && cm.Labels[render.GrafanaDashboardLabel] != "" {
			for _, v := range cm.Data {
				text = v
			}
		}
	}
	if text == "" {
		return nil
	}
	var out []string
	exprs := regexp.MustCompile(`"expr": "((?:[^"\\]|\\.)*)"`).FindAllStringSubmatch(text, -1)
	for _, e := range exprs {
		query, err := strconv.Unquote(`"` + e[1] + `"`)
		if err != nil {
			out = append(out, fmt.Sprintf("dashboard: a query %q is not a JSON string", e[1]))
			continue
		}
		selectors, err := vectorSelectors(query)
		if err != nil {
			out = append(out, fmt.Sprintf("dashboard: the query %q does not parse: %v", query, err))
			continue
		}
		for _, vs := range selectors {
			for _, m := range vs.LabelMatchers {
				switch m.Name {
				case labels.MetricName:
				case "namespace":
				case "statefulset":
					out = append(out, statefulSetMatcher(query, m, pods)...)
				default:
					if program := exporter(vs.Name); !scrapedLabel(tree, pods, m, program) {
						out = append(out, fmt.Sprintf("dashboard: the query %q selects %s, which no PodMonitor sets from a label of a pod it scrapes that runs the %s exporting %s",
							query, m, program, vs.Name))
					}
				}
			}
		}
	}
	return out
}

// exporter is the program whose /metrics has a metric: vLLM's (vllm:), the Endpoint Picker's
// (inference_), "" for any (Prometheus' own up).
func exporter(metric string) string {
	switch {
	case strings.HasPrefix(metric, "vllm:"):
		return ProgramVLLM
	case strings.HasPrefix(metric, "inference_"):
		return ProgramEndpointPicker
	}
	return ""
}

// scrapedLabel: a PodMonitor sets the matcher's label from a pod label, and a pod it scrapes that
// runs the program (any, for "") has a value of that label the matcher selects.
func scrapedLabel(tree *render.Tree, pods []*Pod, m *labels.Matcher, program string) bool {
	for _, pm := range podMonitors(tree) {
		for _, ep := range pm.Spec.PodMetricsEndpoints {
			for _, rc := range ep.RelabelConfigs {
				if rc.TargetLabel != m.Name || len(rc.SourceLabels) != 1 {
					continue
				}
				source := strings.TrimPrefix(string(rc.SourceLabels[0]), "__meta_kubernetes_pod_label_")
				for _, pod := range pods {
					if !selectsWith(pm.Spec.Selector, pod) ||
						(program != "" && !slices.ContainsFunc(pod.Processes, func(p *Process) bool { return p.Program == program })) {
						continue
					}
					for k, v := range pod.Labels {
						if sanitize(k) == source && m.Matches(v) {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

// sanitize is Prometheus' label name rule for a discovered pod label (strutil.SanitizeLabelName).
func sanitize(name string) string {
	return regexp.MustCompile(`[^a-zA-Z0-9_]`).ReplaceAllString(name, "_")
}

// statefulSetMatcher: the leader StatefulSets a replicas query selects are every LWS of one role.
func statefulSetMatcher(query string, m *labels.Matcher, pods []*Pod) []string {
	byRole := map[string]map[string]bool{}
	for _, pod := range pods {
		if pod.LWS != "" {
			if byRole[pod.Role] == nil {
				byRole[pod.Role] = map[string]bool{}
			}
			byRole[pod.Role][pod.LWS] = true
		}
	}
	var out []string
	matchedRoles := 0
	for role, sets := range byRole {
		var in, missed []string
		for lws := range sets {
			if m.Matches(lws) {
				in = append(in, lws)
			} else {
				missed = append(missed, lws)
			}
		}
		if len(in) > 0 {
			matchedRoles++
			if len(missed) > 0 {
				slices.Sort(missed)
				out = append(out, fmt.Sprintf("dashboard: the query %q (%s) leaves out the LeaderWorkerSets %v of role %s", query, m, missed, role))
			}
		}
	}
	if matchedRoles != 1 {
		out = append(out, fmt.Sprintf("dashboard: the query %q (%s) selects the StatefulSets of %d roles, not one", query, m, matchedRoles))
	}
	return out
}

// Every rank the pool routes to, in a pod of a role whose model has adapters, serves them: a
// LoRA loader loads them into the server that answers on that port (through the sidecar, the
// server it forwards to).
func adaptersOnEveryRank(tree *render.Tree, pods []*Pod) []string {
	_, selector, ports, ok := pool(tree)
	if !ok {
		return nil
	}
	var out []string
	for _, pod := range pods {
		role := tree.Service.Spec.RoleNamed(pod.Role)
		if role == nil || !selects(selector, pod) {
			continue
		}
		m := tree.Service.Spec.ModelOf(role)
		if m == nil || len(m.Adapters) == 0 {
			continue
		}
		loaded := map[int32]bool{}
		for _, proc := range pod.Processes {
			if proc.Program == ProgramLoRALoader {
				for _, t := range proc.Targets {
					loaded[t.Port] = true
				}
			}
		}
		for _, port := range ports {
			server := port
			if l := pod.Listener(port); l != nil && l.Program == ProgramRoutingSidecar {
				server = l.Targets[slices.Index(l.Listens, port)].Port
			}
			if l := pod.Listener(server); l == nil || l.Program != ProgramVLLM {
				continue // (b) says what is wrong with the port
			}
			if !loaded[server] {
				out = append(out, fmt.Sprintf("%s: the pool routes requests for adapters %s to port %d, whose server (port %d) no LoRA loader loads them into",
					pod.Desc, adapterNames(m), port, server))
			}
		}
	}
	return out
}

func adapterNames(m *api.Model) string {
	var names []string
	for _, a := range m.Adapters {
		names = append(names, a.Name)
	}
	return strings.Join(names, ",")
}

// The GPUs a pod asks for are those its servers use: each server's tensor x pipeline size
// in GPUs (a Ray server's over the GPUs of its whole group), CUDA_VISIBLE_DEVICES naming that
// many of the pod's devices, no device given to two servers, none left idle.
func gpusAskedAreUsed(_ *render.Tree, pods []*Pod) []string {
	var out []string
	groupGPUs := map[string]int64{}
	for _, pod := range pods {
		groupGPUs[fmt.Sprintf("%s/%d", pod.LWS, pod.Group)] += pod.GPUs()
	}
	for _, pod := range pods {
		asked := pod.GPUs()
		var servers []*Process
		ray := false
		for _, proc := range pod.Processes {
			switch proc.Program {
			case ProgramVLLM:
				servers = append(servers, proc)
			case ProgramRayHead, ProgramRayWorker:
				ray = true
			}
		}
		if len(servers) == 0 {
			continue // a Ray worker's GPUs are its leader's server's; a requester's, its server's
		}
		if ray {
			group := groupGPUs[fmt.Sprintf("%s/%d", pod.LWS, pod.Group)]
			if tp := servers[0].TensorPipeline; tp != group {
				out = append(out, fmt.Sprintf("%s: %s spans tensor x pipeline = %d GPUs over Ray, but its group of %d pods asks for %d",
					pod.Desc, servers[0], tp, pod.GroupSize, group))
			}
			continue
		}
		used, owner := int64(0), map[string]*Process{}
		for _, s := range servers {
			used += s.TensorPipeline
			devices := s.Devices
			if devices == nil {
				devices = make([]string, s.TensorPipeline)
				for i := range devices {
					devices[i] = strconv.Itoa(i) // CUDA's default: the first devices
				}
			} else if int64(len(devices)) != s.TensorPipeline {
				out = append(out, fmt.Sprintf("%s: %s sees %d GPUs (CUDA_VISIBLE_DEVICES=%s) but spans tensor x pipeline = %d",
					pod.Desc, s, len(devices), strings.Join(devices, ","), s.TensorPipeline))
			}
			for _, d := range devices {
				if n, err := strconv.Atoi(d); err != nil || int64(n) >= asked {
					out = append(out, fmt.Sprintf("%s: %s uses GPU %s, but the pod asks for %d", pod.Desc, s, d, asked))
				}
				if other := owner[d]; other != nil {
					out = append(out, fmt.Sprintf("%s: GPU %s is used by %s and by %s", pod.Desc, d, other, s))
				}
				owner[d] = s
			}
		}
		if used != asked {
			out = append(out, fmt.Sprintf("%s: the pod asks for %d GPUs, its servers use %d", pod.Desc, asked, used))
		}
	}
	return out
}

// Every container that runs a vLLM server has a readiness probe that reaches each of
// its servers' ports: a pod is Ready, and in the pool, only when its servers answer.
func serversHaveReadinessProbes(_ *render.Tree, pods []*Pod) []string {
	var out []string
	for _, pod := range pods {
		for _, c := range pod.containers() {
			var ports []int32
			for _, proc := range pod.Processes {
				if proc.Container == c.Name && proc.Program == ProgramVLLM {
					ports = append(ports, proc.Listens...)
				}
			}
			if len(ports) == 0 {
				continue
			}
			if c.ReadinessProbe == nil {
				out = append(out, fmt.Sprintf("%s: container %s runs vLLM on port %v and has no readiness probe", pod.Desc, c.Name, ports))
				continue
			}
			probed, _ := probePorts(c.ReadinessProbe, c, pod)
			for _, port := range ports {
				if !slices.Contains(probed, port) {
					out = append(out, fmt.Sprintf("%s: container %s's readiness probe does not reach its server on port %d (it probes %v)", pod.Desc, c.Name, port, probed))
				}
			}
		}
	}
	return out
}

// The Endpoint Picker's configuration loads as the release's Endpoint Picker loads it at start-up:
// by its own code where this machine has it (epploader: GIE v1.2.0's loader, linked; GIE v1.5.0's,
// the oracle program make check builds), so that a bug of api/eppconfig, which the render
// validates with, cannot hide here. llm-d-router's code is not on the module proxy: its
// configuration is checked by api/eppconfig's model of its loader (eppconfig/router*.go, each
// rule citing its source); GIE v1.5.0's by api/eppconfig's too before the oracle is built (make
// test's short mode on a new machine), which TestCheckGIE150GivesTheEPPsVerdict holds to it.
func eppConfigLoads(tree *render.Tree, _ []*Pod) []string {
	router := tree.Service.Spec.Router()
	if router == nil {
		return nil
	}
	release := router.EndpointPickerRelease()
	text, found := pickerConfigText(tree)
	if !found {
		if release.ReadsConfig() {
			return []string{fmt.Sprintf("the Endpoint Picker of %s reads a configuration, and the tree has none", release)}
		}
		return nil
	}
	var err error
	switch release {
	case eppconfig.ReleaseRouter:
		var cfg *eppconfig.RouterConfig
		if cfg, _, err = eppconfig.ParseRouter(text); err == nil {
			_, err = eppconfig.CheckRouter(cfg)
		}
	case eppconfig.ReleaseGIE150:
		err = loadGIE150(text)
	case eppconfig.ReleaseGIE:
		// a prefill/decode service's default image is llm-d's v0.4.0 (eppconfig.Select)
		err = epploader.GIE120(text, tree.Service.Spec.Disaggregated())
	default:
		return []string{fmt.Sprintf("the Endpoint Picker %s reads no configuration, and the tree has one", release)}
	}
	if err != nil {
		return []string{fmt.Sprintf("the %s Endpoint Picker's configuration does not load: %v\n%s", release, err, text)}
	}
	return nil
}

// pickerConfigText is the Endpoint Picker's configuration file, as its ConfigMap holds it; false
// when the tree has no such ConfigMap.
func pickerConfigText(tree *render.Tree) (string, bool) {
	for _, cm := range Objects[*corev1.ConfigMap](tree) {
		if cm.Name == api.EndpointPickerConfigName(tree.Service.Name) {
			for _, v := range cm.Data {
				return v, true
			}
		}
	}
	return "", false
}

// loadGIE150 loads a configuration with GIE v1.5.0's own loader (epploader.StartOracle), or, where
// it is not built yet, api/eppconfig's model of it.
func loadGIE150(text string) error {
	oracle, err := epploader.StartOracle(string(eppconfig.ReleaseGIE150), false)
	if errors.Is(err, epploader.ErrNotBuilt) {
		cfg, _, err := eppconfig.ParseGIE150(text)
		if err == nil {
			err = eppconfig.CheckGIE150(cfg)
		}
		return err
	}
	if err != nil {
		return err
	}
	verdict, err := oracle.Ask(epploader.Request{Config: text})
	if err != nil {
		return err
	}
	if verdict.ConfigErr != "" {
		return errors.New(verdict.ConfigErr)
	}
	return nil
}
