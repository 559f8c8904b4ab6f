// SPDX-License-Identifier: Apache-2.0

package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	inferencev1alpha2 "sigs.k8s.io/gateway-api-inference-extension/apix/v1alpha2"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/api/eppconfig"
)

// Kinds of a router's objects.
var (
	KindServiceAccount        = TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}
	KindRole                  = TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"}
	KindRoleBinding           = TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"}
	KindConfigMap             = TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
	KindDeployment            = TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"}
	KindService               = TypeMeta{APIVersion: "v1", Kind: "Service"}
	KindInferencePool         = TypeMeta{APIVersion: inferencev1.GroupVersion.String(), Kind: "InferencePool"}
	KindInferencePoolV1Alpha2 = TypeMeta{APIVersion: inferencev1alpha2.GroupVersion.String(), Kind: "InferencePool"}
	KindHTTPRoute             = TypeMeta{APIVersion: gatewayv1.GroupVersion.String(), Kind: "HTTPRoute"}
)

// Suffixes of a router's objects (Pulumi names children "{component}-{suffix}").
const (
	suffixEPPServiceAccount = "epp-serviceaccount"
	suffixEPPRole           = "epp-role"
	suffixEPPRoleBinding    = "epp-rolebinding"
	// The picker's metrics auth (routerauth.go).
	suffixEPPAuthClusterRole        = "epp-auth-clusterrole"
	suffixEPPAuthClusterRoleBinding = "epp-auth-clusterrolebinding"
	suffixEPPMetricsToken           = "epp-metrics-token"
	suffixEPPConfig                 = "epp-config"
	suffixEPPDeployment             = "epp-deployment"
	suffixEPPService                = "epp-service"
	suffixPool                      = "pool"
	suffixShadowService             = "shadow-service"
	suffixHTTPRoute                 = "httproute"
)

// The Endpoint Picker's ports and files, as the upstream inferencepool chart sets them.
const (
	eppGRPCPort         = 9002
	eppGRPCHealthPort   = 9003
	eppMetricsPort      = 9090
	eppMetricsPortName  = "metrics"
	eppConfigMountPath  = "/config"
	eppConfigFile       = "config.yaml"
	eppContainerName    = "epp"
	eppConfigVolume     = "epp-config"
	eppTmpVolume        = "tmp"
	eppTerminationGrace = 130 // the chart's: as long as the longest grace period of the pool's pods
	eppNonRootUser      = 65532
	routeRequestTimeout = 300 * time.Second // what the Inference Extension's example routes give a generation
	annotationEPPConfig = api.ReservedLabelPrefix + "epp-config-hash"
	// annotationWatchedGroup: the API group the Endpoint Picker must find its objectives in when it
	// starts, where that depends on the cluster (eppconfig.Release.ChoosesGroup): it looks once,
	// so endpointPicker.crdGroups changed (or its default, as in release 0.5.0) restarts it.
	annotationWatchedGroup = api.ReservedLabelPrefix + "watched-crd-group"
	inferencePoolKind      = "InferencePool"
	// waitForOneReady: a Deployment is up once a pod is ready. readyReplicas is absent while none
	// is, and pulumi-kubernetes' jsonpath wait with no value waits for the field to be there
	// (provider/pkg/jsonpath). Not "=1": a standby that reports ready too (kwok runs no probes, in
	// make e2e, where "=1" waited forever with two replicas) must not hold the wait.
	waitForOneReady = "jsonpath={.status.readyReplicas}"
)

// routerRefs lay out a router's objects but its HTTPRoute. The Endpoint Picker starts once its
// account, permissions and configuration exist, and the rollout batch before it (after) is up.
func routerRefs(svc *api.InferenceService, after []string) []Ref {
	router := svc.Spec.Router()
	if router == nil {
		return nil
	}
	eppName := api.EndpointPickerName(svc.Name)
	poolKind := KindInferencePool
	if router.PoolAPIVersion == api.PoolV1Alpha2 {
		poolKind = KindInferencePoolV1Alpha2
	}
	// The Deployment and its Service (whose endpoints pulumi-kubernetes waits for) are awaited
	// unless nothing is.
	release := router.EndpointPickerRelease()
	needs := []string{suffixEPPRoleBinding}
	if release.MetricsAuth() {
		needs = append(needs, suffixEPPAuthClusterRoleBinding)
	}
	if release.ReadsConfig() {
		needs = append(needs, suffixEPPConfig)
	}
	if router.Standalone() {
		needs = append(needs, suffixRouterProxyConfig)
	}
	deployment := routerRef(svc, KindDeployment, eppName, suffixEPPDeployment, append(needs, after...)...)
	deployment.Awaited = svc.Spec.AwaitMode() != api.AwaitNone
	service := routerRef(svc, KindService, eppName, suffixEPPService)
	service.Awaited = deployment.Awaited
	refs := []Ref{
		routerRef(svc, KindServiceAccount, eppName, suffixEPPServiceAccount),
		routerRef(svc, KindRole, eppName, suffixEPPRole),
		routerRef(svc, KindRoleBinding, eppName, suffixEPPRoleBinding, suffixEPPServiceAccount, suffixEPPRole),
	}
	refs = append(refs, metricsAuthRefs(svc, release)...)
	if release.ReadsConfig() { // lwepp reads none
		refs = append(refs, routerRef(svc, KindConfigMap, api.EndpointPickerConfigName(svc.Name), suffixEPPConfig))
	}
	if router.Standalone() {
		refs = append(refs, standaloneRefs(svc)...)
	}
	refs = append(refs, deployment, service, routerRef(svc, poolKind, api.PoolName(svc.Name), suffixPool))
	refs = append(refs, endpointPickerHARefs(svc)...)
	if router.ShadowService {
		refs = append(refs, routerRef(svc, KindService, api.ShadowServiceName(svc.Name), suffixShadowService))
	}
	if group, watched := router.ModelRewriteGroup(); watched { // validation refuses splits otherwise
		for _, split := range adapterSplits(svc) {
			refs = append(refs, routerRef(svc, KindInferenceModelRewrite(group), split.name, split.suffix, suffixPool))
		}
	}
	return refs
}

// entranceRefs are where the router's requests enter, last: they attach traffic once the pool, its
// Endpoint Picker and every awaited replica are up. In gateway mode the HTTPRoute; standalone, the
// Service in front of the picker's proxy.
func entranceRefs(svc *api.InferenceService, awaitedLeaderWorkerSets []string) []Ref {
	router := svc.Spec.Router()
	if router == nil {
		return nil
	}
	dependsOn := append([]string{suffixPool, suffixEPPDeployment}, awaitedLeaderWorkerSets...)
	if router.Standalone() {
		return []Ref{routerServiceRef(svc, dependsOn)}
	}
	return []Ref{routerRef(svc, KindHTTPRoute, api.HTTPRouteName(svc.Name), suffixHTTPRoute, dependsOn...)}
}

func routerRef(svc *api.InferenceService, kind TypeMeta, name, suffix string, dependsOn ...string) Ref {
	return Ref{TypeMeta: kind, Name: name, Namespace: svc.Namespace, Suffix: suffix, Role: svc.Spec.Router().Name, DependsOn: dependsOn}
}

// routing builds a router's objects from what validation resolved of its fields (api.Routing:
// the Endpoint Picker's selection, the route, the pool's port), never parsing them again.
type routing struct {
	svc    *api.InferenceService
	router *api.Role
	api.Routing
	// configText is the Endpoint Picker's configuration file.
	configText string
	// models are the service's models, by owner (the tokenizer serves the pool's).
	models map[string]*api.ResolvedModel
}

func newRouting(svc *api.InferenceService, resolved *api.Resolved) (*routing, error) {
	router := svc.Spec.Router()
	if router == nil || resolved.Routing == nil {
		return nil, nil
	}
	text, err := resolved.Routing.Selection.Text()
	if err != nil {
		return nil, fmt.Errorf("the Endpoint Picker's configuration: %w", err)
	}
	return &routing{svc: svc, router: router, Routing: *resolved.Routing, configText: text, models: resolved.Models}, nil
}

func (r *routing) object(ref Ref) (runtime.Object, error) {
	if ref.Kind == eppconfig.KindModelRewrite {
		return r.modelRewrite(ref)
	}
	switch ref.Suffix {
	case suffixEPPServiceAccount:
		return &corev1.ServiceAccount{TypeMeta: typeMeta(KindServiceAccount), ObjectMeta: r.meta(ref)}, nil
	case suffixEPPRole:
		return &rbacv1.Role{TypeMeta: typeMeta(KindRole), ObjectMeta: r.meta(ref), Rules: r.rules()}, nil
	case suffixEPPRoleBinding:
		return r.roleBinding(ref), nil
	case suffixEPPAuthClusterRole, suffixEPPAuthClusterRoleBinding, suffixEPPMetricsToken:
		return r.metricsAuthObject(ref), nil
	case suffixEPPConfig:
		return &corev1.ConfigMap{TypeMeta: typeMeta(KindConfigMap), ObjectMeta: r.meta(ref), Data: map[string]string{eppConfigFile: r.configText}}, nil
	case suffixEPPDeployment:
		return r.deployment(ref)
	case suffixEPPService:
		return r.eppService(ref), nil
	case suffixEPPDisruptionBudget:
		return r.disruptionBudget(ref), nil
	case suffixPool:
		return r.pool(ref), nil
	case suffixShadowService:
		return r.shadowService(ref), nil
	case suffixHTTPRoute:
		return r.httpRoute(ref), nil
	case suffixRouterProxyConfig:
		return r.proxyConfigMap(ref)
	case suffixRouterService:
		return r.routerService(ref), nil
	case suffixSidecarServiceAccount:
		return &corev1.ServiceAccount{TypeMeta: typeMeta(KindServiceAccount), ObjectMeta: r.meta(ref)}, nil
	case suffixSidecarRole:
		return &rbacv1.Role{TypeMeta: typeMeta(KindRole), ObjectMeta: r.meta(ref), Rules: r.sidecarRules()}, nil
	case suffixSidecarRoleBinding:
		return r.sidecarRoleBinding(ref), nil
	case suffixTokenizerDeployment:
		return r.tokenizerDeployment(ref), nil
	case suffixTokenizerService:
		return r.tokenizerService(ref), nil
	}
	return nil, fmt.Errorf("no router object has the suffix %q", ref.Suffix)
}

func typeMeta(t TypeMeta) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: t.APIVersion, Kind: t.Kind}
}

func (r *routing) meta(ref Ref) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: r.labels()}
}

// labels of every router object and of the Endpoint Picker's pods.
func (r *routing) labels() map[string]string {
	return merged(serviceObjectLabels(r.svc), roleLabels(r.svc.Name, r.router))
}

// eppSelector selects the Endpoint Picker's pods.
func (r *routing) eppSelector() map[string]string {
	return map[string]string{LabelService: r.svc.Name, LabelRoleName: r.router.Name}
}

// poolSelector selects the pods of the service that run a model server: the leader of every
// replica (a multi-node replica's workers only join its Ray cluster) and, for a dual-pods role,
// the server-running pods FMA makes while they are awake, never their requesters nor a sleeping
// standby.
func (r *routing) poolSelector() map[string]string {
	return merged(map[string]string{LabelService: r.svc.Name}, servingLabels(&r.svc.Spec))
}

// servingLabels are the labels of a pod that serves model traffic. With dual pods in the service,
// the pool selects only awake servers (LabelDualPodsSleeping "false", which FMA sets on its
// server-running pods), so the service's other serving pods carry "false" too: FMA's admission
// policy guards only its dual and launcher labels (third_party/fma fma-immutable-fields.yaml).
func servingLabels(spec *api.InferenceServiceSpec) map[string]string {
	if spec.HasDualPods() {
		return map[string]string{LabelServing: "true", LabelDualPodsSleeping: "false"}
	}
	return map[string]string{LabelServing: "true"}
}

// InPool reports whether a pod with these labels is one a router's pool selects (of its service):
// it serves a model and is not a sleeping standby.
func InPool(podLabels map[string]string) bool {
	return podLabels[LabelServing] == "true" && podLabels[LabelDualPodsSleeping] != "true"
}

// markServing labels a template whose pods serve model traffic (not a dual-pods requester's: FMA's
// server patch labels the pods it makes).
func markServing(tpl *corev1.PodTemplateSpec, spec *api.InferenceServiceSpec) {
	tpl.Labels = merged(tpl.Labels, servingLabels(spec))
}

// release is the Endpoint Picker release the router targets.
func (r *routing) release() eppconfig.Release { return r.Selection.Release }

// leaderElection: the Endpoint Picker's replicas elect one (api.Role.EndpointPickerLeaderElection).
func (r *routing) leaderElection() bool { return r.router.EndpointPickerLeaderElection() }

// rules are the Endpoint Picker's least privilege: read its own pool (the EPP lists and watches
// it by name), the namespace's pods and the objectives (and model rewrites) its release watches,
// in the API groups it looks for them in; a lease of its own and events when several replicas
// elect a leader.
func (r *routing) rules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{r.router.PoolGroup()}, Resources: []string{"inferencepools"}, ResourceNames: []string{api.PoolName(r.svc.Name)}, Verbs: read},
	}
	if groups, rewrites := r.release().ObjectiveGroups(); len(groups) > 0 {
		resources := []string{eppconfig.ResourceObjectives}
		if rewrites {
			resources = append(resources, eppconfig.ResourceModelRewrites)
		}
		rules = append(rules, rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: read})
	}
	rules = append(rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read})
	if r.leaderElection() {
		lease := r.release().LeaseName(r.svc.Namespace, api.PoolName(r.svc.Name))
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{lease},
				Verbs: []string{"get", "update", "patch"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		)
	}
	return rules
}

func (r *routing) roleBinding(ref Ref) *rbacv1.RoleBinding {
	name := api.EndpointPickerName(r.svc.Name)
	return &rbacv1.RoleBinding{
		TypeMeta:   typeMeta(KindRoleBinding),
		ObjectMeta: r.meta(ref),
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: r.svc.Namespace}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: KindRole.Kind, Name: name},
	}
}

// deployment is the Endpoint Picker, as the upstream inferencepool chart deploys it: one active
// replica (Recreate, so an old leader never blocks the new one; a standalone router's pickers,
// all active, roll with a surge: rollingDoor), gRPC health probes, its metrics
// behind token review where the release has it (routerauth.go), a non-root read-only container.
// In standalone mode the pod runs the router's proxy beside the picker (standalone.go).
func (r *routing) deployment(ref Ref) (*appsv1.Deployment, error) {
	labels := r.labels()
	// The root filesystem is read-only; plugins that cache (tokenizers) write in /tmp.
	mounts := []corev1.VolumeMount{{Name: eppTmpVolume, MountPath: "/tmp"}}
	volumes := []corev1.Volume{{Name: eppTmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	var podAnnotations map[string]string
	if r.release().ReadsConfig() {
		mounts = append([]corev1.VolumeMount{{Name: eppConfigVolume, MountPath: eppConfigMountPath, ReadOnly: true}}, mounts...)
		volumes = append([]corev1.Volume{{Name: eppConfigVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: api.EndpointPickerConfigName(r.svc.Name)}},
		}}}, volumes...)
		// A new configuration restarts the Endpoint Picker, which reads it only at start-up.
		configHash := sha256.Sum256([]byte(r.configText))
		podAnnotations = map[string]string{annotationEPPConfig: hex.EncodeToString(configHash[:])[:revisionLength]}
	}
	if r.release().ChoosesGroup() {
		if group, watches := r.release().WatchedGroup(eppconfig.KindObjective, r.router.EndpointPickerCRDGroups().Groups()); watches {
			podAnnotations = merged(podAnnotations, map[string]string{annotationWatchedGroup: group})
		}
	}
	args := r.release().Args(eppconfig.Flags{
		PoolName: api.PoolName(r.svc.Name), PoolNamespace: r.svc.Namespace, PoolGroup: r.router.PoolGroup(),
		ConfigFile: eppConfigMountPath + "/" + eppConfigFile,
		GRPCPort:   eppGRPCPort, GRPCHealthPort: eppGRPCHealthPort, MetricsPort: eppMetricsPort,
		LeaderElection: r.leaderElection(),
	})
	liveness, readiness := r.release().HealthServices(r.leaderElection())
	grpcProbe := func(service string) corev1.ProbeHandler {
		return corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: eppGRPCHealthPort, Service: ptr.To(service)}}
	}
	fieldEnv := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	resources := corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("512Mi"),
	}}
	if epp := r.router.EndpointPicker; epp != nil && epp.Resources != nil {
		resources = *epp.Resources.DeepCopy()
	}
	annotations := skipAwaitUnless(ref.Awaited)
	if ref.Awaited && r.leaderElection() {
		// Only the elected leader is ready: pulumi-kubernetes' default wait for every replica
		// would never end.
		annotations = map[string]string{AnnotationPulumiWaitFor: waitForOneReady}
	}
	annotations = merged(annotations, map[string]string{AnnotationEndpointPickerRelease: string(r.release())})
	deployment := &appsv1.Deployment{
		TypeMeta:   typeMeta(KindDeployment),
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(r.router.EndpointPickerReplicas()),
			Selector: &metav1.LabelSelector{MatchLabels: r.eppSelector()},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					ServiceAccountName:            ref.Name,
					PriorityClassName:             r.svc.Spec.PriorityClassName(),
					TerminationGracePeriodSeconds: ptr.To[int64](eppTerminationGrace),
					TopologySpreadConstraints:     r.topologySpread(),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](eppNonRootUser), RunAsGroup: ptr.To[int64](eppNonRootUser),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					Containers: []corev1.Container{{
						Name:            eppContainerName,
						Image:           r.Selection.Image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            args,
						Ports: []corev1.ContainerPort{
							{Name: "grpc", ContainerPort: eppGRPCPort, Protocol: corev1.ProtocolTCP},
							{Name: "grpc-health", ContainerPort: eppGRPCHealthPort, Protocol: corev1.ProtocolTCP},
							{Name: eppMetricsPortName, ContainerPort: eppMetricsPort, Protocol: corev1.ProtocolTCP},
						},
						Env:            []corev1.EnvVar{fieldEnv("NAMESPACE", "metadata.namespace"), fieldEnv("POD_NAME", "metadata.name")},
						LivenessProbe:  &corev1.Probe{ProbeHandler: grpcProbe(liveness), InitialDelaySeconds: 5, PeriodSeconds: 10},
						ReadinessProbe: &corev1.Probe{ProbeHandler: grpcProbe(readiness), PeriodSeconds: 2},
						Resources:      resources,
						VolumeMounts:   mounts,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
					Volumes: volumes,
				},
			},
		},
	}
	if r.router.Standalone() {
		if err := r.addProxy(&deployment.Spec.Template); err != nil {
			return nil, err
		}
		deployment.Spec.Strategy = rollingDoor()
	}
	return deployment, nil
}

func (r *routing) eppService(ref Ref) *corev1.Service {
	return r.pickerPodService(ref,
		corev1.ServicePort{Name: "grpc-ext-proc", Port: eppGRPCPort, TargetPort: intstr.FromInt32(eppGRPCPort), Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "http-metrics", Port: eppMetricsPort, TargetPort: intstr.FromInt32(eppMetricsPort), Protocol: corev1.ProtocolTCP})
}

// pickerPodService is a Service of the Endpoint Picker's pods on ports: the picker's own, or in
// standalone mode its proxy's, which clients call.
func (r *routing) pickerPodService(ref Ref, ports ...corev1.ServicePort) *corev1.Service {
	meta := r.meta(ref)
	meta.Annotations = skipAwaitUnless(ref.Awaited)
	return &corev1.Service{
		TypeMeta:   typeMeta(KindService),
		ObjectMeta: meta,
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: r.eppSelector(), Ports: ports},
	}
}

func (r *routing) pool(ref Ref) runtime.Object {
	eppName := api.EndpointPickerName(r.svc.Name)
	if r.router.PoolAPIVersion == api.PoolV1Alpha2 {
		return &inferencev1alpha2.InferencePool{
			TypeMeta:   typeMeta(KindInferencePoolV1Alpha2),
			ObjectMeta: r.meta(ref),
			Spec: inferencev1alpha2.InferencePoolSpec{
				Selector:         labelMap[inferencev1alpha2.LabelKey, inferencev1alpha2.LabelValue](r.poolSelector()),
				TargetPortNumber: r.PoolPort,
				ExtensionRef: inferencev1alpha2.Extension{
					Kind:        ptr.To(inferencev1alpha2.Kind(KindService.Kind)),
					Name:        inferencev1alpha2.ObjectName(eppName),
					PortNumber:  ptr.To(inferencev1alpha2.PortNumber(eppGRPCPort)),
					FailureMode: ptr.To(inferencev1alpha2.ExtensionFailureMode(r.router.PoolFailureMode())),
				},
			},
		}
	}
	return &inferencev1.InferencePool{
		TypeMeta:   typeMeta(KindInferencePool),
		ObjectMeta: r.meta(ref),
		Spec: inferencev1.InferencePoolSpec{
			Selector:    inferencev1.LabelSelector{MatchLabels: labelMap[inferencev1.LabelKey, inferencev1.LabelValue](r.poolSelector())},
			TargetPorts: r.targetPorts(),
			EndpointPickerRef: inferencev1.EndpointPickerRef{
				Kind:        inferencev1.Kind(KindService.Kind),
				Name:        inferencev1.ObjectName(eppName),
				Port:        &inferencev1.Port{Number: eppGRPCPort},
				FailureMode: inferencev1.EndpointPickerFailureMode(r.router.PoolFailureMode()),
			},
		},
	}
}

// targetPorts are the ports the pool targets on each pod: one a rank, local rank i on the pool's
// port + i (docs/design/0026-wide-expert-parallelism.md); one without parallelism.
func (r *routing) targetPorts() []inferencev1.Port {
	var ports []inferencev1.Port
	for _, p := range api.RankPorts(r.PoolPort, max(r.PoolRanks, 1)) {
		ports = append(ports, inferencev1.Port{Number: inferencev1.PortNumber(p)})
	}
	return ports
}

// skipAwaitUnless tells pulumi-kubernetes not to wait for an object that is not awaited; an
// awaited Deployment or Service gets its default wait (rolled out; endpoints ready).
func skipAwaitUnless(awaited bool) map[string]string {
	if awaited {
		return nil
	}
	return map[string]string{AnnotationPulumiSkipAwait: "true"}
}

// labelMap is a label map in the typed keys and values of an API version.
func labelMap[K, V ~string](labels map[string]string) map[K]V {
	out := make(map[K]V, len(labels))
	for k, v := range labels {
		out[K(k)] = V(v)
	}
	return out
}

// shadowService is the Inference Extension implementer's guide's option 1: a headless Service over the pool's pods for gateways
// that route to Services only. On a prefill/decode service it selects the decode leaders, whose
// routing sidecar serves the port: a request must never land on a prefill pod alone.
func (r *routing) shadowService(ref Ref) *corev1.Service {
	selector := r.poolSelector()
	if r.svc.Spec.Disaggregated() {
		selector[LabelComponentType] = string(api.ComponentTypeDecoder)
	}
	return &corev1.Service{
		TypeMeta: typeMeta(KindService),
		// Its endpoints are the model servers, which the LWSs' await already covers.
		ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, Labels: r.labels(), Annotations: skipAwaitUnless(false)},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selector,
			Ports:     r.shadowPorts(),
		},
	}
}

// shadowPorts are the shadow Service's ports: the pool's, one a rank.
func (r *routing) shadowPorts() []corev1.ServicePort {
	var ports []corev1.ServicePort
	for i, p := range api.RankPorts(r.PoolPort, max(r.PoolRanks, 1)) {
		name := api.ServingPortName
		if i > 0 {
			name = rankPortName(int32(i))
		}
		ports = append(ports, corev1.ServicePort{Name: name, Port: p, TargetPort: intstr.FromInt32(p), Protocol: corev1.ProtocolTCP})
	}
	return ports
}

// httpRoute is the user's route with every rule's backend the pool. A route without rules gets
// one for every path; a rule without timeouts gets the request timeout of the Inference
// Extension's examples, as a gateway's default (often 15 s) would cut long generations.
func (r *routing) httpRoute(ref Ref) *gatewayv1.HTTPRoute {
	spec := r.HTTPRoute.DeepCopy()
	if len(spec.Rules) == 0 {
		spec.Rules = []gatewayv1.HTTPRouteRule{{Matches: []gatewayv1.HTTPRouteMatch{{Path: &gatewayv1.HTTPPathMatch{
			Type: ptr.To(gatewayv1.PathMatchPathPrefix), Value: ptr.To("/"),
		}}}}}
	}
	backend := gatewayv1.HTTPBackendRef{BackendRef: gatewayv1.BackendRef{BackendObjectReference: gatewayv1.BackendObjectReference{
		Group: ptr.To(gatewayv1.Group(r.router.PoolGroup())),
		Kind:  ptr.To(gatewayv1.Kind(inferencePoolKind)),
		Name:  gatewayv1.ObjectName(api.PoolName(r.svc.Name)),
	}}}
	// A request the picker holds for a role at zero replicas waits its wake before it generates.
	timeout := routeRequestTimeout + r.svc.Spec.WakeTimeout()
	for i := range spec.Rules {
		spec.Rules[i].BackendRefs = []gatewayv1.HTTPBackendRef{backend}
		if spec.Rules[i].Timeouts == nil {
			spec.Rules[i].Timeouts = &gatewayv1.HTTPRouteTimeouts{Request: ptr.To(gatewayv1.Duration(envoyDuration(timeout)))}
		}
	}
	return &gatewayv1.HTTPRoute{TypeMeta: typeMeta(KindHTTPRoute), ObjectMeta: r.meta(ref), Spec: *spec}
}
