package main

import (
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

func TestFatalAuthExitsNonZeroWithAClearLine(t *testing.T) {
	t.Parallel()
	fake := slackfaketest.Start(t)
	fake.Fail("auth.test", 0, "invalid_auth")
	_, base := simtest.Start(t, sim.Config{})
	env := map[string]string{"SLACK_BOT_TOKEN": fake.BotToken(), "SLACK_APP_TOKEN": fake.AppToken(), "SLACK_API_URL": fake.APIURL(),
		"REPUTATION_URL": base, "REPUTATION_API_KEY": e2eKey, "VERDICTBOT_DATA_DIR": t.TempDir(), "VERDICTBOT_HTTP_ADDR": "127.0.0.1:0"}
	code, _, stderr := runMain(env, "run")
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code == 0 || last != "verdictbot run: Slack refused the credentials: auth.test with SLACK_BOT_TOKEN: invalid_auth" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if strings.Contains(stderr, fake.BotToken()) {
		t.Fatal("token printed")
	}
}
