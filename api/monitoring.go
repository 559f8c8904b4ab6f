// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateMonitoring checks the Prometheus address, which an autoscaled role needs, and that the
// dashboard has the labels its queries read.
func validateMonitoring(spec *InferenceServiceSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	m := spec.Monitoring
	if m != nil && m.Dashboard && !m.PodMonitors {
		errs = append(errs, field.Invalid(path.Child("dashboard"), true,
			"the dashboard's queries group by the service, role and replica labels the PodMonitors add: set podMonitors too"))
	}
	if m == nil || m.PrometheusAddress == "" {
		for i := range spec.Roles {
			if spec.Roles[i].Autoscaling != nil && spec.Roles[i].ComponentType.Serving() {
				return append(errs, field.Required(path.Child("prometheusAddress"),
					fmt.Sprintf("role %q autoscales on a metric KEDA reads from Prometheus: give the server's URL", spec.Roles[i].Name)))
			}
		}
		return errs
	}
	if u, err := url.Parse(m.PrometheusAddress); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, field.Invalid(path.Child("prometheusAddress"), m.PrometheusAddress, "must be an http:// or https:// URL"))
	}
	return errs
}
