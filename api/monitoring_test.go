// SPDX-License-Identifier: Apache-2.0

package api

import "testing"

func TestMonitoringRules(t *testing.T) {
	cases := []struct {
		name       string
		monitoring Monitoring
		want       string
	}{
		{"a dashboard needs the PodMonitors' labels", Monitoring{Dashboard: true},
			"spec.monitoring.dashboard: Invalid value: true: the dashboard's queries group by the service, role and replica labels the PodMonitors add"},
		{"a Prometheus URL", Monitoring{PrometheusAddress: "prometheus.monitoring:9090"},
			`spec.monitoring.prometheusAddress: Invalid value: "prometheus.monitoring:9090": must be an http:// or https:// URL`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRefused(t, validService, func(s *InferenceService) { s.Spec.Monitoring = &tc.monitoring }, tc.want)
		})
	}
}
