package config

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEverySettingHasADoc: settingDocs documents every setting of Names,
// and nothing else.
func TestEverySettingHasADoc(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, n := range Names() {
		names[n] = true
		if d, ok := Doc(n); !ok || strings.TrimSpace(d.Meaning) == "" {
			t.Errorf("%s has no meaning in settingDocs", n)
		}
	}
	for n := range settingDocs {
		if !names[n] {
			t.Errorf("settingDocs documents %s, which is not a setting", n)
		}
	}
}

// TestDefaultText: the documented default is Default's value.
func TestDefaultText(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"VERDICTBOT_MAX_LINKS":      "`50`",
		"VERDICTBOT_RECHECK_AFTER":  "`1h,6h,24h,72h`",
		"VERDICTBOT_BACKFILL_MAX":   "`720h`",
		"VERDICTBOT_SKIP_FILETYPES": "`post,space,quip,canvas`",
		"VERDICTBOT_ALERT_CHANNEL":  "—",
		"SLACK_BOT_TOKEN":           "— (required)",
		"VERDICTBOT_REPORT_CHANNEL": "— (the alert channel)",
		"VERDICTBOT_MAX_CONCURRENT": "`0` (derived)",
	} {
		if got := DefaultText(name); got != want {
			t.Errorf("DefaultText(%s) = %q, want %q", name, got, want)
		}
	}
}

var (
	// docRange is a range a meaning states: "(1–200)", "(5s–10m;".
	docRange = regexp.MustCompile(`\((\d+[smh]?)–(\d+[smh]?)[;)]`)
	// docAtLeast is a lower bound a meaning states: "at least `48h`".
	docAtLeast = regexp.MustCompile("at least `(\\d+[smh]?)`")
)

// TestDocumentedRangesAreChecked: each range or lower bound a setting's
// meaning states is the one configRules checks: its ends are accepted,
// the values just outside refused.
func TestDocumentedRangesAreChecked(t *testing.T) {
	t.Parallel()
	refused := func(name, v string) bool {
		_, err := loadValid(validEnv, map[string]string{name: v})
		return err != nil && strings.Contains(err.Error(), name)
	}
	// below and above are the values just outside a bound.
	below := func(v string) string {
		if d, err := time.ParseDuration(v); err == nil {
			return (d - time.Second).String()
		}
		n, _ := strconv.Atoi(v)
		return strconv.Itoa(n - 1)
	}
	above := func(v string) string {
		if d, err := time.ParseDuration(v); err == nil {
			return (d + time.Second).String()
		}
		n, _ := strconv.Atoi(v)
		return strconv.Itoa(n + 1)
	}
	checked := 0
	for _, name := range Names() {
		d, _ := Doc(name)
		if m := docRange.FindStringSubmatch(d.Meaning); m != nil {
			checked++
			lo, hi := m[1], m[2]
			for _, v := range []string{lo, hi} {
				if refused(name, v) {
					t.Errorf("%s=%s refused, but its documentation says %s–%s", name, v, lo, hi)
				}
			}
			for _, v := range []string{below(lo), above(hi)} {
				if !refused(name, v) {
					t.Errorf("%s=%s accepted, but its documentation says %s–%s", name, v, lo, hi)
				}
			}
		}
		if m := docAtLeast.FindStringSubmatch(d.Meaning); m != nil {
			checked++
			if refused(name, m[1]) || !refused(name, below(m[1])) {
				t.Errorf("%s: its documentation says at least %s, which is not what start-up checks", name, m[1])
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d documented bounds found: the patterns no longer match the meanings", checked)
	}
}

// TestREADMEListsEverySetting: the README's settings table names every
// setting (make docs writes it).
func TestREADMEListsEverySetting(t *testing.T) {
	t.Parallel()
	listsEverySetting(t, "../README.md")
}

// TestConfigurationDocListsEverySetting: docs/configuration.md's settings
// reference names every setting (make docs writes it).
func TestConfigurationDocListsEverySetting(t *testing.T) {
	t.Parallel()
	listsEverySetting(t, "../docs/configuration.md")
}

func listsEverySetting(t *testing.T, path string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range Names() {
		if !strings.Contains(string(doc), "| `"+tag+"` |") {
			t.Errorf("%s has no row for %s (run make docs)", path, tag)
		}
	}
}
