// Package sim is a deterministic simulator of the two analysis services,
// the URL reputation service (docs/specs/url-reputation-api.md, under
// /api/<key>/) and the sandbox (docs/specs/sandbox-api.md, under /apineo/<key>/),
// served by one http.Handler. Tests start it with simtest.Start;
// `verdictbot sim` reads its flags with AddFlags and serves it on a port
// with Serve; `verdictbot shell` and `verdictbot check --sim` run one on a
// free loopback port with StartLocal.
//
// It models the services on CAPEv2 as of 2021, which the sandbox's
// paths, error envelope and screenshot archive match; every error text
// is byte-exact. Behaviour the specs leave open is an ASSUMPTION, marked
// so where it is implemented.
//
// # Gateway (both services)
//
// Each request under a service prefix goes through, in order: injected
// faults (Faults: delay, 5xx HTML page, forced 429); route shape (404
// Django HTML page when nothing matches); the optional 301 to the slashed
// path (RedirectNoSlash, GET and HEAD only); the key (403, invented texts
// {"error":true,"msg":"invalid api key"} and
// {"error":true,"error_value":"invalid api key"}); quota and token buckets
// (429 with Retry-After); method (URL service: JSON "invalid method";
// sandbox: 405 {"detail":"Method \"X\" not allowed."}); the operation.
// Paths are accepted with and without the trailing slash.
//
// # Progression
//
// FastProfile (the default) moves a task one status per status poll; the
// poll after the one that showed a status moves the task on, and result,
// report and view endpoints never move it. RealisticProfile and custom
// Profiles move tasks by elapsed time on Config.Now. URL tasks go pending →
// processing → completed; sandbox tasks pending → running → completed →
// reporting → reported. The host d<N>s.test and the file marker
// SIM:DURATION=<d> give one task a total time of exactly N seconds or d,
// on the clock even in FastProfile, split in the realistic proportions.
//
// See docs/development.md, "The simulator", for the full table of URL
// verdict rules, sentinel hosts, file markers and switches.
package sim
