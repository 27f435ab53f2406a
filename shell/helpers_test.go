package shell

import "github.com/verdictbot/verdictbot/app/apptest"

// The shell's tests run it with the DNS, services and hostile proxy of
// the end-to-end tests (package app/apptest).

// e2eKey is the API key the tests give the services.
const e2eKey = apptest.Key

// testOptions are the options every test starts from: the wiring as in
// production, but for the DNS (apptest.Hosts).
func testOptions() Options { return Options{App: apptest.Options()} }
