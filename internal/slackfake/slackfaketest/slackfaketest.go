// Package slackfaketest starts a fake Slack (package slackfake) for a test.
// It is kept apart from slackfake, which `verdictbot shell` links, so the
// production binary does not link testing.
package slackfaketest

import (
	"testing"

	"github.com/verdictbot/verdictbot/internal/slackfake"
)

// Start starts a fake for a test and closes it when the test ends.
func Start(t testing.TB, opts ...slackfake.Option) *slackfake.Server {
	t.Helper()
	s, err := slackfake.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
