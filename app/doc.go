// Package app wires verdictbot from its settings and runs it: New builds
// every part from a config.Config value (the store, the Slack and service
// clients, the URL and file pipelines, cards, quarantine, the events for
// the SOC's tools, the commands, the App Home), one wire step each; Run
// serves until its context ends, with the background jobs (pruning,
// retention, the recheck schedule, the events sender), the ops server
// (/healthz, /readyz, /metrics), budgets shared between replicas; Close
// releases the store.
//
// It reads no environment, handles no signal and never exits the
// process: cmd/verdictbot does, and hands it a configuration value and
// Options (the hooks tests use), so end-to-end tests build a value and
// run side by side.
package app
