// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"path/filepath"
)

// kubeControllers are the kube-controller-manager controllers the suites need: the garbage
// collector (pulumi-kubernetes deletes with foreground propagation, which only it completes),
// the workload controllers under LWS and the Endpoint Picker, Jobs, namespaces and endpoints.
// The volume controllers bind claims (to volumes the host-path provisioner makes, for storage
// classes of provisioner kubernetes.io/host-path, which the e2e harness makes) and hold a claim while
// pods use it. The disruption controller keeps PodDisruptionBudgets' status, which the eviction
// API decides by (the Endpoint Picker's budget, tests/e2e/routing). The token controller fills
// service-account-token Secrets (the Endpoint Picker's metrics token, which its PodMonitor scrapes
// with: tests/e2e/metrics). No node-lifecycle controller: kwok's nodes send no heartbeats, and it would evict
// their pods.
var kubeControllers = "garbage-collector-controller,namespace-controller,statefulset-controller," +
	"deployment-controller,replicaset-controller,job-controller,endpoints-controller,endpointslice-controller," +
	"persistentvolume-binder-controller,persistentvolume-protection-controller,persistentvolumeclaim-protection-controller," +
	"disruption-controller,serviceaccount-token-controller"

// HostPathProvisioner is the provisioner kube-controller-manager runs with
// --enable-hostpath-provisioner (for tests: its volumes are directories under /tmp of this
// machine, which no pod of kwok's ever opens).
const HostPathProvisioner = "kubernetes.io/host-path"

// startKubeControllers starts kube-controller-manager and kube-scheduler; with hpa, the HPA
// controller too, syncing every 5 s instead of 15 s.
func (c *Cluster) startKubeControllers(hpa bool) error {
	controllerManager, err := kubeControllerManager.build()
	if err != nil {
		return err
	}
	scheduler, err := kubeScheduler.build()
	if err != nil {
		return err
	}
	Progress("starting kube-controller-manager and kube-scheduler %s", KubernetesVersion)
	controllers, args := kubeControllers, []string{}
	if hpa {
		controllers += ",horizontal-pod-autoscaler-controller"
		args = append(args, "--horizontal-pod-autoscaler-sync-period=5s")
	}
	if err := c.start("kube-controller-manager", controllerManager, append([]string{"--kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--secure-port=0", "--controllers", controllers, "--enable-hostpath-provisioner",
		"--service-account-private-key-file", filepath.Join(c.Dir, "sa.key")}, args...)...); err != nil {
		return err
	}
	if err := c.start("kube-scheduler", scheduler, "--kubeconfig", c.Kubeconfig,
		"--leader-elect=false", "--secure-port=0"); err != nil {
		return fmt.Errorf("kube-scheduler: %w", err)
	}
	return nil
}
