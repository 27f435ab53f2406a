package app_test

import (
	"testing"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/internal/e2etest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// The end-to-end tests of this package run the bot's real wiring
// (app.New, Run) against the fake Slack and the simulator, through the
// shared harness (package internal/e2etest). Their settings are a map
// loaded with package config, as `verdictbot run` loads the environment;
// nothing reads the process's environment, so they run side by side.

// The harness's people, channel and service key, by their short names.
const (
	e2eKey     = e2etest.Key
	secChannel = e2etest.Channel
	alice      = e2etest.Alice
	adminUser  = e2etest.Admin
	bob        = e2etest.Bob
)

// harness is the shared harness with this package's own helpers on it
// (openHome, clickOn, postIn, …).
type harness struct{ *e2etest.Harness }

// startBot is e2etest.StartBot.
func startBot(t testing.TB, env map[string]string, simCfg sim.Config, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{e2etest.StartBot(t, env, simCfg, opts...)}
}

// startBotWith is e2etest.StartBotWith.
func startBotWith(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{e2etest.StartBotWith(t, env, simCfg, withSandbox, opts...)}
}

// startBotSeeded is e2etest.StartBotSeeded.
func startBotSeeded(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed e2etest.Seed, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{e2etest.StartBotSeeded(t, env, simCfg, withSandbox, seed, opts...)}
}

// startBotOptions is e2etest.StartBotOptions.
func startBotOptions(t testing.TB, env map[string]string, simCfg sim.Config, o app.Options, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{e2etest.StartBotOptions(t, env, simCfg, o, opts...)}
}

// startQuarantine is e2etest.StartQuarantine.
func startQuarantine(t *testing.T, env map[string]string, tokenUser string) *harness {
	t.Helper()
	return &harness{e2etest.StartQuarantine(t, env, tokenUser)}
}

// startQuarantineSim is startQuarantine with the simulator's settings.
func startQuarantineSim(t *testing.T, env map[string]string, tokenUser string, simCfg sim.Config) *harness {
	t.Helper()
	return &harness{e2etest.StartQuarantineWith(t, env, simCfg, e2etest.SeedQuarantine, tokenUser)}
}
