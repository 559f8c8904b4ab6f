package cluster

import (
	"context"
	"fmt"
	"path/filepath"
)

// startVolcano installs Volcano's CRDs (its Helm chart's) and runs vc-controller-manager (its
// queue controller opens the queues the proportion plugin needs; its HyperNode controller counts
// the nodes of a network tier) and vc-scheduler with Volcano's default scheduler configuration
// (installer/helm/chart/volcano/config/volcano-scheduler.conf in the module).
func (c *Cluster) startVolcano(ctx context.Context) error {
	scheduler, err := volcanoScheduler.build()
	if err != nil {
		return err
	}
	controllers, err := volcanoControllers.build()
	if err != nil {
		return err
	}
	chart, err := moduleFile("volcano", "volcano.sh/volcano", "installer/helm/chart/volcano")
	if err != nil {
		return err
	}
	crds, err := filepath.Glob(filepath.Join(chart, "crd", "bases", "*.yaml"))
	if err != nil {
		return err
	}
	if _, err := c.InstallCRDs(ctx, crds...); err != nil {
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
	if err := c.start("vc-controller-manager", controllers, "--kubeconfig", c.Kubeconfig, "--leader-elect=false",
		"--controllers", "queue-controller,pg-controller,hyperNode-controller",
		"--healthz-address", fmt.Sprintf("127.0.0.1:%d", healthController)); err != nil {
		return err
	}
	return c.start("vc-scheduler", scheduler, "--kubeconfig", c.Kubeconfig, "--leader-elect=false",
		"--scheduler-conf", filepath.Join(chart, "config", "volcano-scheduler.conf"),
		"--healthz-address", fmt.Sprintf("127.0.0.1:%d", healthScheduler),
		"--listen-address", fmt.Sprintf("127.0.0.1:%d", metricsScheduler))
}
