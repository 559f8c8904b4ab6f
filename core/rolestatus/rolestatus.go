// SPDX-License-Identifier: Apache-2.0

// Package rolestatus is the one status model of a serving role: the words the component's
// `status` output and `fusioninfer status` both use, the one reading of a LeaderWorkerSet's
// status, and the rule from a role's replicas to its phase. It reads typed LWS objects and does
// no I/O: the component gives it the LWS resources' outputs, the CLI what it read from the cluster.
package rolestatus

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// Phase is where a role (or a service: all its roles' replicas together) stands.
type Phase string

const (
	// Unknown: no replica's LWS has reported a status (no controller has seen one; always so at
	// a preview).
	Unknown Phase = "Unknown"
	// Pending: no replica is ready and none is being updated.
	Pending Phase = "Pending"
	// Progressing: anything in between: some replicas ready, a rolling update under way, or ready
	// replicas beside ones not yet observed (await minimal: the minimal set serves, the rest come).
	Progressing Phase = "Progressing"
	// Running: every replica is observed and ready, and none is being updated.
	Running Phase = "Running"
	// Failed: a replica failed in a way waiting will not mend (the component: its resource's wait
	// failed; the CLI: an image that cannot be pulled, a server that crashes...).
	Failed Phase = "Failed"
	// ScaledToZero: the role's only LWS is its elastic one and its autoscaler has it at none
	// (minReplicas 0): idle, and a request through the router wakes it.
	ScaledToZero Phase = "ScaledToZero"
)

// Replica is what one LWS of a role says: a base replica's (spec.replicas 1) or an autoscaled
// role's elastic LWS (the replicas its autoscaler set).
type Replica struct {
	// Observed is false when the LWS carries no status yet, or does not exist yet.
	Observed bool
	// Replicas is the LWS's spec.replicas.
	Replicas      int
	ReadyReplicas int
	// Available and Updating are the LWS's conditions of those types, when True.
	Available bool
	Updating  bool
	// Failed is set by the caller, from what it knows beyond the LWS's status.
	Failed bool
}

// OfLeaderWorkerSet reads an LWS's status; nil is a replica not created yet.
func OfLeaderWorkerSet(lws *lwsv1.LeaderWorkerSet) Replica {
	if lws == nil {
		return Replica{Replicas: 1}
	}
	replicas := 1
	if lws.Spec.Replicas != nil {
		replicas = int(*lws.Spec.Replicas)
	}
	if len(lws.Status.Conditions) == 0 && lws.Status.ReadyReplicas == 0 && lws.Status.Replicas == 0 {
		return Replica{Replicas: replicas}
	}
	return Replica{
		Observed:      true,
		Replicas:      replicas,
		ReadyReplicas: min(int(lws.Status.ReadyReplicas), replicas),
		Available:     meta.IsStatusConditionTrue(lws.Status.Conditions, string(lwsv1.LeaderWorkerSetAvailable)),
		Updating:      meta.IsStatusConditionTrue(lws.Status.Conditions, string(lwsv1.LeaderWorkerSetUpdateInProgress)),
	}
}

// Of is a role's phase from its replicas (see the constants for the rules).
func Of(replicas []Replica) Phase {
	desired, observed, ready := 0, 0, 0
	updating := false
	for _, r := range replicas {
		if r.Failed {
			return Failed
		}
		updating = updating || r.Updating
		desired += r.Replicas
		if r.Observed {
			observed += r.Replicas
		}
		ready += r.ReadyReplicas
	}
	switch {
	case desired == 0 && len(replicas) > 0: // an LWS not created yet counts 1
		return ScaledToZero
	case observed == 0:
		return Unknown
	case ready == desired && !updating:
		return Running
	case ready == 0 && !updating:
		return Pending
	}
	return Progressing
}

// PodReady says whether a pod's Ready condition is True: the kubelet's word that its containers
// pass their readiness probes, the one the Endpoint Picker, a gateway and the LWS controller go by.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
