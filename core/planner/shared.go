// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// PredictShared places the services of one file on one cluster they share, in the file's order,
// as they would be applied: each on the GPUs the ones before it left (issue 55: planned alone,
// two 1-GPU services each fit one 1-GPU node). A service's prediction is Predict's on what is left.
func PredictShared(services []*api.InferenceService, cluster Cluster) ([]*Prediction, error) {
	out := make([]*Prediction, 0, len(services))
	for _, svc := range services {
		p, err := Predict(svc, cluster)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
		cluster = cluster.without(p.Replicas)
	}
	return out, nil
}

// without is the cluster less the GPUs and memory the scheduled replicas' pods take. An entry
// whose nodes took pods is split: each such node an entry of its own with the room left, the
// others in runs that keep their names (Node.first). The entries grow with the pods placed, not
// the nodes.
func (c Cluster) without(replicas []Replica) Cluster {
	taken := map[string]room{}
	for _, r := range replicas {
		if r.Scheduled {
			for _, node := range r.Nodes {
				taken[node] = room{taken[node].gpus + r.GPUsPerPod, taken[node].memory + r.MemoryPerPod}
			}
		}
	}
	if len(taken) == 0 {
		return c
	}
	out := Cluster{TierNames: c.TierNames}
	for _, n := range c.Nodes {
		if n.Count == 0 {
			out.Nodes = append(out.Nodes, n.less(taken[n.Name]))
			continue
		}
		// The nodes of the entry that took pods, in order; the runs between them stay entries.
		var used []int64
		for name := range taken {
			if j, ok := n.index(name); ok {
				used = append(used, j)
			}
		}
		if len(used) == 0 {
			out.Nodes = append(out.Nodes, n)
			continue
		}
		slices.Sort(used)
		next := int64(0)
		for _, j := range append(used, n.Count) {
			if j > next {
				run := n
				run.first, run.Count = n.first+next, j-next
				out.Nodes = append(out.Nodes, run)
			}
			if j < n.Count {
				one := n
				one.Name, one.Count, one.first = n.nodeName(j), 0, 0
				out.Nodes = append(out.Nodes, one.less(taken[one.Name]))
			}
			next = j + 1
		}
	}
	return out
}

// less is the node with what pods took from it taken away (memory where it counts).
func (n Node) less(taken room) Node {
	n.GPUs -= taken.gpus
	if n.Memory != nil {
		n.Memory = ptr.To(*n.Memory - taken.memory)
	}
	return n
}

// index is the place in the entry of the node named name (nodeName's inverse).
func (n Node) index(name string) (int64, bool) {
	number, ok := strings.CutPrefix(name, n.Name+"-")
	if !ok {
		return 0, false
	}
	k, err := strconv.ParseInt(number, 10, 64)
	if err != nil || k < n.first || k >= n.first+n.Count || n.nodeName(k-n.first) != name {
		return 0, false
	}
	return k - n.first, true
}
