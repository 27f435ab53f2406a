package bot_test

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/bot"
)

// TestInstallationNamesTheWorkspaceOfTheInstall: the workspace an event
// belongs to is authorizations[0]'s (the outer team_id is the poster's:
// another organisation's in Slack Connect); when Slack leaves that null,
// as it does for some org-wide installs, context_team_id; only then the
// outer team_id, and not as a certainty.
func TestInstallationNamesTheWorkspaceOfTheInstall(t *testing.T) {
	cases := []struct {
		name, payload    string
		team, enterprise string
		exact            bool
	}{
		{"workspace install", `{"type":"event_callback","team_id":"T0HOME","event":{"type":"message"}}`, "T0HOME", "", false},
		{"Slack Connect: the poster is another org's",
			`{"type":"event_callback","team_id":"T0PARTNER","enterprise_id":"E0PARTNER","event":{"type":"message"},
			  "authorizations":[{"enterprise_id":"E0ACME","team_id":"T0ENG","user_id":"U0BOT","is_bot":true,"is_enterprise_install":true}]}`,
			"T0ENG", "E0ACME", true},
		{"org-wide install, authorization without a team",
			`{"type":"event_callback","team_id":"T0PARTNER","enterprise_id":"E0PARTNER","context_team_id":"T0SALES","context_enterprise_id":"E0ACME","event":{"type":"message"},
			  "authorizations":[{"enterprise_id":"E0ACME","team_id":null,"user_id":"U0BOT","is_bot":true,"is_enterprise_install":true}]}`,
			"T0SALES", "E0ACME", true},
		{"nothing but the outer team",
			`{"type":"event_callback","team_id":"T0PARTNER","enterprise_id":"E0PARTNER","event":{"type":"message"},
			  "authorizations":[{"enterprise_id":"E0ACME","team_id":null,"user_id":"U0BOT","is_bot":true,"is_enterprise_install":true}]}`,
			"T0PARTNER", "E0ACME", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev, err := slackevents.ParseEvent(json.RawMessage(c.payload), slackevents.OptionNoVerifyToken())
			if err != nil {
				t.Fatal(err)
			}
			team, enterprise, exact := bot.Installation(ev, json.RawMessage(c.payload))
			if team != c.team || enterprise != c.enterprise || exact != c.exact {
				t.Errorf("Installation = %q, %q, %v; want %q, %q, %v", team, enterprise, exact, c.team, c.enterprise, c.exact)
			}
		})
	}
}
