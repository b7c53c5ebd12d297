// Package metrics owns the service's Prometheus series: HTTP requests by surface, route
// and status (an http.Handler middleware that knows nothing of the surfaces' own
// packages), and a Recorder the domains report jobs, credits, webhook deliveries and
// rate-limit refusals to, plus gauges read at scrape time (queue depth, seats in use).
//
// Domains do not import Prometheus: they take a Recorder (Nop when metrics are off).
// This package imports no database/sql.
package metrics
