package planner

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
)

// NodesFile is the --nodes-file format:
//
//	tiers: {leaf: 1, spine: 2}          # names of network tiers, for highestTierName
//	nodes:
//	  - name: gpu-a                     # with count: gpu-a-0 .. gpu-a-3
//	    count: 4
//	    gpus: 8
//	    topology: {1: leaf-a, 2: spine-1}
type NodesFile struct {
	Tiers map[string]int `json:"tiers,omitempty"`
	Nodes []NodeGroup    `json:"nodes"`
}

// NodeGroup is one node, or count alike nodes.
type NodeGroup struct {
	Name     string         `json:"name"`
	Count    *int           `json:"count,omitempty"`
	GPUs     int64          `json:"gpus"`
	Topology map[int]string `json:"topology,omitempty"`
}

// ParseNodesFile decodes a nodes file strictly and checks it; its error is every problem, each
// at its line in the file and its field path (an *api.FileError).
func ParseNodesFile(file string, data []byte) (Cluster, error) {
	var nodesFile NodesFile
	lines, err := api.DecodeFile(file, data, &nodesFile)
	if err != nil {
		return Cluster{}, err
	}
	var errs field.ErrorList
	cluster := Cluster{TierNames: nodesFile.Tiers}
	nodesPath := field.NewPath("nodes")
	if len(nodesFile.Nodes) == 0 {
		errs = append(errs, field.Required(nodesPath, "at least one node"))
	}
	// namedBy is the index of the node group that gave each node its name.
	namedBy := map[string]int{}
	for i, g := range nodesFile.Nodes {
		p := nodesPath.Index(i)
		if g.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), "a node's name"))
		}
		if g.GPUs < 0 {
			errs = append(errs, field.Invalid(p.Child("gpus"), g.GPUs, "must be 0 or more"))
		}
		count, names := 1, []string{g.Name}
		if g.Count != nil {
			count = *g.Count
			if count < 1 || count > 100000 {
				errs = append(errs, field.Invalid(p.Child("count"), count, "must be between 1 and 100000"))
				continue
			}
			names = make([]string, count)
			for j := range names {
				names[j] = g.Name + "-" + strconv.Itoa(j)
			}
		}
		for tier := range g.Topology {
			if tier < 1 {
				errs = append(errs, field.Invalid(p.Child("topology").Key(strconv.Itoa(tier)), tier, "tiers start at 1"))
			}
		}
		duplicate := false
		for _, name := range names {
			if other, seen := namedBy[name]; seen && !duplicate && g.Name != "" {
				// One problem a group: a counted group that repeats another repeats all its names.
				duplicate = true
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
			if _, seen := namedBy[name]; !seen {
				namedBy[name] = i
			}
			cluster.Nodes = append(cluster.Nodes, Node{Name: name, GPUs: g.GPUs, Topology: g.Topology})
		}
	}
	if err := lines.Error(errs); err != nil {
		return Cluster{}, err
	}
	return cluster, nil
}
