// Package manifest reads the Slack app manifest (manifest.yaml at the
// repository root) so that tests can hold it to Slack's schema and to the
// code: the scopes the code needs, the events it handles, and the /scan
// subcommands the registry serves. Its tests do the checking. The program
// reads the copy built into it (Embedded): `verdictbot doctor` compares
// the scopes Slack granted with the ones it asks for. It imports no test
// package, so the binary may link it.
package manifest

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/verdictbot/verdictbot"
)

// Manifest is the part of a Slack app manifest (schema 1.0.0) the tests
// look at. Fields it does not model are ignored here; the JSON schema
// rejects unknown keys.
type Manifest struct {
	Metadata struct {
		MajorVersion int `yaml:"major_version"`
		MinorVersion int `yaml:"minor_version"`
	} `yaml:"_metadata"`
	DisplayInformation struct {
		Name            string `yaml:"name"`
		Description     string `yaml:"description"`
		LongDescription string `yaml:"long_description"`
		BackgroundColor string `yaml:"background_color"`
	} `yaml:"display_information"`
	Features struct {
		AppHome struct {
			HomeTabEnabled             bool `yaml:"home_tab_enabled"`
			MessagesTabEnabled         bool `yaml:"messages_tab_enabled"`
			MessagesTabReadOnlyEnabled bool `yaml:"messages_tab_read_only_enabled"`
		} `yaml:"app_home"`
		BotUser struct {
			DisplayName  string `yaml:"display_name"`
			AlwaysOnline bool   `yaml:"always_online"`
		} `yaml:"bot_user"`
		SlashCommands []SlashCommand `yaml:"slash_commands"`
		Shortcuts     []Shortcut     `yaml:"shortcuts"`
	} `yaml:"features"`
	OAuthConfig struct {
		Scopes struct {
			Bot  []string `yaml:"bot"`
			User []string `yaml:"user"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		EventSubscriptions struct {
			RequestURL string   `yaml:"request_url"`
			BotEvents  []string `yaml:"bot_events"`
			UserEvents []string `yaml:"user_events"`
		} `yaml:"event_subscriptions"`
		Interactivity struct {
			IsEnabled  bool   `yaml:"is_enabled"`
			RequestURL string `yaml:"request_url"`
		} `yaml:"interactivity"`
		OrgDeployEnabled     bool `yaml:"org_deploy_enabled"`
		SocketModeEnabled    bool `yaml:"socket_mode_enabled"`
		TokenRotationEnabled bool `yaml:"token_rotation_enabled"`
	} `yaml:"settings"`
}

// SlashCommand is one entry of features.slash_commands.
type SlashCommand struct {
	Command      string `yaml:"command"`
	URL          string `yaml:"url"`
	Description  string `yaml:"description"`
	UsageHint    string `yaml:"usage_hint"`
	ShouldEscape bool   `yaml:"should_escape"`
}

// Shortcut is one entry of features.shortcuts.
type Shortcut struct {
	Name        string `yaml:"name"`
	Type        string `yaml:"type"`
	CallbackID  string `yaml:"callback_id"`
	Description string `yaml:"description"`
}

// Load reads and decodes the manifest at path.
func Load(path string) (*Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return Parse(data)
}

// Embedded decodes the manifest built into the binary (verdictbot.Manifest,
// the repository's manifest.yaml when it was built).
func Embedded() (*Manifest, error) {
	return Parse(verdictbot.Manifest)
}

// Parse decodes a manifest from YAML.
func Parse(data []byte) (*Manifest, error) {
	var m Manifest
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	return &m, nil
}

// SlashCommand returns the slash command called name ("/scan").
func (m *Manifest) SlashCommand(name string) (SlashCommand, bool) {
	for _, c := range m.Features.SlashCommands {
		if c.Command == name {
			return c, true
		}
	}
	return SlashCommand{}, false
}

// HelpWord is the subcommand a usage hint may name without the registry
// registering it: the parser answers "help" (and an empty text) with the
// generated help when no "help" command is registered (commands.Parse).
const HelpWord = "help"

// HintSubcommands returns the subcommands a usage hint names, in order.
// Alternatives are separated by " | " (a "|" without spaces separates the
// values of one argument, as in "<md5|sha1|sha256>"); the first word of an
// alternative is its subcommand, and an alternative that starts with an
// argument ("[url…]", "<url>") is the bare form, returned as "".
func HintSubcommands(hint string) []string {
	var names []string
	for alt := range strings.SplitSeq(hint, " | ") {
		fields := strings.Fields(alt)
		if len(fields) == 0 {
			continue
		}
		w := fields[0]
		if strings.HasPrefix(w, "[") || strings.HasPrefix(w, "<") {
			w = ""
		}
		names = append(names, w)
	}
	return names
}

// Reporter is the part of testing.TB CheckRegistry reports through.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// CheckRegistry fails t unless usageHint names exactly the subcommands in
// names (a registry's Names(): "" is the bare form, /scan <url>…): every
// registered command must be in the hint, so users can find it, and every
// command in the hint must be registered, so none is promised that does not
// exist. "help" may be in the hint without being registered (HelpWord).
// A subcommand named twice in the hint is reported too.
func CheckRegistry(t Reporter, names []string, usageHint string) {
	t.Helper()
	hinted := HintSubcommands(usageHint)
	seen := map[string]bool{}
	for _, h := range hinted {
		if seen[h] {
			t.Errorf("usage_hint names %s twice: %q", describe(h), usageHint)
		}
		seen[h] = true
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("the registry has %s but the manifest's usage_hint does not name it: %q", describe(n), usageHint)
		}
	}
	for _, h := range hinted {
		if h == HelpWord || slices.Contains(names, h) {
			continue
		}
		t.Errorf("the manifest's usage_hint names %s but the registry has no such command (registered: %q)", describe(h), names)
	}
}

func describe(name string) string {
	if name == "" {
		return "the bare form (/scan <url>…)"
	}
	return fmt.Sprintf("subcommand %q", name)
}
