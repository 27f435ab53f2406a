package apptest

import (
	"maps"
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/sim"
)

const (
	// AdminToken is the admin user token the quarantine tests give the
	// bot (SLACK_ADMIN_USER_TOKEN).
	AdminToken = "xoxp-1000000001-4000000004-e2eadminusertoken"
	// OtherOrg is a Slack Connect organisation other than the
	// workspace's.
	OtherOrg = "T0OTHERORG"
)

// QuarantineSettings is env over the settings of a quiet channel
// quarantining malicious messages with AdminToken (env may set
// SLACK_ADMIN_USER_TOKEN otherwise, "" for none).
func QuarantineSettings(env map[string]string) map[string]string {
	settings := map[string]string{
		"VERDICTBOT_CHANNEL_MODE": "quiet",
		"VERDICTBOT_QUARANTINE":   "malicious",
		"SLACK_ADMIN_USER_TOKEN":  AdminToken,
	}
	maps.Copy(settings, env)
	return settings
}

// WithAdminToken makes AdminToken a user token of user in the fake
// Slack, with the scopes the quarantine needs.
func WithAdminToken(user string) slackfake.Option {
	return slackfake.WithUserToken(slackfake.UserToken{Token: AdminToken, User: user, Scopes: []string{"chat:write", "files:write"}})
}

// SeedQuarantine registers Admin (a workspace admin), Alice and Channel.
func SeedQuarantine(f *slackfake.Server) {
	f.AddUser(slackfake.User{ID: Admin, Name: "secadmin", IsAdmin: true})
	f.AddUser(slackfake.User{ID: Alice, Name: "alice"})
	f.AddChannel(slackfake.Channel{ID: Channel, Name: "security"})
}

// StartQuarantine starts the bot in a quiet channel quarantining
// malicious messages (QuarantineSettings, SeedQuarantine), with
// AdminToken belonging to tokenUser; the test fails if the token
// appears in the logs.
func StartQuarantine(t *testing.T, env map[string]string, tokenUser string) *Harness {
	t.Helper()
	return StartQuarantineWith(t, env, sim.Config{}, SeedQuarantine, tokenUser)
}

// StartQuarantineWith is StartQuarantine with the simulator's settings
// and the fake Slack seeded by seed.
func StartQuarantineWith(t *testing.T, env map[string]string, simCfg sim.Config, seed Seed, tokenUser string) *Harness {
	t.Helper()
	return StartQuarantineOptions(t, env, simCfg, seed, tokenUser, Options())
}

// StartQuarantineOptions is StartQuarantineWith with the wiring's
// options o (start from Options() or QuickPolling()).
func StartQuarantineOptions(t *testing.T, env map[string]string, simCfg sim.Config, seed Seed, tokenUser string, o app.Options) *Harness {
	t.Helper()
	h := StartBotFull(t, QuarantineSettings(env), simCfg, false, seed, o, WithAdminToken(tokenUser))
	t.Cleanup(func() {
		if strings.Contains(h.Logs.String(), AdminToken) {
			t.Error("the admin token appears in the logs")
		}
	})
	return h
}
