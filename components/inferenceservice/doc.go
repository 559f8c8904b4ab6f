// SPDX-License-Identifier: Apache-2.0

// Package inferenceservice is the Pulumi component fusioninfer:index:InferenceService for Go
// programs: an LLM inference service on Kubernetes from one spec, the same spec the CLI reads
// from a manifest and the provider from a TypeScript, Python or YAML program.
//
// NewInferenceService takes Args, generated from the input model (package api; `make gen`): the
// roles, each with a pulumi-kubernetes pod template, and the service-wide fields (gang policy,
// router, models, autoscaling, monitoring). The spec is validated before anything is registered,
// every error naming its field path; then the component registers one pulumi-kubernetes child
// for each object of the tree the core builds (core/render): a LeaderWorkerSet a replica of each
// serving role, the Volcano PodGroup of a gang, the router's InferencePool, Endpoint Picker and
// HTTPRoute, models' caches and download Jobs, LoRA adapters, PodMonitors, KEDA ScaledObjects. The
// children are named "{name}-{suffix}" and known at preview, even while a template is unknown;
// a template change rolls the replicas in batches, each after the one before is Available (with
// await: all, the default).
//
// The component's outputs are the children's names and, per role, its status (replicas, pods
// and phase from the LeaderWorkerSets' status: core/rolestatus). NewFromService registers a
// decoded api.InferenceService, as the root program and the provider do.
//
// docs/reference.md describes every field; docs/architecture.md the layers under the component.
package inferenceservice
