package notify

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/verdict"
)

// TestTombstone: a quarantined card says what was removed, why and when,
// and carries the admins' Release button; a released one says who released
// it and has no button; a file's tombstone says the sandbox keeps the
// sample and has no button; a failure says why, with no button.
func TestTombstone(t *testing.T) {
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	base := card.Card{Channel: "C1", ThreadTS: "1.000001", SourceTS: "1.000001", CardTS: "1.000002", Final: true,
		Lines: []card.Line{{Kind: card.KindURL, Target: "https://evil.example/x", Level: verdict.Malicious,
			Category: verdict.CatPhishing, Scores: verdict.Scores{verdict.CatPhishing: 0.97}, TaskID: "T1", Actions: true}}}
	cases := []struct {
		name      string
		q         card.Quarantine
		want      []string
		button    bool
		wantPlain string
	}{
		{"removed", card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: at},
			[]string{"Quarantined", "This message was removed", "malicious", "An admin can release"}, true, "[release]"},
		{"released", card.Quarantine{State: card.QuarantineReleased, Level: verdict.Malicious, At: at, ReleasedBy: "U0ADMIN001", ReleasedAt: at.Add(time.Minute)},
			[]string{"Released", "<@U0ADMIN001>", "posted again"}, false, "Released by @U0ADMIN001"},
		{"files", card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: at, Files: true},
			[]string{"files of this message were deleted from Slack", "message itself stays", "sandbox keeps the sample"}, false, "cannot be released"},
		{"files named", card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: at, Files: true, Names: []string{"invoice.exe"}},
			[]string{"The file `invoice.exe` of this message was deleted from Slack", "cannot be released"}, false, "invoice.exe"},
		{"queued", card.Quarantine{State: card.QuarantineQueued, Level: verdict.Malicious, At: at, Problem: "Slack answered `ratelimited`; verdictbot tries again shortly."},
			[]string{"queued for removal", "tries again"}, false, "queued for removal"},
		{"held", card.Quarantine{State: card.QuarantineHeld, Level: verdict.Malicious, At: at, Problem: "25 messages carry the link; an admin's Remove all in the alert channel removes them."},
			[]string{"waits for an admin's approval", "Remove all in the alert channel"}, false, "waits for an admin"},
		{"failed", card.Quarantine{State: card.QuarantineFailed, Level: verdict.Malicious, At: at, Problem: "no admin token is set (SLACK_ADMIN_USER_TOKEN)."},
			[]string{"Not quarantined", "could not be removed", "SLACK_ADMIN_USER_TOKEN"}, false, "Not quarantined"},
	}
	// A file card whose message was removed (VERDICTBOT_QUARANTINE_FILES=message):
	// it says so, names the file, and can be released (its button carries
	// the card's own key).
	fileCard := card.Card{Channel: "C1", ThreadTS: "1.000001", SourceTS: "1.000001/files", CardTS: "1.000002", Final: true,
		Lines: []card.Line{{Kind: card.KindFile, Target: "invoice.exe", Level: verdict.Malicious, TaskID: "9",
			File: &card.FileInfo{ID: "F0BAD", Name: "invoice.exe", MalScore: 10}}}}
	fileCard.Quarantine = &card.Quarantine{State: card.QuarantineRemoved, Level: verdict.Malicious, At: at, Names: []string{"invoice.exe"}}
	blocks, _ := Blocks(&fileCard)
	b, _ := json.Marshal(blocks)
	js := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
	for _, w := range []string{"This message was removed by quarantine", "it shared `invoice.exe`, found malicious", "not deleted from Slack",
		`"action_id":"quarantine_release"`, `"value":"1.000001/files"`} {
		if !strings.Contains(js, w) {
			t.Errorf("file card blocks lack %q:\n%s", w, js)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := base.Clone()
			c.Quarantine = &tc.q
			blocks, _ := Blocks(&c)
			if err := validate(blocks); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(blocks)
			js := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
			for _, w := range tc.want {
				if !strings.Contains(js, w) {
					t.Errorf("blocks lack %q:\n%s", w, js)
				}
			}
			hasButton := strings.Contains(js, `"action_id":"quarantine_release","text":{"type":"plain_text","text":"Release message"`) ||
				strings.Contains(js, `"action_id":"quarantine_release"`)
			if hasButton != tc.button {
				t.Errorf("release button shown: %v, want %v", hasButton, tc.button)
			}
			if tc.button && !strings.Contains(js, `"value":"1.000001"`) {
				t.Errorf("the button does not carry the message's ts:\n%s", js)
			}
			if txt := Text(&c, false); !strings.Contains(txt, tc.wantPlain) {
				t.Errorf("text lacks %q:\n%s", tc.wantPlain, txt)
			}
		})
	}
}
