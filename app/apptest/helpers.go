package apptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/slackfake"
)

// Eicar is the EICAR test file: every antivirus, and the simulator's
// sandbox, calls it malicious.
const Eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

// DeferredWords is what the card of a link past the cap says until its
// deferred check is made (scan.DeferredProblem).
const DeferredWords = "not checked yet: too many links from you this hour; it will be checked at low priority"

// BlocksText returns the blocks' JSON without HTML escaping, so a test
// can look for "<@U…>" as Slack receives it.
func BlocksText(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.String()
}

// BotMessages returns the bot's messages among msgs.
func BotMessages(msgs []slackfake.Message) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range msgs {
		if m.Bot {
			out = append(out, m)
		}
	}
	return out
}

// MustContain fails unless got holds every one of wants.
func MustContain(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("answer lacks %q:\n%s", w, got)
		}
	}
}

// InOrder fails unless the wants appear in s in this order.
func InOrder(t *testing.T, s string, wants ...string) {
	t.Helper()
	at := 0
	for _, w := range wants {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("output lacks %q after byte %d:\n%s", w, at, s)
		}
		at += i + len(w)
	}
}

// WriteFile writes content to a file name in a directory of the test's
// own and returns its path.
func WriteFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitFor waits up to 15 s for ok.
func WaitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FileLines reads the JSON-lines file at path (none if it cannot be
// opened).
func FileLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// SkipIfShort skips t under -short (make test-short) with why: an
// end-to-end test that takes several seconds however fast the machine
// (a restart, a flood, a long history, a whole organisation), which make
// test runs. The quick end-to-end tests still run under -short.
func SkipIfShort(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + why)
	}
}
