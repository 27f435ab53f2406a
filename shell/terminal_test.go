package shell

import (
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// TestShellSanitisesServiceTextForTheTerminal: the shell prints cards and
// the bot's answers holding a hostile service's words (a family, a file
// type, a status) with no escape sequence and no bidi override.
func TestShellSanitisesServiceTextForTheTerminal(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Profile: apptest.QuickSandbox()})
	bad := apptest.StartHostileService(t, base, map[string]string{"malfamily": apptest.TerminalAttack, "file_type": apptest.TerminalAttack, "added_on": apptest.TerminalAttack})
	bad.On.Store(true)
	sample := apptest.WriteFile(t, "invoice.exe", apptest.Eicar)
	env := map[string]string{"REPUTATION_URL": bad.URL, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": bad.URL, "SANDBOX_API_KEY": e2eKey}
	code, out, errOut := runShellScript(t, env, "file "+sample+"\n/scan hash 44d88612fea8a8f36de82e1278abb02f\n/scan status 1000\n", "--wait", "20s")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout:\n%s", code, errOut, out)
	}
	for _, key := range []string{"malfamily", "file_type", "added_on"} {
		if bad.Rewritten(key) == 0 {
			t.Errorf("the service sent no hostile %s: the test proves nothing about it", key)
		}
	}
	apptest.MustBeInertTerminal(t, "shell", out)
	// The card, and both answers, show the service's words, made inert.
	apptest.InOrder(t, out, "── card #1 ──", "[U+202E]gnp.exe", "» File", "[U+202E]gnp.exe", "» Sandbox task", "[U+202E]gnp.exe")
}
