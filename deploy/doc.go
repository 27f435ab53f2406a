// Package deploy holds no code: its directory holds the deployment
// examples (Kubernetes for one replica on the embedded file and for
// several on PostgreSQL, the Helm chart that renders both, the systemd
// unit, Compose, the Grafana dashboard and the Prometheus alerts), and its
// tests (package deploy_test) check them against the program: every
// setting they name is one config knows, the replicas share one database,
// no secret is committed, the chart renders what the manifests hold, and
// every metric the alerts and the dashboard query is one the bot, started
// with package app, exports. The release configuration (.goreleaser.yaml)
// is checked here too.
package deploy
