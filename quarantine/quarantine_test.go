package quarantine

import (
	"errors"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/settings"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestExplain: each Slack refusal becomes its reason and a sentence that
// names Slack's code, and never the error's own text.
func TestExplain(t *testing.T) {
	q := &Quarantine{OwnTeam: func(team string) bool { return team == "T0HOME" }}
	cases := []struct {
		err          error
		team, reason string
		says         string
	}{
		{slack.SlackErrorResponse{Err: "message_not_found"}, "", ReasonAlreadyDeleted, "already deleted"},
		{errNotFound, "", ReasonAlreadyDeleted, "already deleted"},
		{slack.SlackErrorResponse{Err: "missing_scope"}, "", ReasonNotAllowed, "`missing_scope`"},
		{slack.SlackErrorResponse{Err: "not_allowed_token_type"}, "", ReasonNotAllowed, "`not_allowed_token_type`"},
		{slack.SlackErrorResponse{Err: "cant_delete_message"}, "T0OTHER", ReasonOtherOrg, "another organisation"},
		{slack.SlackErrorResponse{Err: "cant_delete_message"}, "T0HOME", ReasonNotAllowed, "admin or owner"},
		{slack.SlackErrorResponse{Err: "cant_delete_message"}, "", ReasonNotAllowed, "admin or owner"},
		{errors.New(`Post "https://slack.example/api/chat.delete?token=xoxp-secret": dial tcp: refused`), "", ReasonError, "request failed"},
	}
	for _, c := range cases {
		reason, says := q.explain(c.err, c.team)
		if reason != c.reason || !strings.Contains(says, c.says) || strings.Contains(says, "xoxp") {
			t.Errorf("%v (team %q): %s %q, want %s and %q", c.err, c.team, reason, says, c.reason, c.says)
		}
	}
}

type levels map[string]string

func (l levels) PutQuarantined(store.Quarantined) error { return nil }
func (l levels) Quarantined(string, string) (store.Quarantined, error) {
	return store.Quarantined{}, store.ErrNotFound
}
func (l levels) ChannelQuarantine(ch string) (string, error) { return l[ch], nil }
func (l levels) ChannelMode(string) (string, error)          { return "", nil }
func (l levels) ChannelFiles(string) (string, error)         { return "", nil }
func (l levels) AllowList() ([]store.AllowEntry, error)      { return nil, nil }

// TestLevel: a channel's own level wins over the default; off and unknown
// levels remove nothing.
func TestLevel(t *testing.T) {
	q := &Quarantine{Levels: &settings.Channels{Store: levels{"C1": "suspicious", "C2": "off"}, Defaults: settings.Defaults{Quarantine: "malicious"}}}
	for ch, want := range map[string]string{"C1": "suspicious", "C2": "off", "C3": "malicious"} {
		if got := q.Level(ch); got != want {
			t.Errorf("Level(%s) = %s, want %s", ch, got, want)
		}
	}
	if l, ok := Threshold("suspicious"); !ok || l != verdict.Suspicious {
		t.Error("suspicious")
	}
	if l, ok := Threshold("malicious"); !ok || l != verdict.Malicious {
		t.Error("malicious")
	}
	if _, ok := Threshold("off"); ok {
		t.Error("off removes")
	}
	var none *Quarantine
	if none.Level("C1") != Off || none.Problem() != "" {
		t.Error("a nil Quarantine is not off")
	}
}

// TestOn: a channel is on when its level removes something.
func TestOn(t *testing.T) {
	q := &Quarantine{Levels: &settings.Channels{Store: levels{"C1": "suspicious", "C2": "off"}, Defaults: settings.Defaults{Quarantine: "malicious"}}}
	for ch, want := range map[string]bool{"C1": true, "C2": false, "C3": true} {
		if got := q.On(ch); got != want {
			t.Errorf("On(%s) = %v, want %v", ch, got, want)
		}
	}
	if (&Quarantine{}).On("C1") {
		t.Error("a Quarantine without levels is on")
	}
}
