package shell

import "github.com/verdictbot/verdictbot/internal/e2etest"

// The shell's tests run it with the DNS, services and hostile proxy of
// the end-to-end tests (package internal/e2etest).

// e2eKey is the API key the tests give the services.
const e2eKey = e2etest.Key

// testOptions are the options every test starts from: the wiring as in
// production, but for the DNS (e2etest.Hosts).
func testOptions() Options { return Options{App: e2etest.Options()} }
