// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// podRulesService is story 1 with a template that uses what the pod rules check, each field
// valid: a sidecar, a restartable init container with a probe, named ports, probes of every kind,
// volumes and mounts, environment variables in the relaxed form, requests below limits.
func podRulesService() *InferenceService {
	probe := func(handler corev1.ProbeHandler) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 5, FailureThreshold: 3}
	}
	return &InferenceService{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "qwen"},
		Spec: InferenceServiceSpec{Roles: []Role{{Name: "inference", ComponentType: ComponentTypeWorker,
			Template: &corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyAlways,
				DNSPolicy:     corev1.DNSClusterFirst,
				Volumes: []corev1.Volume{
					{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					{Name: "scratch"},
				},
				InitContainers: []corev1.Container{{
					Name: "log-shipper", Image: "busybox:1.37", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					ReadinessProbe: probe(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}),
					VolumeMounts:   []corev1.VolumeMount{{Name: "scratch", MountPath: "/logs"}},
				}},
				Containers: []corev1.Container{
					{
						Name: "vllm", Image: "vllm/vllm-openai:v0.33.0", ImagePullPolicy: corev1.PullIfNotPresent,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Args:                     []string{"--model", "Qwen/Qwen3-8B"},
						Ports: []corev1.ContainerPort{
							{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP},
							{Name: "metrics-2", ContainerPort: 9090},
						},
						Env: []corev1.EnvVar{{Name: "HF_HOME", Value: "/cache"}, {Name: "my.setting-1", Value: "x"}},
						Resources: corev1.ResourceRequirements{
							Limits: corev1.ResourceList{GPUResourceName: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("64Gi"),
								"example.com/rdma": resource.MustParse("1")},
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("32Gi"),
								"example.com/rdma": resource.MustParse("1")},
						},
						VolumeMounts:   []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}, {Name: "scratch", MountPath: "/scratch"}},
						ReadinessProbe: probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}),
						LivenessProbe:  probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8000)}}),
						StartupProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
							Path: "/health", Port: intstr.FromInt32(8000), Scheme: corev1.URISchemeHTTP,
							HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "startup"}},
						}}, FailureThreshold: 360, SuccessThreshold: 1},
						Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}},
					},
					{Name: "metrics-proxy", Image: "nginx:1.29", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 8080}}},
				},
			}},
		}}},
	}
}

func TestPodRulesServicePasses(t *testing.T) {
	assert.Empty(t, Validate(podRulesService()))
}

// TestPodTemplateRules: one row per rule of the API server's validation of a pod template that
// the project mirrors (podtemplate.go), each refused at its field with Kubernetes' own words.
func TestPodTemplateRules(t *testing.T) {
	const spec = "spec.roles[0].template.spec."
	cases := []struct {
		name   string
		mutate func(p *corev1.PodSpec)
		want   string
	}{
		// Names.
		{"container name is a DNS label", func(p *corev1.PodSpec) { p.Containers[0].Name = "VLLM_Server" },
			spec + `containers[0].name: Invalid value: "VLLM_Server": a lowercase RFC 1123 label`},
		{"container name required", func(p *corev1.PodSpec) { p.Containers[1].Name = "" }, spec + "containers[1].name: Required value"},
		{"container names unique", func(p *corev1.PodSpec) { p.Containers[1].Name = "vllm" }, spec + `containers[1].name: Duplicate value: "vllm"`},
		{"init container names unique among containers", func(p *corev1.PodSpec) { p.InitContainers[0].Name = "metrics-proxy" },
			spec + `initContainers[0].name: Duplicate value: "metrics-proxy"`},
		{"init container name is a DNS label", func(p *corev1.PodSpec) { p.InitContainers[0].Name = "log.shipper" },
			spec + `initContainers[0].name: Invalid value: "log.shipper"`},
		{"volume name is a DNS label", func(p *corev1.PodSpec) { p.Volumes[0].Name = "Shm" }, spec + `volumes[0].name: Invalid value: "Shm"`},
		{"volume names unique", func(p *corev1.PodSpec) { p.Volumes[1].Name = "shm" }, spec + `volumes[1].name: Duplicate value: "shm"`},
		// Images.
		{"a sidecar's image required", func(p *corev1.PodSpec) { p.Containers[1].Image = "" }, spec + "containers[1].image: Required value"},
		{"an init container's image required", func(p *corev1.PodSpec) { p.InitContainers[0].Image = "" }, spec + "initContainers[0].image: Required value"},
		// Enumerations.
		{"imagePullPolicy known", func(p *corev1.PodSpec) { p.Containers[0].ImagePullPolicy = "Sometimes" },
			spec + `containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`},
		{"terminationMessagePolicy known", func(p *corev1.PodSpec) { p.Containers[1].TerminationMessagePolicy = "Logs" },
			spec + `containers[1].terminationMessagePolicy: Unsupported value: "Logs": supported values: "File", "FallbackToLogsOnError"`},
		{"restartPolicy Always (LWS makes StatefulSets)", func(p *corev1.PodSpec) { p.RestartPolicy = corev1.RestartPolicyOnFailure },
			spec + `restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`},
		{"restartPolicy known", func(p *corev1.PodSpec) { p.RestartPolicy = "Sometimes" },
			spec + `restartPolicy: Unsupported value: "Sometimes": supported values: "Always"`},
		{"activeDeadlineSeconds not in a StatefulSet", func(p *corev1.PodSpec) { p.ActiveDeadlineSeconds = ptr.To[int64](600) },
			spec + "activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"},
		{"dnsPolicy known", func(p *corev1.PodSpec) { p.DNSPolicy = "ClusterOnly" },
			spec + `dnsPolicy: Unsupported value: "ClusterOnly": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`},
		{"dnsPolicy None needs a dnsConfig", func(p *corev1.PodSpec) { p.DNSPolicy = corev1.DNSNone },
			spec + "dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"},
		{"container restartPolicy known", func(p *corev1.PodSpec) {
			p.InitContainers[0].RestartPolicy = ptr.To[corev1.ContainerRestartPolicy]("Forever")
		},
			spec + `initContainers[0].restartPolicy: Unsupported value: "Forever": supported values: "Always", "Never", "OnFailure"`},
		{"port protocol known", func(p *corev1.PodSpec) { p.Containers[0].Ports[0].Protocol = "HTTP" },
			spec + `containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`},
		// Ports.
		{"containerPort in range", func(p *corev1.PodSpec) { p.Containers[1].Ports[0].ContainerPort = 80800 },
			spec + "containers[1].ports[0].containerPort: Invalid value: 80800: must be between 1 and 65535, inclusive"},
		{"hostPort in range", func(p *corev1.PodSpec) { p.Containers[1].Ports[0].HostPort = -1 },
			spec + "containers[1].ports[0].hostPort: Invalid value: -1: must be between 1 and 65535, inclusive"},
		{"port name is an IANA service name", func(p *corev1.PodSpec) { p.Containers[0].Ports[1].Name = "metrics_port" },
			spec + `containers[0].ports[1].name: Invalid value: "metrics_port"`},
		{"port names unique in a container", func(p *corev1.PodSpec) { p.Containers[0].Ports[1].Name = "http" },
			spec + `containers[0].ports[1].name: Duplicate value: "http"`},
		{"host ports unique in the pod", func(p *corev1.PodSpec) {
			p.Containers[0].Ports = append(p.Containers[0].Ports, corev1.ContainerPort{ContainerPort: 8081, HostPort: 8080})
		}, spec + `containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"`},
		// Environment.
		{"env name required", func(p *corev1.PodSpec) { p.Containers[0].Env[0].Name = "" }, spec + "containers[0].env[0].name: Required value"},
		{"env name has no =", func(p *corev1.PodSpec) { p.Containers[0].Env[1].Name = "A=B" },
			spec + `containers[0].env[1].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='`},
		// Volume mounts.
		{"mount of a volume that exists", func(p *corev1.PodSpec) { p.Containers[0].VolumeMounts[1].Name = "cache" },
			spec + `containers[0].volumeMounts[1].name: Not found: "cache"`},
		{"mount of an invalid volume", func(p *corev1.PodSpec) {
			p.Volumes[1].Name = "Scratch"
			p.Containers[0].VolumeMounts[1].Name = "Scratch"
		}, spec + `containers[0].volumeMounts[1].name: Not found: "Scratch"`},
		{"mountPath required", func(p *corev1.PodSpec) { p.InitContainers[0].VolumeMounts[0].MountPath = "" },
			spec + "initContainers[0].volumeMounts[0].mountPath: Required value"},
		{"mountPaths unique", func(p *corev1.PodSpec) { p.Containers[0].VolumeMounts[1].MountPath = "/dev/shm" },
			spec + `containers[0].volumeMounts[1].mountPath: Invalid value: "/dev/shm": must be unique`},
		// Probes and lifecycle handlers.
		{"probe has a handler", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.HTTPGet = nil },
			spec + "containers[0].readinessProbe: Required value: must specify a handler type"},
		{"probe has one handler", func(p *corev1.PodSpec) {
			p.Containers[0].LivenessProbe.Exec = &corev1.ExecAction{Command: []string{"true"}}
		}, spec + "containers[0].livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"},
		{"exec probe has a command", func(p *corev1.PodSpec) { p.InitContainers[0].ReadinessProbe.Exec.Command = nil },
			spec + "initContainers[0].readinessProbe.exec.command: Required value"},
		{"probe thresholds not negative", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.FailureThreshold = -3 },
			spec + "containers[0].readinessProbe.failureThreshold: Invalid value: -3: must be greater than or equal to 0"},
		{"probe periods not negative", func(p *corev1.PodSpec) { p.Containers[0].StartupProbe.InitialDelaySeconds = -1 },
			spec + "containers[0].startupProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0"},
		{"liveness successThreshold 1", func(p *corev1.PodSpec) { p.Containers[0].LivenessProbe.SuccessThreshold = 2 },
			spec + "containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"},
		{"startup successThreshold 1", func(p *corev1.PodSpec) { p.Containers[0].StartupProbe.SuccessThreshold = 3 },
			spec + "containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1"},
		{"readiness probe has no grace period", func(p *corev1.PodSpec) {
			p.Containers[0].ReadinessProbe.TerminationGracePeriodSeconds = ptr.To[int64](10)
		},
			spec + "containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes"},
		{"probe grace period positive", func(p *corev1.PodSpec) {
			p.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = ptr.To[int64](0)
		},
			spec + "containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0"},
		{"probe port number in range", func(p *corev1.PodSpec) { p.Containers[0].LivenessProbe.TCPSocket.Port = intstr.FromInt32(0) },
			spec + "containers[0].livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive"},
		{"probe port name is an IANA service name", func(p *corev1.PodSpec) { p.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("8000") },
			spec + `containers[0].readinessProbe.httpGet.port: Invalid value: "8000": must contain at least one letter (a-z)`},
		{"probe scheme known", func(p *corev1.PodSpec) { p.Containers[0].StartupProbe.HTTPGet.Scheme = "FTP" },
			spec + `containers[0].startupProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`},
		{"probe header names", func(p *corev1.PodSpec) { p.Containers[0].StartupProbe.HTTPGet.HTTPHeaders[0].Name = "X Probe" },
			spec + `containers[0].startupProbe.httpGet.httpHeaders: Invalid value: "X Probe"`},
		{"grpc probe port in range", func(p *corev1.PodSpec) {
			p.Containers[0].LivenessProbe.TCPSocket = nil
			p.Containers[0].LivenessProbe.GRPC = &corev1.GRPCAction{Port: 70000}
		}, spec + "containers[0].livenessProbe.grpc.port: Invalid value: 70000: must be between 1 and 65535, inclusive"},
		{"lifecycle handler has one handler", func(p *corev1.PodSpec) { p.Containers[0].Lifecycle.PreStop.Sleep = nil },
			spec + "containers[0].lifecycle.preStop: Required value: must specify a handler type"},
		{"init container probes need restartPolicy Always", func(p *corev1.PodSpec) { p.InitContainers[0].RestartPolicy = nil },
			spec + "initContainers[0].readinessProbe: Forbidden: may not be set for init containers without restartPolicy=Always"},
		{"ephemeral containers not in a template", func(p *corev1.PodSpec) {
			p.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}, spec + "ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"},
		// Resources.
		{"request <= limit", func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("128Gi")
		},
			spec + `containers[0].resources.requests: Invalid value: "128Gi": must be less than or equal to memory limit of 64Gi`},
		{"quantity not negative", func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("-1")
		},
			spec + `containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0`},
		{"extended resource whole", func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Limits["example.com/rdma"] = resource.MustParse("500m")
			p.Containers[0].Resources.Requests["example.com/rdma"] = resource.MustParse("500m")
		}, spec + `containers[0].resources.limits[example.com/rdma]: Invalid value: "500m": must be an integer`},
		{"extended request equals its limit", func(p *corev1.PodSpec) {
			p.Containers[0].Resources.Limits["example.com/rdma"] = resource.MustParse("2")
		},
			spec + `containers[0].resources.requests: Invalid value: "1": must be equal to example.com/rdma limit of 2`},
		{"extended request has a limit", func(p *corev1.PodSpec) { delete(p.Containers[0].Resources.Limits, "example.com/rdma") },
			spec + "containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"},
		{"resource name standard or qualified", func(p *corev1.PodSpec) {
			p.Containers[1].Resources.Limits = corev1.ResourceList{"gpu": resource.MustParse("1")}
		},
			spec + `containers[1].resources.limits[gpu]: Invalid value: "gpu": must be a standard resource for containers`},
		{"resource name a qualified name", func(p *corev1.PodSpec) {
			p.Containers[1].Resources.Limits = corev1.ResourceList{"example.com/rd ma": resource.MustParse("1")}
		},
			spec + `containers[1].resources.limits[example.com/rd ma]: Invalid value: "example.com/rd ma"`},
		{"hugepages need cpu or memory", func(p *corev1.PodSpec) {
			p.Containers[1].Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("2Mi")}
		}, spec + "containers[1].resources: Forbidden: HugePages require cpu or memory"},
		// Other names.
		{"nodeSelector labels", func(p *corev1.PodSpec) { p.NodeSelector = map[string]string{"gpu type": "h100"} },
			spec + `nodeSelector: Invalid value: "gpu type"`},
		{"serviceAccountName a DNS subdomain", func(p *corev1.PodSpec) { p.ServiceAccountName = "Model_Server" },
			spec + `serviceAccountName: Invalid value: "Model_Server"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRefused(t, podRulesService, func(s *InferenceService) { tc.mutate(&s.Spec.Roles[0].Template.Spec) }, tc.want)
		})
	}
}

// TestNameErrorsHaveNoRegexp: apimachinery's name checks end their messages with the regular
// expression they use; the user is told the rule and an example, not the regexp.
func TestNameErrorsHaveNoRegexp(t *testing.T) {
	svc := podRulesService()
	svc.Spec.Roles[0].Name = "Inference"
	svc.Spec.Roles[0].Template.Spec.Containers[0].Name = "VLLM_Server"
	svc.Spec.Roles[0].Template.Spec.Containers[0].Ports[1].Name = "metrics_port"
	errs := Validate(svc)
	assert.Len(t, errs, 3)
	for _, e := range errs {
		assert.NotContains(t, e.Error(), "regex")
		assert.NotContains(t, e.Error(), "[a-z0-9]")
	}
	assert.Contains(t, errs.ToAggregate().Error(), `containers[0].name: Invalid value: "VLLM_Server": a lowercase RFC 1123 label must consist of `+
		`lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc')`)
}
