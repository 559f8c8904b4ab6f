// SPDX-License-Identifier: Apache-2.0

package planner

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// NodesFile is the --nodes-file format:
//
//	tiers: {leaf: 1, spine: 2}          # names of network tiers, for highestTierName
//	nodes:
//	  - name: gpu-a                     # with count: gpu-a-0 .. gpu-a-3
//	    count: 4
//	    gpus: 8
//	    memory: 1Ti                     # allocatable; without it memory is not counted
//	    topology: {1: leaf-a, 2: spine-1}
type NodesFile struct {
	Tiers map[string]int `json:"tiers,omitempty"`
	Nodes []NodeGroup    `json:"nodes"`
}

// NodeGroup is one node, or count alike nodes.
type NodeGroup struct {
	Name     string             `json:"name"`
	Count    *int               `json:"count,omitempty"`
	GPUs     int64              `json:"gpus"`
	Memory   *resource.Quantity `json:"memory,omitempty"`
	Topology map[int]string     `json:"topology,omitempty"`
}

// ParseNodesFile decodes a nodes file strictly and checks it; its error is every problem, each
// at its line in the file and its field path (an *api.FileError).
func ParseNodesFile(file string, data []byte) (Cluster, error) {
	var nodesFile NodesFile
	lines, err := api.DecodeFile(file, data, &nodesFile)
	if err != nil && !lines.Decoded() {
		return Cluster{}, err
	}
	var errs field.ErrorList
	cluster := Cluster{TierNames: nodesFile.Tiers}
	nodesPath := field.NewPath("nodes")
	if len(nodesFile.Nodes) == 0 {
		errs = append(errs, field.Required(nodesPath, "at least one node"))
	}
	// A counted group stays one entry (the planner's cost follows entries, not nodes), so names
	// are checked without writing them out: a counted group named a names a-0 .. a-{count-1}.
	single, counted := map[string]int{}, map[string]int{} // a name -> the first group giving it
	for i, g := range nodesFile.Nodes {
		p := nodesPath.Index(i)
		if g.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a node's name"))
		}
		if g.GPUs < 0 {
			errs = append(errs, field.Invalid(p.Child("gpus"), g.GPUs, "must be 0 or more"))
		}
		node := Node{Name: g.Name, GPUs: g.GPUs, Topology: g.Topology}
		if g.Memory != nil {
			if g.Memory.Sign() <= 0 {
				errs = append(errs, field.Invalid(p.Child("memory"), g.Memory.String(), "must be more than 0 (a node's allocatable memory, e.g. 512Gi)"))
			}
			node.Memory = ptr.To(g.Memory.Value())
		}
		if g.Count != nil {
			if *g.Count < 1 || *g.Count > 100000 {
				errs = append(errs, field.Invalid(p.Child("count"), *g.Count, "must be between 1 and 100000"))
				continue
			}
			node.Count = int64(*g.Count)
		}
		for tier := range g.Topology {
			if tier < 1 {
				errs = append(errs, field.Invalid(p.Child("topology").Key(strconv.Itoa(tier)), tier, "tiers start at 1"))
			}
		}
		if g.Name != "" {
			// One problem a group: a counted group that repeats another repeats all its names.
			if other, name := firstNamedBefore(nodesFile.Nodes, single, counted, i); other >= 0 {
				err := field.Duplicate(p.Child("name"), name)
				err.Detail = fmt.Sprintf("nodes[%d] is named %s too", other, name)
				if o := nodesFile.Nodes[other]; o.Count != nil {
					err.Detail = fmt.Sprintf("nodes[%d] (count %d) names its nodes %s-0 to %s-%d", other, *o.Count, o.Name, o.Name, *o.Count-1)
				}
				if g.Count != nil {
					err.Detail += fmt.Sprintf(", and this one (count %d) names its nodes %s-0 to %s-%d", *g.Count, g.Name, g.Name, *g.Count-1)
				}
				errs = append(errs, err)
			}
			names := single
			if g.Count != nil {
				names = counted
			}
			if _, seen := names[g.Name]; !seen {
				names[g.Name] = i
			}
		}
		cluster.Nodes = append(cluster.Nodes, node)
	}
	if err := lines.Error(errs); err != nil {
		return Cluster{}, err
	}
	return cluster, nil
}

// firstNamedBefore is the first name of group i that an earlier group gives (the lowest count
// index, else its own name), and the first such group; -1 when none does.
func firstNamedBefore(groups []NodeGroup, single, counted map[string]int, i int) (int, string) {
	g := groups[i]
	other, name, at := -1, "", 0
	gives := func(o, j int, n string) { // group o gives name n, group i's j-th
		if o >= 0 && (other < 0 || j < at || j == at && o < other) {
			other, name, at = o, n, j
		}
	}
	if g.Count == nil {
		if o, ok := single[g.Name]; ok {
			gives(o, 0, g.Name)
		}
		if k := strings.LastIndex(g.Name, "-"); k > 0 {
			if o, ok := counted[g.Name[:k]]; ok {
				if j, err := strconv.Atoi(g.Name[k+1:]); err == nil && strconv.Itoa(j) == g.Name[k+1:] && j < *groups[o].Count {
					gives(o, 0, g.Name)
				}
			}
		}
		return other, name
	}
	if o, ok := counted[g.Name]; ok {
		gives(o, 0, g.Name+"-0")
	}
	prefix := g.Name + "-"
	for n, o := range single {
		if j, err := strconv.Atoi(strings.TrimPrefix(n, prefix)); strings.HasPrefix(n, prefix) && err == nil && strconv.Itoa(j) == n[len(prefix):] && j < *g.Count {
			gives(o, j, n)
		}
	}
	return other, name
}
