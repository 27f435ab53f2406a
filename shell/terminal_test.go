package shell

import (
	"testing"

	"github.com/verdictbot/verdictbot/internal/e2etest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// TestShellSanitisesServiceTextForTheTerminal: the shell prints cards and
// the bot's answers holding a hostile service's words (a family, a file
// type, a status) with no escape sequence and no bidi override.
func TestShellSanitisesServiceTextForTheTerminal(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Profile: e2etest.QuickSandbox()})
	bad := e2etest.StartHostileService(t, base, map[string]string{"malfamily": e2etest.TerminalAttack, "file_type": e2etest.TerminalAttack, "added_on": e2etest.TerminalAttack})
	bad.On.Store(true)
	sample := e2etest.WriteFile(t, "invoice.exe", e2etest.Eicar)
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
	e2etest.MustBeInertTerminal(t, "shell", out)
	// The card, and both answers, show the service's words, made inert.
	e2etest.InOrder(t, out, "── card #1 ──", "[U+202E]gnp.exe", "» File", "[U+202E]gnp.exe", "» Sandbox task", "[U+202E]gnp.exe")
}
