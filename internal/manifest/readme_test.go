package manifest_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// readmeFile is the README, whose install steps say what the manifest asks
// for.
const readmeFile = repoRoot + "/README.md"

// codeSpan is a Markdown code span: `team:read`.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// readmeManifestItem returns the code spans of the README's install step
// that lists what the manifest asks for under label ("- **bot scopes**:"),
// up to the next item of that list.
func readmeManifestItem(t *testing.T, label string) []string {
	t.Helper()
	raw, err := os.ReadFile(readmeFile)
	if err != nil {
		t.Fatal(err)
	}
	_, setup, ok := strings.Cut(string(raw), "\n## Setting it up in a Slack workspace\n")
	if !ok {
		t.Fatal("README.md has no section \"Setting it up in a Slack workspace\"")
	}
	setup, _, _ = strings.Cut(setup, "\n## ")
	_, item, ok := strings.Cut(setup, "- **"+label+"**:")
	if !ok {
		t.Fatalf("README.md's install steps have no item \"- **%s**:\"", label)
	}
	if i := strings.Index(item, "\n   - "); i >= 0 {
		item = item[:i]
	}
	if i := strings.Index(item, "\n2. "); i >= 0 {
		item = item[:i]
	}
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(item, -1) {
		out = append(out, m[1])
	}
	return out
}

// TestREADMEListsWhatTheManifestAsks: the README's install steps list
// exactly the manifest's bot scopes, user scopes, bot events, shortcuts
// and slash commands, so that whoever installs the app knows what it is
// granted (issue 27: "scopes complete").
func TestREADMEListsWhatTheManifestAsks(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	var shortcuts []string
	for _, s := range m.Features.Shortcuts {
		shortcuts = append(shortcuts, s.CallbackID)
	}
	for _, c := range m.Features.SlashCommands {
		shortcuts = append(shortcuts, c.Command)
	}
	for _, c := range []struct {
		label, what string
		want        []string
	}{
		{"bot scopes", "oauth_config.scopes.bot", m.OAuthConfig.Scopes.Bot},
		{"user scopes", "oauth_config.scopes.user", m.OAuthConfig.Scopes.User},
		{"events", "settings.event_subscriptions.bot_events", m.Settings.EventSubscriptions.BotEvents},
		{"shortcuts", "features.shortcuts (callback ids) and slash_commands", shortcuts},
	} {
		got := readmeManifestItem(t, c.label)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("README.md's %s do not list %s (manifest.yaml, %s)", c.label, w, c.what)
			}
		}
		for _, g := range got {
			if !slices.Contains(c.want, g) {
				t.Errorf("README.md's %s list %s, which manifest.yaml's %s does not have", c.label, g, c.what)
			}
		}
	}
}
