// Package plans holds the plan figures as data an operator can replace, like the catalogue:
// each plan's rate buckets, how many jobs an account may have in flight, its monthly
// allowance, and the held-connection seats and per-model concurrency of one process.
// `modelexec plans` prints the shipped figures; `serve --plans FILE` loads an edited copy.
package plans
