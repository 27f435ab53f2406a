// Package sandbox is a client for the sandbox analysis service
// (docs/specs/sandbox-api.md; the vendor's "Cloud Sandbox API Reference",
// https://doc.sorbsecurity.com/sorbsecurity-cloud-sandbox-api-reference),
// a CAPEv2-derived service (its paths, error envelope and screenshot archive
// match CAPEv2 as of 2021).
//
// It covers every operation the spec documents (§4):
//
//	#1  CreateFile    POST tasks/create/file/                (run budget)
//	#2  FileView      GET  files/view/{md5|sha1|sha256}/<h>/
//	#3  SearchTasks   GET  tasks/search/{md5|sha1|sha256}/<h>/
//	#4  TaskInfo      GET  tasks/view/<id>/
//	#5  Status        GET  tasks/status/<id>/                 (and Wait, which polls it)
//	#6  SimpleReport  GET  tasks/get/simple_report/<id>/
//	#7a Screenshots   GET  tasks/get/screenshot/<id>/         (archive, listed)
//	#7b Screenshot    GET  tasks/get/screenshot/<id>/<n>/     (and ScreenshotsByNumber)
//
// The API key travels in the path (/apineo/<key>/…, spec §5); it never
// appears in an error or a log line (the shared HTTP core redacts it).
//
// # Errors
//
// A failure the service reports in its envelope (`error` true with
// `error_value`, spec §7; CAPE answers these with HTTP 200) is an
// *APIError carrying the service's text unchanged. The texts CAPE and the
// simulator are known to send have sentinels (ErrTaskDoesNotExist,
// ErrStillAnalyzing, …) matched with errors.Is. Throttling is a
// *RateLimitError, a non-JSON answer an *HTTPError and a network failure a
// *TransportError; ReasonOf classifies all of them. Arguments the service could never accept (an
// impossible hash, an empty task id) are refused before any request with an
// *InputError.
//
// # Defaults
//
//   - Budgets (spec §8 gives no numbers): run 1 request/s with a burst of 2,
//     report 5 requests/s with a burst of 10 (DefaultRunLimit,
//     DefaultReportLimit). CAPE's own defaults were stricter ([filecreate]
//     1/s and 2/min, others 1/s and 5/min, CAPEv2's rate limits); an operator with
//     known limits sets them with WithRateLimits. A zero Limit is unlimited.
//   - Per attempt: 30 s for reads (WithTimeout), 5 min for an upload
//     (DefaultUploadTimeout, WithUploadTimeout): CAPE accepts samples up to
//     30,000,000 bytes (CAPEv2's tasks/create/file).
//   - Retries: the core's (3 retries, 500 ms–30 s full-jitter backoff,
//     Retry-After honoured up to 2 min). An upload is retried only when the
//     request never left the client or the service answered 429, and only
//     if its reader can be rewound (io.Seeker).
//   - Wait: first status check after 1 s, ×2 per check up to 60 s, ±10 %
//     jitter (DefaultWaitBackoff); overall deadline 45 min
//     (DefaultWaitDeadline), since a normal CAPE run takes 200 s of analysis
//     plus up to minutes of processing and a queue can hold a task pending
//     for long (CAPEv2's task statuses; a public client found a 5-minute budget too short).
//   - Screenshots: at most DefaultMaxScreenshots images per call,
//     MaxImageBytes per image, MaxScreenshotBytes in all, MaxArchiveBytes of
//     archive.
//
// Timestamps (added_on, started_on, completed_on) are kept as
// NaiveTime: their zone is not documented (spec §2), so the client
// never computes ages from them; Wait measures time on the client's clock.
package sandbox
