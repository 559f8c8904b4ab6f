// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/planner"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// maxReplicaColumns: beyond this many replicas the table has one column per role.
const maxReplicaColumns = 8

type planOptions struct {
	files       []string
	namespace   string
	nodes       nodeCounts
	gpusPerNode gpuCount
	nodesFile   string
}

func newPlanCommand() *cobra.Command {
	var opts planOptions
	cmd := &cobra.Command{
		Use:   "plan -f FILE (--nodes N[,N...] --gpus-per-node G | --nodes-file NODES)",
		Short: "Predict which replicas of a service a cluster of a given size runs",
		Long: `plan predicts, for each service, which replicas Volcano's gang rules let a cluster place, for the
PodGroup this service emits: the gang's minimal set (minRoleReplicas of every role) all together or
nothing, then each further replica whole when it fits. It prints one row per cluster, one column per
replica, and the service's status: Full, Partial or Blocked. The services of the files share each
cluster: they are placed in the files' order, each on the GPUs the ones before it left.

Exit status: 0 when every service is Full on every cluster given, 2 when one is Partial (and none
Blocked), 3 when one is Blocked, 1 an error.

It is a prediction of the gang rules counting GPUs only, with hard network-topology policies when
the nodes file gives topology; it is not a prediction of every scheduler plugin (CPU, memory,
affinity, taints and soft policies are not modelled).

A nodes file lists nodes (count makes several alike) with their GPUs and network domains per tier:

  tiers: {leaf: 1, spine: 2}
  nodes:
    - {name: gpu-a, count: 4, gpus: 8, topology: {1: leaf-a, 2: spine-1}}
    - {name: gpu-b, count: 4, gpus: 8, topology: {1: leaf-b, 2: spine-1}}`,
		Example: `  fusioninfer plan -f examples/manifests/story4-disaggregated-multinode.yaml --nodes 10,8,6,4,2 --gpus-per-node 8
  fusioninfer plan -f service.yaml --nodes-file nodes.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPlan(cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.files, "filename", "f", nil, `manifest file ("-" for stdin); repeatable`)
	cmd.Flags().StringVarP(&opts.namespace, "namespace", "n", "", "namespace for services that name none")
	cmd.Flags().Var(&opts.nodes, "nodes", "cluster sizes in nodes, comma-separated, one table row each (with --gpus-per-node)")
	cmd.Flags().Var(&opts.gpusPerNode, "gpus-per-node", "GPUs of every node (with --nodes)")
	cmd.Flags().StringVar(&opts.nodesFile, "nodes-file", "", "YAML file listing the cluster's nodes")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// clusters are the table's rows, from the flags.
func (o planOptions) clusters() ([]planner.Cluster, []string, error) {
	switch {
	case o.nodesFile != "" && len(o.nodes) > 0:
		return nil, nil, fmt.Errorf("give --nodes-file or --nodes, not both")
	case o.nodesFile != "":
		data, err := os.ReadFile(o.nodesFile)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read the nodes file: %w; give --nodes-file a readable nodes file (see examples/nodes)", err)
		}
		cluster, err := planner.ParseNodesFile(o.nodesFile, data)
		if err != nil {
			return nil, nil, err
		}
		return []planner.Cluster{cluster}, []string{fmt.Sprintf("%s (%s)", plural(cluster.GPUs(), "GPU"), o.nodesFile)}, nil
	case len(o.nodes) > 0:
		if o.gpusPerNode < 1 {
			return nil, nil, fmt.Errorf("--nodes needs --gpus-per-node, a whole number of GPUs of every node, at least 1")
		}
		g := int64(o.gpusPerNode)
		var clusters []planner.Cluster
		var labels []string
		for _, n := range o.nodes {
			// The cluster's GPUs are counted in an int64, as Kubernetes counts a node's.
			if n > math.MaxInt64/g {
				return nil, nil, fmt.Errorf("--nodes %d --gpus-per-node %d: %d nodes x %d GPUs is more than can be counted: "+
					"a cluster has at most %d GPUs in all", n, g, n, g, int64(math.MaxInt64))
			}
			clusters = append(clusters, planner.Uniform(n, g))
			labels = append(labels, fmt.Sprintf("%s (%d x %d)", plural(n*g, "GPU"), n, g))
		}
		return clusters, labels, nil
	}
	return nil, nil, fmt.Errorf("give --nodes N --gpus-per-node G, or --nodes-file FILE")
}

// nodeCounts is --nodes: cluster sizes, whole numbers of nodes, comma-separated (the flag may
// also repeat).
type nodeCounts []int64

func (n *nodeCounts) Set(value string) error {
	for _, word := range strings.Split(value, ",") {
		count, err := wholeNumber(word)
		if err != nil {
			return fmt.Errorf("%q: %w; --nodes takes cluster sizes, whole numbers of nodes, comma-separated (--nodes 10,8,6)", word, err)
		}
		*n = append(*n, count)
	}
	return nil
}

func (n *nodeCounts) String() string {
	words := make([]string, len(*n))
	for i, count := range *n {
		words[i] = strconv.FormatInt(count, 10)
	}
	return strings.Join(words, ",")
}

func (n *nodeCounts) Type() string { return "N[,N...]" }

// gpuCount is --gpus-per-node: a whole number of GPUs.
type gpuCount int64

func (g *gpuCount) Set(value string) error {
	count, err := wholeNumber(value)
	if err != nil {
		return fmt.Errorf("%w; --gpus-per-node takes a whole number of GPUs, at least 1", err)
	}
	*g = gpuCount(count)
	return nil
}

func (g *gpuCount) String() string { return strconv.FormatInt(int64(*g), 10) }

func (g *gpuCount) Type() string { return "G" }

// wholeNumber reads a count: 0, 1, 2, ... up to what an int64 holds.
func wholeNumber(word string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(word), 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(strings.TrimSpace(word), "-"):
		return 0, fmt.Errorf("more than can be counted (at most %d)", int64(math.MaxInt64))
	case err != nil || n < 0:
		return 0, errors.New("not a whole number")
	}
	return n, nil
}

func runPlan(stdin io.Reader, stdout, stderr io.Writer, opts planOptions) error {
	clusters, labels, err := opts.clusters()
	if err != nil {
		return err
	}
	trees, problems, err := loadTrees(stdin, renderOptions{files: opts.files, namespace: opts.namespace})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(stderr, p)
		}
		return errInvalidInput
	}
	// A file's services share each cluster, placed in the file's order (planner.PredictShared).
	services := make([]*api.InferenceService, len(trees))
	for i, tree := range trees {
		services[i] = tree.Service
	}
	shared := make([][]*planner.Prediction, len(clusters))
	for c, cluster := range clusters {
		if shared[c], err = planner.PredictShared(services, cluster); err != nil {
			return err
		}
	}
	if len(trees) > 1 {
		fmt.Fprintf(stdout, "%d services share each cluster, placed in the file's order: each gets the GPUs the ones before it left.\n", len(trees))
	}
	worst := 0
	for i, tree := range trees {
		predictions := make([]*planner.Prediction, len(clusters))
		for c := range clusters {
			predictions[c] = shared[c][i]
		}
		worst = max(worst, writePlan(stdout, tree, predictions, labels))
	}
	if worst != 0 {
		return exitCode(worst)
	}
	return nil
}

// planExitCodes are plan's exit status for a service's status on a cluster; the command exits
// with the worst of every service on every cluster given (the table is printed either way).
var planExitCodes = map[planner.ServiceStatus]int{planner.Full: 0, planner.Partial: 2, planner.Blocked: 3}

// writePlan prints a service's table, its prediction on each cluster, and returns its exit status.
func writePlan(w io.Writer, tree *render.Tree, predictions []*planner.Prediction, labels []string) int {
	code := 0
	for _, p := range predictions {
		code = max(code, planExitCodes[p.Status])
	}
	first := predictions[0]
	fullSize := plural(first.GPUsFull, "GPU") + " at full size"
	if first.GPUsBase != first.GPUsFull {
		fullSize = fmt.Sprintf("%s at maxReplicas, %s for the base replicas", plural(first.GPUsFull, "GPU"), plural(first.GPUsBase, "GPU"))
	}
	if tree.Service.Spec.GangScheduled() {
		fmt.Fprintf(w, "InferenceService %s: %s, %s for the gang's minimal set\n",
			tree.Service.Name, fullSize, plural(first.GPUsMinimal, "GPU"))
		fmt.Fprintln(w, "A prediction of Volcano's gang rules for the PodGroup this service emits, counting GPUs; not of every scheduler plugin.")
	} else {
		fmt.Fprintf(w, "InferenceService %s: %s; each replica is placed on its own (no PodGroup)\n",
			tree.Service.Name, fullSize)
		fmt.Fprintln(w, "A prediction of where the replicas' pods fit, counting GPUs; not of every scheduler plugin.")
	}
	for _, m := range render.Summarize(tree).Models {
		fmt.Fprintf(w, "Weights of %s\n", render.DescribeModel(m))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	perReplica := len(first.Replicas) <= maxReplicaColumns
	header := []string{"CLUSTER"}
	if perReplica {
		for _, r := range first.Replicas {
			header = append(header, fmt.Sprintf("%s (%s)", r.Name(), plural(r.GPUs(), "GPU")))
		}
	} else {
		for _, role := range roleOrder(first) {
			header = append(header, role+" (scheduled/replicas)")
		}
	}
	fmt.Fprintln(tw, strings.Join(append(header, "SERVICE"), "\t"))
	for i, p := range predictions {
		row := []string{labels[i]}
		if perReplica {
			for _, r := range p.Replicas {
				row = append(row, map[bool]string{true: "scheduled", false: "pending"}[r.Scheduled])
			}
		} else {
			for _, role := range roleOrder(p) {
				done, total := 0, 0
				for _, r := range p.Replicas {
					if r.Role == role {
						total++
						if r.Scheduled {
							done++
						}
					}
				}
				row = append(row, fmt.Sprintf("%d/%d", done, total))
			}
		}
		fmt.Fprintln(tw, strings.Join(append(row, serviceCell(p, perReplica)), "\t"))
	}
	tw.Flush()
	for i, p := range predictions {
		for _, reason := range p.Reasons {
			fmt.Fprintf(w, "  %s: %s\n", labels[i], reason)
		}
	}
	for _, limit := range render.PoolLimits(&tree.Service.Spec, tree.Service.Name) {
		fmt.Fprintln(w, poolLimitLine(limit))
	}
	fmt.Fprintln(w)
	return code
}

// poolLimitLine says what a karpenter pool's NodePool may launch, and what it holds: a replica
// beyond it (an LWS scaled by hand, an autoscaler held past maxReplicas) waits Pending.
func poolLimitLine(limit render.PoolLimit) string {
	var shares []string
	for _, r := range limit.Roles {
		share := fmt.Sprintf("%s %d replicas", r.Role, r.Replicas)
		if r.Surge > 0 {
			share += fmt.Sprintf(" + %d surging in a rollout", r.Surge)
		}
		shares = append(shares, fmt.Sprintf("%s on %d nodes", share, r.Nodes))
	}
	return fmt.Sprintf("Node pool %s: Karpenter launches at most %d GPUs (NodePool %s's limit, %d nodes of %d): %s; "+
		"a replica beyond them waits Pending", limit.Pool, limit.GPUs, limit.NodePool, limit.Nodes, limit.GPUsPerNode, strings.Join(shares, ", "))
}

func serviceCell(p *planner.Prediction, perReplica bool) string {
	if p.Status != planner.Partial || !perReplica {
		return string(p.Status)
	}
	var scheduled []string
	for _, r := range p.Replicas {
		if r.Scheduled {
			scheduled = append(scheduled, r.Name())
		}
	}
	return fmt.Sprintf("Partial (%s)", strings.Join(scheduled, ", "))
}

func roleOrder(p *planner.Prediction) []string {
	var roles []string
	seen := map[string]bool{}
	for _, r := range p.Replicas {
		if !seen[r.Role] {
			seen[r.Role] = true
			roles = append(roles, r.Role)
		}
	}
	return roles
}
