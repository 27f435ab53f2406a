package main

import (
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/internal/e2etest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// TestCheckSanitisesServiceTextForTheTerminal: `verdictbot check` prints
// a hostile service's words (here a family, a problem) with no escape
// sequence, in text and in JSON (whose values stay what the service said).
func TestCheckSanitisesServiceTextForTheTerminal(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Profile: e2etest.QuickSandbox()})
	bad := e2etest.StartHostileService(t, base, map[string]string{"malfamily": e2etest.TerminalAttack, "result": e2etest.TerminalAttack, "msg": e2etest.TerminalAttack})
	bad.On.Store(true)
	env := checkEnv(map[string]string{"REPUTATION_URL": bad.URL, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": bad.URL, "SANDBOX_API_KEY": e2eKey})
	sample := e2etest.WriteFile(t, "eicar.txt", e2etest.Eicar)
	for _, args := range [][]string{{sample, "https://noresult.test/x"}, {"--json", sample, "https://noresult.test/x"}} {
		code, out, errOut := runCheckArgs(env, args...)
		t.Logf("check %v: exit %d\n%s%s", args, code, out, errOut)
		if bad.Rewritten("malfamily") == 0 {
			t.Fatal("the service sent no hostile family: the test proves nothing")
		}
		e2etest.MustBeInertTerminal(t, "check "+strings.Join(args, " "), out+errOut)
	}
}
