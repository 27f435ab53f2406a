package apptest

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// ShellSettings is the environment of a scripted `verdictbot shell`
// session: a data directory of the test's own, no services and no colour
// unless env sets them. When the test fails, it logs the session's
// shell.log.
func ShellSettings(t *testing.T, env map[string]string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	settings := map[string]string{"VERDICTBOT_DATA_DIR": dir, "REPUTATION_URL": "", "REPUTATION_API_KEY": "",
		"SANDBOX_URL": "", "SANDBOX_API_KEY": "", "NO_COLOR": ""}
	maps.Copy(settings, env)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := os.ReadFile(filepath.Join(dir, "shell.log"))
			t.Logf("shell.log:\n%s", logs)
		}
	})
	return settings
}
