package main

import (
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/app/apptest"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

// TestCheckSanitisesServiceTextForTheTerminal: `verdictbot check` prints
// a hostile service's words (here a family, a problem) with no escape
// sequence, in text and in JSON (whose values stay what the service said).
func TestCheckSanitisesServiceTextForTheTerminal(t *testing.T) {
	t.Parallel()
	_, base := simtest.Start(t, sim.Config{Profile: apptest.QuickSandbox()})
	bad := apptest.StartHostileService(t, base, map[string]string{"malfamily": apptest.TerminalAttack, "result": apptest.TerminalAttack, "msg": apptest.TerminalAttack})
	bad.On.Store(true)
	env := checkEnv(map[string]string{"REPUTATION_URL": bad.URL, "REPUTATION_API_KEY": e2eKey, "SANDBOX_URL": bad.URL, "SANDBOX_API_KEY": e2eKey})
	sample := apptest.WriteFile(t, "eicar.txt", apptest.Eicar)
	for _, args := range [][]string{{sample, "https://noresult.test/x"}, {"--json", sample, "https://noresult.test/x"}} {
		code, out, errOut := runCheckArgs(env, args...)
		t.Logf("check %v: exit %d\n%s%s", args, code, out, errOut)
		if bad.Rewritten("malfamily") == 0 {
			t.Fatal("the service sent no hostile family: the test proves nothing")
		}
		apptest.MustBeInertTerminal(t, "check "+strings.Join(args, " "), out+errOut)
	}
}
