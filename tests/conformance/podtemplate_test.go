// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

const podRulesNamespace = "conformance-pod-rules"

// podRulesManifest is a worker whose template uses what the pod rules check, each field valid,
// some in forms a stricter reading would wrongly refuse: a relaxed environment variable name, a
// probe on a named port no container declares, thresholds the server defaults, a sidecar (a
// restartable init container) with a probe.
const podRulesManifest = `
apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: qwen
spec:
  roles:
    - name: inference
      componentType: worker
      template:
        spec:
          restartPolicy: Always
          volumes:
            - name: shm
              emptyDir: {medium: Memory}
            - name: scratch
          initContainers:
            - name: log-shipper
              image: busybox:1.37
              restartPolicy: Always
              readinessProbe: {exec: {command: ["true"]}}
              volumeMounts: [{name: scratch, mountPath: /logs}]
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              imagePullPolicy: IfNotPresent
              args: ["--model", "Qwen/Qwen3-8B"]
              ports:
                - {name: http, containerPort: 8000}
                - {name: metrics-2, containerPort: 9090, protocol: TCP}
              env:
                - {name: HF_HOME, value: /cache}
                - {name: 1.relaxed-name, value: x}
              resources:
                limits: {nvidia.com/gpu: "1", memory: 64Gi, example.com/rdma: "1"}
                requests: {cpu: "4", memory: 32Gi, example.com/rdma: "1"}
              volumeMounts:
                - {name: shm, mountPath: /dev/shm}
                - {name: scratch, mountPath: /scratch}
              readinessProbe: {httpGet: {path: /health, port: http}, successThreshold: 0}
              livenessProbe: {tcpSocket: {port: 8000}, periodSeconds: 0}
              startupProbe: {httpGet: {path: /health, port: not-declared, scheme: HTTPS}, failureThreshold: 360}
              lifecycle: {preStop: {sleep: {seconds: 5}}}
            - name: metrics-proxy
              image: nginx:1.29
              ports: [{name: http, containerPort: 8080, hostPort: 8080}]
`

// podRuleCases are pod templates the server accepts or refuses, each a change to podRulesManifest's.
var podRuleCases = []struct {
	name   string
	mutate func(p *corev1.PodSpec)
}{
	{"the template as it is", func(*corev1.PodSpec) {}},
	{"container name not a DNS label", func(p *corev1.PodSpec) { p.Containers[0].Name = "VLLM_Server" }},
	{"two containers named vllm", func(p *corev1.PodSpec) { p.Containers[1].Name = "vllm" }},
	{"init container named as a container", func(p *corev1.PodSpec) { p.InitContainers[0].Name = "metrics-proxy" }},
	{"container without a name", func(p *corev1.PodSpec) { p.Containers[1].Name = "" }},
	{"sidecar without an image", func(p *corev1.PodSpec) { p.Containers[1].Image = "" }},
	{"imagePullPolicy Sometimes", func(p *corev1.PodSpec) { p.Containers[0].ImagePullPolicy = "Sometimes" }},
	{"terminationMessagePolicy unknown", func(p *corev1.PodSpec) { p.Containers[1].TerminationMessagePolicy = "Logs" }},
	{"restartPolicy OnFailure", func(p *corev1.PodSpec) { p.RestartPolicy = corev1.RestartPolicyOnFailure }},
	{"restartPolicy Sometimes", func(p *corev1.PodSpec) { p.RestartPolicy = "Sometimes" }},
	{"activeDeadlineSeconds", func(p *corev1.PodSpec) { p.ActiveDeadlineSeconds = ptr.To[int64](600) }},
	{"dnsPolicy unknown", func(p *corev1.PodSpec) { p.DNSPolicy = "ClusterOnly" }},
	{"dnsPolicy None without dnsConfig", func(p *corev1.PodSpec) { p.DNSPolicy = corev1.DNSNone }},
	{"dnsPolicy None with a nameserver", func(p *corev1.PodSpec) {
		p.DNSPolicy = corev1.DNSNone
		p.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10"}}
	}},
	{"init container restartPolicy unknown", func(p *corev1.PodSpec) {
		p.InitContainers[0].RestartPolicy = ptr.To[corev1.ContainerRestartPolicy]("Forever")
	}},
	{"port protocol HTTP", func(p *corev1.PodSpec) { p.Containers[0].Ports[0].Protocol = "HTTP" }},
	{"containerPort out of range", func(p *corev1.PodSpec) { p.Containers[1].Ports[0].ContainerPort = 80800 }},
	{"hostPort out of range", func(p *corev1.PodSpec) { p.Containers[1].Ports[0].HostPort = 70000 }},
	{"port name with an underscore", func(p *corev1.PodSpec) { p.Containers[0].Ports[1].Name = "metrics_port" }},
	{"port name only digits", func(p *corev1.PodSpec) { p.Containers[0].Ports[1].Name = "9090" }},
	{"port names repeated", func(p *corev1.PodSpec) { p.Containers[0].Ports[1].Name = "http" }},
	{"host port twice", func(p *corev1.PodSpec) {
		p.Containers[0].Ports = append(p.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 8081, HostPort: 8080})
	}},
	{"env name with =", func(p *corev1.PodSpec) { p.Containers[0].Env[1].Name = "A=B" }},
	{"env name empty", func(p *corev1.PodSpec) { p.Containers[0].Env[0].Name = "" }},
	{"volume name uppercase", func(p *corev1.PodSpec) { p.Volumes[0].Name = "Shm" }},
	{"volume names repeated", func(p *corev1.PodSpec) { p.Volumes[1].Name = "shm" }},
	{"mount of no volume", func(p *corev1.PodSpec) { p.Containers[0].VolumeMounts[1].Name = "cache" }},
	{"mountPath empty", func(p *corev1.PodSpec) { p.InitContainers[0].VolumeMounts[0].MountPath = "" }},
	{"mountPath twice", func(p *corev1.PodSpec) { p.Containers[0].VolumeMounts[1].MountPath = "/dev/shm" }},
	{"probe without a handler", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.HTTPGet = nil }},
	{"probe with two handlers", func(p *corev1.PodSpec) {
		p.Containers[0].LivenessProbe.Exec = &corev1.ExecAction{Command: []string{"true"}}
	}},
	{"exec probe without a command", func(p *corev1.PodSpec) { p.InitContainers[0].ReadinessProbe.Exec.Command = nil }},
	{"negative failureThreshold", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.FailureThreshold = -3 }},
	{"negative initialDelaySeconds", func(p *corev1.PodSpec) { p.Containers[0].StartupProbe.InitialDelaySeconds = -1 }},
	{"liveness successThreshold 2", func(p *corev1.PodSpec) { p.Containers[0].LivenessProbe.SuccessThreshold = 2 }},
	{"readiness successThreshold 2", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.SuccessThreshold = 2 }},
	{"readiness probe grace period", func(p *corev1.PodSpec) {
		p.Containers[0].ReadinessProbe.TerminationGracePeriodSeconds = ptr.To[int64](10)
	}},
	{"liveness probe grace period 0", func(p *corev1.PodSpec) {
		p.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = ptr.To[int64](0)
	}},
	{"probe port 0", func(p *corev1.PodSpec) { p.Containers[0].LivenessProbe.TCPSocket.Port = intstr.FromInt32(0) }},
	{"probe port as a string of digits", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("8000") }},
	{"probe scheme FTP", func(p *corev1.PodSpec) { p.Containers[0].StartupProbe.HTTPGet.Scheme = "FTP" }},
	{"probe header name with a space", func(p *corev1.PodSpec) {
		p.Containers[0].StartupProbe.HTTPGet.HTTPHeaders = []corev1.HTTPHeader{{Name: "X Probe", Value: "1"}}
	}},
	{"grpc probe port out of range", func(p *corev1.PodSpec) {
		p.Containers[0].LivenessProbe.TCPSocket = nil
		p.Containers[0].LivenessProbe.GRPC = &corev1.GRPCAction{Port: 70000}
	}},
	{"preStop without a handler", func(p *corev1.PodSpec) { p.Containers[0].Lifecycle.PreStop.Sleep = nil }},
	{"init container probe without restartPolicy Always", func(p *corev1.PodSpec) { p.InitContainers[0].RestartPolicy = nil }},
	{"memory request above its limit", func(p *corev1.PodSpec) {
		p.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Gi")
	}},
	{"negative cpu request", func(p *corev1.PodSpec) {
		p.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("-1")
	}},
	{"half an extended resource", func(p *corev1.PodSpec) {
		p.Containers[0].Resources.Limits["example.com/rdma"] = resource.MustParse("500m")
		p.Containers[0].Resources.Requests["example.com/rdma"] = resource.MustParse("500m")
	}},
	{"extended request below its limit", func(p *corev1.PodSpec) {
		p.Containers[0].Resources.Limits["example.com/rdma"] = resource.MustParse("2")
	}},
	{"extended request without a limit", func(p *corev1.PodSpec) { delete(p.Containers[0].Resources.Limits, "example.com/rdma") }},
	{"GPU request without a limit", func(p *corev1.PodSpec) {
		delete(p.Containers[0].Resources.Limits, "nvidia.com/gpu")
		p.Containers[0].Resources.Requests["nvidia.com/gpu"] = resource.MustParse("1")
	}},
	{"unqualified resource name", func(p *corev1.PodSpec) {
		p.Containers[1].Resources.Limits = corev1.ResourceList{"gpu": resource.MustParse("1")}
	}},
	{"quota resource name on a container", func(p *corev1.PodSpec) {
		p.Containers[1].Resources.Limits = corev1.ResourceList{"pods": resource.MustParse("1")}
	}},
	{"huge pages alone", func(p *corev1.PodSpec) {
		p.Containers[1].Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}
	}},
	{"nodeSelector key with a space", func(p *corev1.PodSpec) { p.NodeSelector = map[string]string{"gpu type": "h100"} }},
	{"serviceAccountName with an underscore", func(p *corev1.PodSpec) { p.ServiceAccountName = "model_server" }},
}

// TestPodTemplateRulesAgreeWithTheServer feeds each case to the project's validation and, as the
// template LWS renders, in the StatefulSet the LWS controller makes of it, to the real API server
// (a dry run): both must accept it, or both refuse it at the same fields with the same kinds of
// error (api/podtemplate.go).
func TestPodTemplateRulesAgreeWithTheServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, testCluster.ensureNamespace(ctx, podRulesNamespace))
	docs, errs := api.Decode([]byte(podRulesManifest))
	require.Empty(t, errs)
	tree, verrs := render.Build(docs[0].Service)
	require.Empty(t, verrs)
	var rendered *corev1.PodTemplateSpec
	for _, o := range tree.Objects {
		if lws, ok := o.Object.(*lwsv1.LeaderWorkerSet); ok {
			rendered = &lws.Spec.LeaderWorkerTemplate.WorkerTemplate
		}
	}
	require.NotNil(t, rendered)
	statefulSets := testCluster.client.Resource(appsv1.SchemeGroupVersion.WithResource("statefulsets")).Namespace(podRulesNamespace)
	refused := 0
	for _, tc := range podRuleCases {
		t.Run(tc.name, func(t *testing.T) {
			fresh, _ := api.Decode([]byte(podRulesManifest))
			svc := fresh[0].Service
			tc.mutate(&svc.Spec.Roles[0].Template.Spec)
			ours := verdictOf(api.Validate(svc), "spec.roles[0].template.")

			template := rendered.DeepCopy()
			tc.mutate(&template.Spec)
			template.Labels = map[string]string{"conformance": "pod-rules"}
			sts := &appsv1.StatefulSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
				ObjectMeta: metav1.ObjectMeta{Name: "pod-rules", Namespace: podRulesNamespace},
				Spec: appsv1.StatefulSetSpec{ServiceName: "pod-rules", Template: *template,
					Selector: &metav1.LabelSelector{MatchLabels: template.Labels}},
			}
			_, err := statefulSets.Create(ctx, mustUnstructured(t, sts), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			var status *apierrors.StatusError
			if err != nil && !errors.As(err, &status) {
				require.NoError(t, err)
			}
			servers := verdictOfStatus(status, "spec.template.")
			assert.Equal(t, servers, ours, "the API server (%v) and the project (%v) agree", err, api.Validate(svc))
			if len(servers) > 0 {
				refused++
			}
		})
	}
	progress("%d pod templates, %d refused by both", len(podRuleCases), refused)
	assert.Greater(t, refused, len(podRuleCases)/2, "the cases exercise the rules")
}

// verdictOf is a refusal's fields, relative to the template, each with its kind of error
// ("FieldValueDuplicate spec.containers[1].name"); nothing for an acceptance. Errors outside
// the template (none are expected) keep their whole path, so they show.
func verdictOf(errs field.ErrorList, prefix string) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(metav1.CauseType(e.Type))+" "+strings.TrimPrefix(e.Field, prefix))
	}
	return sortedUnique(out)
}

func verdictOfStatus(status *apierrors.StatusError, prefix string) []string {
	if status == nil {
		return nil
	}
	var out []string
	if status.ErrStatus.Details != nil {
		for _, c := range status.ErrStatus.Details.Causes {
			out = append(out, string(c.Type)+" "+strings.TrimPrefix(c.Field, prefix))
		}
	}
	if len(out) == 0 {
		out = append(out, status.Error())
	}
	return sortedUnique(out)
}

// sortedUnique: the server may refuse one field twice (a restartPolicy both unknown and not Always).
func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
