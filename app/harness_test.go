package app_test

import (
	"testing"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

// The end-to-end tests of this package run the bot's real wiring
// (app.New, Run) against the fake Slack and the simulator, through the
// shared harness (package app/apptest). Their settings are a map
// loaded with package config, as `verdictbot run` loads the environment;
// nothing reads the process's environment, so they run side by side.

// The harness's people, channel and service key, by their short names.
const (
	e2eKey     = apptest.Key
	secChannel = apptest.Channel
	alice      = apptest.Alice
	adminUser  = apptest.Admin
	bob        = apptest.Bob
)

// harness is the shared harness with this package's own helpers on it
// (openHome, clickOn, postIn, …).
type harness struct{ *apptest.Harness }

// The bots of this package's tests poll the analyses on
// apptest.QuickPolling's short schedule: what they test is what the bot
// does with a verdict, not how soon it asks for one (the learned
// schedules have tests of their own in packages reputation, sandbox and
// scan, and cmd/verdictbot's end-to-end tests run the production
// wiring). Each wrapper is the apptest function it names with that
// schedule.

// startBot is apptest.StartBot.
func startBot(t testing.TB, env map[string]string, simCfg sim.Config, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotSeeded(t, env, simCfg, false, nil, opts...)
}

// startBotWith is apptest.StartBotWith.
func startBotWith(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, opts ...slackfake.Option) *harness {
	t.Helper()
	return startBotSeeded(t, env, simCfg, withSandbox, nil, opts...)
}

// startBotSeeded is apptest.StartBotSeeded.
func startBotSeeded(t testing.TB, env map[string]string, simCfg sim.Config, withSandbox bool, seed apptest.Seed, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{apptest.StartBotFull(t, env, simCfg, withSandbox, seed, apptest.QuickPolling(), opts...)}
}

// startBotOptions is apptest.StartBotOptions (o as given: start from
// apptest.QuickPolling()).
func startBotOptions(t testing.TB, env map[string]string, simCfg sim.Config, o app.Options, opts ...slackfake.Option) *harness {
	t.Helper()
	return &harness{apptest.StartBotOptions(t, env, simCfg, o, opts...)}
}

// startQuarantine is apptest.StartQuarantine.
func startQuarantine(t *testing.T, env map[string]string, tokenUser string) *harness {
	t.Helper()
	return startQuarantineSim(t, env, tokenUser, sim.Config{})
}

// startQuarantineSim is startQuarantine with the simulator's settings.
func startQuarantineSim(t *testing.T, env map[string]string, tokenUser string, simCfg sim.Config) *harness {
	t.Helper()
	return &harness{apptest.StartQuarantineOptions(t, env, simCfg, apptest.SeedQuarantine, tokenUser, apptest.QuickPolling())}
}
