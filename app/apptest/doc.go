// Package apptest is the end-to-end test harness the tests of app,
// cmd/verdictbot, shell and deploy share: it starts the bot's real wiring
// (app.New, Run) from a settings map, loaded with package config as
// `verdictbot run` loads the environment, against the fake Slack (package
// slackfake) and the simulator of both analysis services (package sim),
// and drives and watches it (Harness). Beside it: the DNS table the tests
// resolve through (Hosts, Options), a hostile analysis service
// (HostileService), and the small checks those tests have in common
// (InOrder, MustContain, MustBeInertTerminal, …).
//
// Nothing here reads the process's environment, so tests using it run
// side by side. Like sim/simtest and internal/slackfake/slackfaketest it
// imports testing and is never linked into the binary (cmd/verdictbot's
// TestBinaryLinksNoTestCode).
package apptest
