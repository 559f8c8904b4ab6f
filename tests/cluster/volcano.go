// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// startVolcano runs vc-controller-manager (its queue controller opens the queues the proportion
// plugin needs; its HyperNode controller counts the nodes of a network tier) and vc-scheduler,
// each as its ServiceAccount, with the CRDs, RBAC and scheduler configuration the Platform
// installed (installPlatform): the configuration is the Platform's ConfigMap's, as the
// scheduler's Deployment mounts it.
func (c *Cluster) startVolcano(ctx context.Context) error {
	scheduler, err := volcanoScheduler.build()
	if err != nil {
		return err
	}
	controllers, err := volcanoControllers.build()
	if err != nil {
		return err
	}
	conf, err := c.platformConfig(ctx, platform.VolcanoNamespace, platform.VolcanoSchedulerConfigMap, platform.VolcanoSchedulerConfigKey)
	if err != nil {
		return err
	}
	confFile := filepath.Join(c.Dir, platform.VolcanoSchedulerConfigKey)
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return err
	}
	schedulerKubeconfig, err := c.serviceAccountKubeconfig(platform.VolcanoNamespace, "volcano-scheduler")
	if err != nil {
		return err
	}
	controllersKubeconfig, err := c.serviceAccountKubeconfig(platform.VolcanoNamespace, "volcano-controllers")
	if err != nil {
		return err
	}
	healthController, err1 := freePort()
	healthScheduler, err2 := freePort()
	metricsScheduler, err3 := freePort()
	if err1 != nil || err2 != nil || err3 != nil {
		return fmt.Errorf("no free port: %v %v %v", err1, err2, err3)
	}
	Progress("starting Volcano %s: vc-controller-manager and vc-scheduler", VolcanoVersion)
	// Only the controllers a PodGroup needs: the others watch Volcano's own Job kinds (JobFlow and
	// JobTemplate have CRDs of their own) and, unsynced, hold every controller back.
	if err := c.start("vc-controller-manager", controllers, "--kubeconfig", controllersKubeconfig, "--leader-elect=false",
		"--controllers", "queue-controller,pg-controller,hyperNode-controller",
		"--healthz-address", fmt.Sprintf("127.0.0.1:%d", healthController)); err != nil {
		return err
	}
	return c.start("vc-scheduler", scheduler, "--kubeconfig", schedulerKubeconfig, "--leader-elect=false",
		"--scheduler-conf", confFile,
		"--healthz-address", fmt.Sprintf("127.0.0.1:%d", healthScheduler),
		"--listen-address", fmt.Sprintf("127.0.0.1:%d", metricsScheduler))
}
