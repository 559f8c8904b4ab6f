// SPDX-License-Identifier: Apache-2.0

package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

// TestServerPortsAreNotRays: a multi-node replica's leader runs Ray's head beside the server, so
// the server may not take a port Ray's head binds; a single-node role may.
func TestServerPortsAreNotRays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*InferenceService)
		field  string
		want   []string
	}{
		{"--port on Ray's head port", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].Args = append(s.Spec.Roles[0].Template.Spec.Containers[0].Args, "--port", "6379")
		}, "spec.roles[0].template.spec.containers[0].args", []string{`"--port 6379"`, "ray start --head --port=6379", "Ray head's port"}},
		{"--port= on Ray's dashboard", func(s *InferenceService) {
			s.Spec.Roles[1].Template.Spec.Containers[0].Args = append(s.Spec.Roles[1].Template.Spec.Containers[0].Args, "--port=8265")
		}, "spec.roles[1].template.spec.containers[0].args", []string{`"--port 8265"`, "dashboard"}},
		{"the http port on Ray's client server", func(s *InferenceService) { // vLLM listens on 8000 then: refused first for that
			s.Spec.Roles[0].Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 10001}}
		}, "spec.roles[0].template.spec.containers[0].ports[0].containerPort", []string{"10001", "vLLM listens on 8000 without --port"}},
		{"a port named ray that is not Ray's", func(s *InferenceService) {
			s.Spec.Roles[0].Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "ray", ContainerPort: 7000}}
		}, "spec.roles[0].template.spec.containers[0].ports[1].containerPort", []string{"7000", `"ray"`, "6379"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := validService()
			tc.mutate(svc)
			errs := Validate(svc)
			if assert.Len(t, errs, 1) {
				assert.Equal(t, tc.field, errs[0].Field)
				for _, want := range tc.want {
					assert.Contains(t, errs[0].Error(), want)
				}
			}
		})
	}

	svc := validService()
	svc.Spec.Roles[0].Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "ray", ContainerPort: 6379}}
	assert.Empty(t, Validate(svc), "Ray's own port, declared as the leader declares it")
	svc.Spec.Roles[0].Template.Spec.Containers[0].Ports[1].Name = "gcs"
	assert.Empty(t, Validate(svc), "Ray's own port, declared under a name of the user's")
	for i := range svc.Spec.Roles {
		svc.Spec.Roles[i].Multinode = nil
		svc.Spec.Roles[i].Template.Spec.Containers[0].Ports = nil
		svc.Spec.Roles[i].Template.Spec.Containers[0].Args = []string{"--model", "m", "--port", "6379"}
	}
	assert.Empty(t, Validate(svc), "no Ray on a single-node role")
}
