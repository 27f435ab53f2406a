package config

// SettingDoc is what the documentation says of one setting. The setting's
// default is not written here: it is Default's, so the documentation
// cannot disagree with the program.
type SettingDoc struct {
	// Meaning is what the setting does and takes, in GitHub Markdown as
	// docs/configuration.md shows it. Relative links are relative to docs/
	// and name their file (configuration.md#network-outbound-hosts-and-proxies,
	// not #network-…), since the same text is shown in several files there.
	Meaning string
	// DefaultNote, when set, follows the default in the tables: what an
	// unset setting means ("required", "off", "the alert channel") or how
	// a default value is read ("derived").
	DefaultNote string
}

// Doc returns the documentation of the setting name (one of Names), and
// whether there is one. A test holds settingDocs to Names, both ways.
func Doc(name string) (SettingDoc, bool) {
	d, ok := settingDocs[name]
	return d, ok
}

// DefaultText is the default of the setting name as the documentation
// shows it: the value Default holds (as Values shows it) in a code span,
// "—" when it is empty, followed by the setting's DefaultNote in
// parentheses.
func DefaultText(name string) string {
	v := Default().Values()[name]
	out := "—"
	if v != "" {
		out = "`" + v + "`"
	}
	if d, ok := settingDocs[name]; ok && d.DefaultNote != "" {
		out += " (" + d.DefaultNote + ")"
	}
	return out
}

// settingDocs is the documentation of every setting, keyed by its name.
// Ranges written in a meaning are the ones configRules checks; keep the
// two in step.
var settingDocs = map[string]SettingDoc{
	"SLACK_BOT_TOKEN": {Meaning: "bot token, `xoxb-…`", DefaultNote: "required"},
	"SLACK_APP_TOKEN": {Meaning: "app-level token with `connections:write`, `xapp-…`", DefaultNote: "required"},
	"SLACK_API_URL": {Meaning: "Web API base; its host is also trusted to receive the bot token (file downloads). " +
		"`https://`, or plain `http://` only to a loopback host (`127.0.0.1`, `::1`, `localhost`: a fake Slack in tests)"},
	"SLACK_ADMIN_USER_TOKEN": {Meaning: "optional `xoxp-…` user token of a workspace admin or owner, used only by quarantine to delete " +
		"messages and files (see [quarantine](quarantine.md#getting-the-admin-token-safely)); sent only to `SLACK_API_URL`, never logged"},

	"REPUTATION_URL": {Meaning: "URL reputation service base URL (may carry a path prefix): `https://`, or plain `http://` only to a " +
		"loopback host or a host in `VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS` (the key is in the URL path); see " +
		"[The two services](configuration.md#the-two-services-which-products-keys-and-base-urls)", DefaultNote: "required"},
	"REPUTATION_API_KEY": {Meaning: "its key (sent in the URL path; never logged)", DefaultNote: "required"},
	"SANDBOX_URL":        {Meaning: "sandbox service base URL; `https://`, or plain `http://` as for `REPUTATION_URL`. Unset: files are listed as not checked", DefaultNote: "no sandbox"},
	"SANDBOX_API_KEY":    {Meaning: "its key", DefaultNote: "required with `SANDBOX_URL`"},

	"VERDICTBOT_DATA_DIR": {Meaning: "where durable state is kept (the embedded file `verdictbot.db`; with `VERDICTBOT_DATABASE_URL`, only temporary files)"},
	"VERDICTBOT_DATABASE_URL": {Meaning: "PostgreSQL connection string (`postgres://user:pass@host:5432/db?sslmode=…`; `search_path=` picks a schema). " +
		"Unset: the embedded file in `VERDICTBOT_DATA_DIR`; set: all state in PostgreSQL, `VERDICTBOT_DATA_DIR` holds only temporary files, " +
		"and several replicas may share it. Its schema is migrated at start under a lock (`verdictbot migrate` does it alone); the password " +
		"is never logged", DefaultNote: "the embedded file"},
	"VERDICTBOT_ADMINS": {Meaning: "comma-separated user ids (`U…`, or `W…` on Enterprise Grid) who may restore verdicts, change channel " +
		"settings and the allowlist, release quarantined messages, and decide reports"},
	"VERDICTBOT_ADMIN_GROUP": {Meaning: "a user group id (`S…`) whose members are admins too (refreshed every 5 minutes). While lookups fail " +
		"the last members are kept for 15 minutes after the last lookup that worked, then nobody is an admin through the group until one " +
		"works (logged; `verdictbot_admin_group_expired`)"},
	"VERDICTBOT_REPORTERS": {Meaning: "who may report fp/fn: `anyone` or `admins`. Either way a link's own poster (or whoever `/scan`-ned it) " +
		"may not report it as a false positive unless an admin"},
	"VERDICTBOT_CHANNEL_MODE": {Meaning: "`quiet` (card only when suspicious or malicious, a reaction for clean), `verbose` (a card for " +
		"everything, shown at once and updated), `off`; per channel: `/scan channel quiet|verbose|off`"},
	"VERDICTBOT_ALLOW_DOMAINS":    {Meaning: "extra allowlisted domains (subdomains included); Slack's own domains are always allowed"},
	"VERDICTBOT_INTERNAL_DOMAINS": {Meaning: "your internal domains: never sent to a service"},
	"VERDICTBOT_MAX_LINKS": {Meaning: "distinct links checked per message (1–200), counted after normalisation, the allowlist and (with " +
		"`VERDICTBOT_URL_QUERY=strip`) the query's removal, so repeats and allowlisted links never push a link out; past it the message " +
		"is *could not check*: never ✅, a card even in quiet channels saying how many were not checked, counted in " +
		"`verdictbot_unchecked_targets_total{kind=\"url\"}`"},
	"VERDICTBOT_VERDICT_TTL":    {Meaning: "how long a verdict for the same URL is reused"},
	"VERDICTBOT_URL_DEADLINE":   {Meaning: "how long a URL analysis may take before the card says \"could not check\" (at least `10s`)"},
	"VERDICTBOT_CLEAN_REACTION": {Meaning: "the reaction a clean message gets in quiet channels"},
	"VERDICTBOT_RESOLVE_HOSTS": {Meaning: "resolve each link's host (system resolver, 2 s timeout, cached 5 min) right before it is sent; a " +
		"name whose every address is private, loopback, link-local or otherwise special is not sent (\"resolves to a private address\"). " +
		"A failed lookup does not block the scan. `false`: no lookups"},
	"VERDICTBOT_URL_QUERY": {Meaning: "`keep` sends links whole; `strip` removes the query (`?…`) before a link leaves the workspace, so " +
		"magic links and reset tokens stay inside: the card shows the URL as sent and \"query not sent\", and links equal without their " +
		"query are checked once"},
	"VERDICTBOT_SCAN_FILES": {Meaning: "whether files shared in Slack are downloaded and sent to the sandbox, in channels without their own " +
		"`/scan channel files on|off`"},

	"VERDICTBOT_THRESHOLD_PHISHING":    {Meaning: "score (0–1 or 0–100) at which a URL is suspicious, then malicious (`off`: never)"},
	"VERDICTBOT_THRESHOLD_ADVERTISING": {Meaning: "the same for advertising, which is at worst suspicious by default"},
	"VERDICTBOT_THRESHOLD_MALICIOUS":   {Meaning: "the same for the malicious score"},
	"VERDICTBOT_THRESHOLD_ILLEGAL":     {Meaning: "the same for the illegal score"},

	"VERDICTBOT_MAX_FILE_BYTES":   {Meaning: "larger files are not downloaded (the sandbox's usual limit)"},
	"VERDICTBOT_SKIP_FILETYPES":   {Meaning: "Slack file types never sent to the sandbox"},
	"VERDICTBOT_SANDBOX_DEADLINE": {Meaning: "how long a sandbox analysis may take before the card says \"could not check\" (at least `1m`)"},
	"VERDICTBOT_MAX_SCREENSHOTS":  {Meaning: "sandbox screenshots posted in the thread per file (0–10)"},
	"VERDICTBOT_SCREENSHOT_TIMEOUT": {Meaning: "how long fetching one file's screenshots may take (1s–30m); the verdict is posted first, and " +
		"the card says when they could not be fetched"},
	"VERDICTBOT_FILE_VERDICT_TTL":    {Meaning: "how long a file's verdict (by sha256) is reused"},
	"VERDICTBOT_SANDBOX_RUN_RATE":    {Meaning: "sandbox uploads per second (client-side budget, shared by the replicas)"},
	"VERDICTBOT_SANDBOX_REPORT_RATE": {Meaning: "other sandbox requests per second"},

	"VERDICTBOT_RECHECK_SCHEDULE": {Meaning: "when the recheck job runs (cron, five fields)"},
	"VERDICTBOT_RECHECK_AFTER":    {Meaning: "ages (after first seen) at which a URL is checked again (increasing)"},
	"VERDICTBOT_RECHECK_MAX": {Meaning: "URLs rechecked per run at most, oldest due first; the links deferred past " +
		"`VERDICTBOT_USER_LINKS_PER_HOUR` count in it too (each kind gets at least half when both are due)"},
	"VERDICTBOT_ALERT_CHANNEL": {Meaning: "channel id (`C…`, `G…`) that gets a summary when a recheck changes a verdict, the requests for an " +
		"admin's *Remove all*, and (by default) the reports to security; invite the bot there"},

	"VERDICTBOT_REPORT_CHANNEL": {Meaning: "channel id where messages members report to security ([Report to security](usage.md#report-to-security)) " +
		"get their triage card; with neither this nor the alert channel set, reporting is off (the reporter is told)", DefaultNote: "the alert channel"},
	"VERDICTBOT_REPORT_EMOJI": {Meaning: "an emoji name (e.g. `phish`) whose reaction on a message reports it to security, as the shortcut does", DefaultNote: "off"},
	"VERDICTBOT_REPORT_INCLUDE_TEXT": {Meaning: "`true`: the triage card quotes the reported message's text (otherwise only its permalink, " +
		"author, links and files; the text stays in its conversation)"},

	"VERDICTBOT_BACKFILL_MAX": {Meaning: "the longest history `/scan channel backfill` reads (1h–2160h)"},
	"VERDICTBOT_BACKFILL_ON_JOIN": {Meaning: "a window such as `7d`: when the bot is added to a channel it checks that much of its history, " +
		"as `/scan channel backfill` does ([Checking a channel's history](usage.md#checking-a-channels-history))", DefaultNote: "off"},

	"VERDICTBOT_PROTECTED_DOMAINS": {Meaning: "registrable domains (comma-separated, e.g. `acme-corp.com,acme.io`) whose lookalikes make a " +
		"link suspicious, beside the built-in list of commonly impersonated sign-in and payment domains (`signals/protected.txt`), the " +
		"workspace's own email domains and the allowlist"},
	"VERDICTBOT_LOOKALIKE": {Meaning: "`off`, `suspicious` or `malicious`: the least verdict of a link to a lookalike of a protected domain " +
		"(a label that shows one domain and opens another is always at least suspicious)"},

	"VERDICTBOT_RETENTION": {Meaning: "how long cards, verdict history, reports and targets are kept (90 days; at least `48h`); pruned hourly"},

	"VERDICTBOT_QUARANTINE": {Meaning: "`off`, `malicious` or `suspicious`: the lowest verdict whose message is removed (per channel: " +
		"`/scan channel quarantine …`; see [quarantine](quarantine.md))"},
	"VERDICTBOT_QUARANTINE_RETENTION": {Meaning: "how long a removed message is kept for release (30 days; at least `1h`); pruned hourly"},
	"VERDICTBOT_QUARANTINE_FILES": {Meaning: "what a file found at the quarantine level removes: `message`, the message that shared it " +
		"(`chat.delete`; the file stays in Slack, no longer shared there), or `delete`, the file itself, workspace-wide (`files.delete`; " +
		"the message stays)"},
	"VERDICTBOT_QUARANTINE_FLIP_MAX": {Meaning: "messages one recheck may remove for one URL (paced, journalled); above it the removals wait " +
		"for an admin's *Remove all* in `VERDICTBOT_ALERT_CHANNEL` (0–10000; `0`: every recheck removal waits)"},
	"VERDICTBOT_LEASE": {Meaning: "with `VERDICTBOT_DATABASE_URL`: how soon a replica that died (kill -9, node lost) has its unfinished work " +
		"taken over by another (5s–10m); each replica heartbeats every lease/5 and counts one silent for 3/5 of it as dead. A replica " +
		"stopped with SIGTERM hands its work over within lease/5. It is also how long a term of the lead of the event sender, the " +
		"recheck or retention holds unrenewed: a leader whose database session ends is replaced within it " +
		"([Several replicas](operations.md#several-replicas))"},

	"VERDICTBOT_WORKERS":    {Meaning: "workers handling Slack payloads (1–256)"},
	"VERDICTBOT_QUEUE_SIZE": {Meaning: "payloads waiting for a worker"},

	"VERDICTBOT_REPUTATION_RUN_RATE":    {Meaning: "URL submissions per second (client-side budget, shared by the replicas)"},
	"VERDICTBOT_REPUTATION_REPORT_RATE": {Meaning: "other URL-service requests per second"},
	"VERDICTBOT_USER_LINKS_PER_HOUR": {Meaning: "links and files one person (or integration) may have sent to the services within any hour, " +
		"counted across channels and, with PostgreSQL, across replicas; past it their new links are checked later, at low priority, by the " +
		"recheck job (their cards say \"not checked yet: too many links from you this hour; it will be checked at low priority\", never ✅, " +
		"and get the verdict when it comes; quarantine acts on it), their files are not checked (\"not checked: too many links and files " +
		"from you this hour\"), and `VERDICTBOT_ALERT_CHANNEL` gets one line per person per hour. Cached verdicts, checks of a link already " +
		"being analysed, and files the sandbox already knows are not counted; admins are exempt. `0`: no cap (0–1000000)"},
	"VERDICTBOT_MAX_CONCURRENT": {Meaning: "URL analyses in flight at once; others wait as \"queued\". `0` derives it from the URL service's " +
		"budgets (`VERDICTBOT_REPUTATION_RUN_RATE`, `VERDICTBOT_REPUTATION_REPORT_RATE`): 2 × min(run rate, report rate ÷ 13 calls per analysis) × 60 s per analysis, at least 64 and at most 4096 (64 with the " +
		"default budgets). One person holds at most half of them (see [What it does in a channel](usage.md#what-it-does-in-a-channel))",
		DefaultNote: "derived"},
	"VERDICTBOT_SERVICE_CA_FILE":      {Meaning: "extra PEM CA bundle for on-premises services"},
	"VERDICTBOT_SERVICE_INSECURE_TLS": {Meaning: "skip TLS verification (lab appliances only)"},
	"VERDICTBOT_SERVICE_PLAIN_HTTP_HOSTS": {Meaning: "comma-separated host names (no scheme or port) that `REPUTATION_URL` and `SANDBOX_URL` " +
		"may reach over plain `http://` besides loopback ones: a simulator or an appliance on a private network (`deploy/compose.yaml` " +
		"names its simulator, `sim`). Their API key then crosses that network in clear text; prefer https"},

	"VERDICTBOT_HTTP_ADDR":  {Meaning: "where `/healthz`, `/readyz` and `/metrics` are served (`off` to disable)"},
	"VERDICTBOT_LOG_LEVEL":  {Meaning: "`debug`, `info`, `warn`, `error`"},
	"VERDICTBOT_LOG_FORMAT": {Meaning: "`text` or `json`"},

	"VERDICTBOT_EVENTS_URL": {Meaning: "webhook that gets each event as one JSON object per `POST` (`Content-Type: application/json`). " +
		"`https://` only; plain `http://` only to a loopback host (`127.0.0.1`, `::1`, `localhost`: a forwarder on the same machine) — " +
		"anything else stops start-up with one line. Its path may hold a token: only its host is ever logged. A redirect is never " +
		"followed (see [Delivery](siem.md#delivery))"},
	"VERDICTBOT_EVENTS_SECRET": {Meaning: "HMAC-SHA256 key that signs each request (see [Checking the signature](siem.md#checking-the-signature)). " +
		"**Required** unless `VERDICTBOT_EVENTS_URL`'s host is loopback (`127.0.0.0/8`, `::1`, `localhost` itself, not a name that " +
		"resolves there): then it may be unset, and events go unsigned to the local forwarder (a warning at start). Use 32 random bytes " +
		"or more (`openssl rand -hex 32`). Never logged"},
	"VERDICTBOT_EVENTS_FILE": {Meaning: "append each event as one line to this file (created `0600`; each line written at once, fsynced " +
		"within 100 ms with the lines beside it); `-` for standard output"},
	"VERDICTBOT_EVENTS_MAX_QUEUED": {Meaning: "events kept for the webhook while it is down; beyond that the oldest are dropped " +
		"(`verdictbot_events_dropped_total{reason=\"queue_full\"}` and a log line)"},
}
