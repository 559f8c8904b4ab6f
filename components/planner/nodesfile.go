package planner

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"sigs.k8s.io/yaml"
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

// ParseNodesFile decodes a nodes file strictly and checks it; errors name their field paths.
func ParseNodesFile(data []byte) (Cluster, error) {
	jsonData, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return Cluster{}, err
	}
	var file NodesFile
	if err := api.DecodeStrictly(jsonData, &file); err != nil {
		return Cluster{}, fmt.Errorf("%w: a nodes file has nodes and, optionally, tiers", err)
	}
	var errs field.ErrorList
	cluster := Cluster{TierNames: file.Tiers}
	nodesPath := field.NewPath("nodes")
	if len(file.Nodes) == 0 {
		errs = append(errs, field.Required(nodesPath, "at least one node"))
	}
	seen := map[string]bool{}
	for i, g := range file.Nodes {
		p := nodesPath.Index(i)
		if g.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if g.GPUs < 0 {
			errs = append(errs, field.Invalid(p.Child("gpus"), g.GPUs, "must be >= 0"))
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
		for _, name := range names {
			if seen[name] {
				errs = append(errs, field.Duplicate(p.Child("name"), name))
			}
			seen[name] = true
			cluster.Nodes = append(cluster.Nodes, Node{Name: name, GPUs: g.GPUs, Topology: g.Topology})
		}
	}
	if len(errs) > 0 {
		return Cluster{}, errs.ToAggregate()
	}
	return cluster, nil
}
