// Package server is the one constructor of the service: from a Config and its dependencies it
// builds the catalogue, the blob bucket and signer, the runners, the jobs engine, the rate
// limiter and gate, the account, queue and synchronous handlers, the webhooks service and the
// background workers, and Run serves the listeners and runs the workers under one errgroup
// with a graceful shutdown. `modelexec serve`, the end-to-end tests and the benchmark all
// build the service here, so what they exercise is what an operator runs.
package server
