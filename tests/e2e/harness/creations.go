// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// JobCompletion is a Job the watch saw complete: when, and its container's arguments.
type JobCompletion struct {
	At   time.Time
	Args []string
}

// Creations is what a CreationWatch saw, from its start on.
type Creations struct {
	// JobsCompleted are the Jobs that completed, in order.
	JobsCompleted []JobCompletion
	// LeaderWorkerSetsAdded is when each LWS created was first seen.
	LeaderWorkerSetsAdded map[string]time.Time
}

// CreationWatch records, from the API server, the Jobs of a namespace that complete and the
// LWSs that are created, from its start on (what exists before is not reported).
type CreationWatch struct {
	mu    sync.Mutex
	seen  Creations
	stop  context.CancelFunc
	group sync.WaitGroup
}

// WatchJobsAndLeaderWorkerSets starts a CreationWatch of the namespace.
func WatchJobsAndLeaderWorkerSets(t *testing.T, namespace string) *CreationWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cw := &CreationWatch{seen: Creations{LeaderWorkerSetsAdded: map[string]time.Time{}}, stop: cancel}
	jobs, err := Cluster.Clientset.BatchV1().Jobs(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	jobWatch, err := Cluster.Clientset.BatchV1().Jobs(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: jobs.ResourceVersion})
	require.NoError(t, err)
	lwss, err := Cluster.Dynamic.Resource(LeaderWorkerSets).Namespace(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	lwsWatch, err := Cluster.Dynamic.Resource(LeaderWorkerSets).Namespace(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: lwss.GetResourceVersion()})
	require.NoError(t, err)
	completed := map[string]bool{} // the Jobs there before count as done already
	for _, job := range jobs.Items {
		completed[string(job.UID)] = true
	}
	cw.follow(jobWatch, func(e watch.Event) {
		job, ok := e.Object.(*batchv1.Job)
		if !ok || e.Type == watch.Deleted || completed[string(job.UID)] {
			return
		}
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				completed[string(job.UID)] = true
				cw.seen.JobsCompleted = append(cw.seen.JobsCompleted, JobCompletion{At: time.Now(), Args: job.Spec.Template.Spec.Containers[0].Args})
			}
		}
	})
	cw.follow(lwsWatch, func(e watch.Event) {
		if obj, ok := e.Object.(metav1.Object); ok && e.Type == watch.Added {
			cw.seen.LeaderWorkerSetsAdded[obj.GetName()] = time.Now()
		}
	})
	return cw
}

func (cw *CreationWatch) follow(w watch.Interface, record func(watch.Event)) {
	cw.group.Add(1)
	go func() {
		defer cw.group.Done()
		defer w.Stop()
		for e := range w.ResultChan() {
			cw.mu.Lock()
			record(e)
			cw.mu.Unlock()
		}
	}()
}

// End stops the watch and returns what it saw.
func (cw *CreationWatch) End() Creations {
	cw.stop()
	cw.group.Wait()
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.seen
}
