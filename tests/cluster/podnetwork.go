// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
)

// addPodNetwork routes a network of the cluster's own to this machine (`ip route add local NET dev
// lo`: on Linux every address of a local route can be bound) and returns it as kwok's --cidr. The
// network is a /24 of 198.18.0.0/15, which RFC 2544 reserves for benchmarks; one of 127.0.0.0/8
// would need no route, but the API server refuses loopback addresses in Endpoints and
// EndpointSlices (k8s.io/kubernetes pkg/apis/core/validation ValidateEndpointIP: "may not be in
// the loopback range"), so such pods could back no Service: not the Endpoint Picker's, which
// `pulumi up` waits for and the gateway reaches. Adding the route needs CAP_NET_ADMIN (CI runs as
// root); Stop removes it.
func (c *Cluster) addPodNetwork() (string, error) {
	var lastErr error
	for _, n := range rand.Perm(512) {
		network := fmt.Sprintf("198.%d.%d.0/24", 18+n/256, n%256)
		out, err := exec.Command("ip", "route", "add", "local", network, "dev", "lo").CombinedOutput()
		if err == nil {
			c.podNetwork = network
			return fmt.Sprintf("198.%d.%d.1/24", 18+n/256, n%256), nil
		}
		lastErr = fmt.Errorf("ip route add local %s dev lo: %v: %s", network, err, strings.TrimSpace(string(out)))
		if !strings.Contains(string(out), "File exists") { // taken by another cluster on this machine: try the next
			break
		}
	}
	return "", fmt.Errorf("the pods' network (it needs CAP_NET_ADMIN: run as root): %w", lastErr)
}

// removePodNetwork removes the route addPodNetwork added.
func (c *Cluster) removePodNetwork() {
	if c.podNetwork != "" {
		_ = exec.Command("ip", "route", "del", "local", c.podNetwork, "dev", "lo").Run()
	}
}
