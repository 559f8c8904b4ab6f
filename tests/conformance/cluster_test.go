// SPDX-License-Identifier: Apache-2.0

//go:build conformance

package conformance

import (
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
)

// cluster is a real etcd and kube-apiserver (tests/cluster), with the project's CRDs.
type cluster struct {
	*testcluster.Cluster
	client dynamic.Interface
	config *rest.Config
}

var (
	progress       = testcluster.Progress
	waitFor        = testcluster.WaitFor
	repositoryRoot = testcluster.RepositoryRoot
)
