package store

import (
	"context"
	"time"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/verdict"
)

// State is the state layer as the app uses it: every domain record the bot
// keeps, behind one method set that both backends implement — the embedded
// file (package store/bolt) and PostgreSQL (package store/pg). Package
// store/storetest is the conformance suite both must pass.
//
// Each method is one transaction: what it changes is changed entirely or
// not at all, and the read-modify-write methods (UpdateCard, UpsertCard,
// RecordJobs, RecordVerdict, FinishAnalysis, RecheckFailed, AddCard,
// PutWorkspaces, AddUserReport, UpdateUserReport, StartBackfill,
// UpdateBackfill, ClaimBackfill) are atomic against
// concurrent callers, in this process or, on PostgreSQL, in another
// replica.
//
// What only one backend can do is declared here too, with a neutral value
// on the other (Ping, Size, OnReplicas, SweepEvery, the shared commits), so
// that no caller needs to know which backend it has. What only makes sense
// for the file itself (its record counts, its offline compaction) stays in
// store/bolt.
type State interface {
	// Jobs and event ids (jobs.go).
	RecordJobs(jobs []*Job) ([]bool, error)
	SeenEvent(eventID string) (bool, error)
	FinishJob(id uint64) error
	PendingJobs() ([]Job, error)
	PruneEvents(cutoff time.Time, limit int) (int, error)

	// Cards (cards.go).
	PutCard(rec *CardRecord) error
	Card(ref card.Ref) (*CardRecord, error)
	CardByTS(channel, cardTS string) (*CardRecord, error)
	UpdateCard(ref card.Ref, fn func(rec *CardRecord) error) (*CardRecord, error)
	// SettleCard is UpdateCard that also links a recorded target to the
	// card (AddCard) in the same transaction: the write showing a verdict.
	SettleCard(ref card.Ref, target string, fn func(rec *CardRecord) error) (*CardRecord, error)
	UpsertCard(ref card.Ref, fn func(rec *CardRecord, exists bool) error) (*CardRecord, error)
	// UpdateCardShared and UpsertCardShared are UpdateCard and UpsertCard
	// for the writes every link makes (its card's start, its verdict):
	// where the backend can (the embedded file), concurrent calls share
	// one transaction and its fsync, and each returns once its write is
	// durable. fn may then be called more than once, each time with the
	// stored record read afresh: it must change nothing but rec. PostgreSQL
	// commits each write on its own: they are UpdateCard and UpsertCard.
	UpdateCardShared(ref card.Ref, fn func(rec *CardRecord) error) (*CardRecord, error)
	UpsertCardShared(ref card.Ref, fn func(rec *CardRecord, exists bool) error) (*CardRecord, error)
	UnfinishedCards() ([]*CardRecord, error)
	RecentCards(channel string, n int) ([]*CardRecord, error)
	CardsOfTask(taskID string) ([]*CardRecord, error)
	// Final cards Slack refused for longer than the card's own retries:
	// cards.Messages.RunStale shows them again once Slack answers. Kept
	// here so that a restart during a long Slack outage, or another
	// replica, goes on with them.
	//
	// MarkCardStale records ref as stale since at; a card already marked
	// keeps its first time, and a card not stored is not marked (no
	// error). Removing the card removes its mark.
	MarkCardStale(ref card.Ref, at time.Time) error
	// StaleCards returns up to limit stale cards, oldest first.
	StaleCards(limit int) ([]StaleCard, error)
	// StaleCardDone forgets ref's mark (shown, gone or given up); absent:
	// no error.
	StaleCardDone(ref card.Ref) error

	// Analyses in flight, targets, verdict history, rechecks (targets.go).
	PutAnalysis(a Analysis) error
	Analysis(service, target string) (Analysis, error)
	DeleteAnalysis(service, target string) error
	Analyses() ([]Analysis, error)
	RecordVerdict(v Verdict, ref *card.Ref, schedule Schedule, recheck bool) (Target, verdict.Level, error)
	FinishAnalysis(service string, v Verdict, schedule Schedule, recheck bool) (Target, verdict.Level, error)
	AddCard(target string, ref card.Ref) error
	Target(target string) (Target, error)
	History(target string) ([]Verdict, error)
	Due(now time.Time, limit int) ([]Target, error)
	RecheckFailed(target string, schedule Schedule) error
	TargetOfTask(taskID string) (string, error)

	// Reports, channel settings, the runtime allowlist (audit.go). A
	// setting's change queues the events out in its own transaction (the
	// outbox, see Outgoing).
	RecordReport(r Report) error
	Reports(target string) ([]Report, error)
	ChannelMode(channel string) (string, error)
	SetChannelMode(channel, mode string, out ...*Outgoing) error
	ChannelFiles(channel string) (string, error)
	SetChannelFiles(channel, v string, out ...*Outgoing) error
	Allow(domain, by string, out ...*Outgoing) error
	// Disallow queues out only when it removed the domain.
	Disallow(domain string, out ...*Outgoing) (bool, error)
	AllowList() ([]AllowEntry, error)

	// Quarantine: messages removed and kept for release, and each
	// channel's level (quarantine.go).
	PutQuarantined(q Quarantined) error
	Quarantined(channel, ts string) (Quarantined, error)
	PruneQuarantined(cutoff time.Time) (int, error)
	ChannelQuarantine(channel string) (string, error)
	SetChannelQuarantine(channel, level string, out ...*Outgoing) error

	// Removals a recheck flip decided, paced, claimed one at a time, and
	// the batches that wait for an admin's Remove all (removals.go).
	UpdateCardQueue(ref card.Ref, fn func(rec *CardRecord) (*Removal, error)) (*CardRecord, error)
	QueueRemovals(rs []Removal) error
	ClaimRemoval(now time.Time) (Removal, bool, error)
	FinishRemoval(ref card.Ref) error
	RetryRemoval(ref card.Ref, next time.Time, failed bool) error
	PutRemovalBatch(b RemovalBatch) error
	RemovalBatch(id string) (RemovalBatch, error)
	SetBatchAlert(id, channel, ts string) error
	ApproveBatch(id, by string, at time.Time) (b RemovalBatch, released int, first bool, err error)
	RemovalCounts() (queued, held int, err error)

	// Prune removes what is older than cutoff (now minus
	// VERDICTBOT_RETENTION), and keeps what is still in use:
	//
	//   - final cards last updated before cutoff, with their card-ts index
	//     entries (a card still being analysed, or whose post was
	//     interrupted, stays whatever its age);
	//   - verdicts and reports recorded before cutoff (what /scan history
	//     shows within the window stays);
	//   - targets last checked before cutoff that have no recheck or
	//     deferred check planned, no analysis in flight and no card left,
	//     with their due and task index entries;
	//   - processed event ids seen before cutoff;
	//   - task index entries whose target is gone;
	//   - user reports (Report to security) last updated before cutoff,
	//     open or decided, with their reporters and index entries;
	//   - backfills finished (not running) and last updated before
	//     cutoff; a running one stays whatever its age.
	//
	// It works in batches of short transactions, so it can run while the
	// bot is busy; a failure leaves what was pruned so far pruned.
	Prune(cutoff time.Time) (PruneStats, error)

	// Lead tries to become the one process that runs the periodic job
	// named job (the event sender, the recheck, retention): ok is false
	// while another process leads it. The lead is a term (Lease) with a
	// fencing token; it lasts until released, or (PostgreSQL) until it is
	// not renewed within VERDICTBOT_LEASE, its renewing session ends, or
	// the process dies. The embedded file is opened by one process only,
	// so it always leads, unfenced.
	Lead(ctx context.Context, job string) (lease Lease, ok bool, err error)
	// ClaimRecheck makes the caller the one that rechecks target now:
	// ok when the target's recheck is due by dueBy; it is then held off
	// (due at until: the later of now and dueBy, plus hold, the longest a
	// recheck takes) until the recheck's verdict (RecordVerdict,
	// FinishAnalysis) or RecheckFailed plans its next one. Not ok when it
	// is not due (another run claimed it, or it was rechecked). Under a
	// Fence (not zero), only while that term is the job's live one:
	// ErrNotLeader otherwise.
	ClaimRecheck(target string, dueBy time.Time, hold time.Duration, f Fence) (until time.Time, ok bool, err error)
	// ReleaseRecheck gives back a claim whose recheck did not happen (the
	// process is stopping): the target is due at dueAt again, unless its
	// recheck was planned anew since the claim (its due time is no longer
	// until).
	ReleaseRecheck(target string, until, dueAt time.Time) error

	// Deferred checks: URLs not sent because their requesters had used
	// their allowance, checked later by the recheck.
	//
	// DeferCheck records that the check of the URL target was deferred
	// for card: the target is recorded if new (kind url, level Unknown,
	// no verdict, no recheck planned), card is linked to it, and its
	// deferred check is due at `at`, or at the earlier time it was due
	// already. A check claimed (ClaimDeferred) is due at `at` again: the
	// check under way may not see card.
	DeferCheck(target string, ref card.Ref, at time.Time) error
	// DueDeferred returns up to limit targets whose deferred check is due
	// at now, the oldest due first.
	DueDeferred(now time.Time, limit int) ([]Target, error)
	// ClaimDeferred makes the caller the one that makes target's deferred
	// check now, as ClaimRecheck does for rechecks (same hold, same
	// fence): ok when it is due by dueBy; it is then due at until.
	ClaimDeferred(target string, dueBy time.Time, hold time.Duration, f Fence) (until time.Time, ok bool, err error)
	// EndDeferred ends a claimed deferred check: if it is still the claim's
	// (due at until: nothing deferred it again since), it is due at next,
	// or no longer pending when next is zero.
	EndDeferred(target string, until, next time.Time) error

	// The durable queue of outgoing events (eventqueue.go).
	EventQueue

	// TakeAllowance records one use of key's allowance, limit uses per
	// sliding window (VERDICTBOT_USER_LINKS_PER_HOUR: key a requester,
	// a use one submission to a service), if one is left: ok is false,
	// and nothing is recorded, when key had limit uses within the window
	// ending now. Atomic against concurrent callers; on PostgreSQL the
	// counts are shared by the replicas.
	TakeAllowance(key string, limit int, window time.Duration) (ok bool, err error)

	// ClaimReport makes holder the one that sends the verdict report key
	// (a task, an option and a category) to the URL service: ok when no
	// other holder's claim on key is live. A claim lasts until
	// ReleaseReport, or until hold has passed (its process died); holder's
	// own live claim is renewed (a click delivered again after the
	// process that handled it was killed). On PostgreSQL the claims are
	// shared by the replicas, so two clicks on two cards of one task,
	// handled by two replicas at once, send one report.
	ClaimReport(key, holder string, hold time.Duration) (ok bool, err error)
	// ReleaseReport ends holder's claim on key; another holder's stays.
	ReleaseReport(key, holder string) error

	// Flips not announced yet. A recheck's verdict that changes a URL's
	// level (RecordVerdict or FinishAnalysis with recheck set, from a
	// level other than pending) records the flip in the same write; the
	// recheck job says it is announced (its cards updated, its removals
	// queued) with FlipAnnounced. A process that died in between leaves it
	// pending, and the next run announces it. A flip already pending keeps
	// its level before (the cards still show that one).
	//
	// PendingFlips returns up to limit flips not announced, oldest first.
	PendingFlips(limit int) ([]PendingFlip, error)
	// FlipAnnounced forgets target's pending flip if the target is still
	// at level (a newer flip stays pending).
	FlipAnnounced(target string, level verdict.Level) error

	// Analysis durations: what the learned polling schedules learn from,
	// kept so that a restart, or another replica, plans from them rather
	// than from the prior. service names the learner ("reputation",
	// "sandbox").
	//
	// RecordDurations records that analyses of service took ds (oldest
	// first), in one write, keeping the latest keep durations of service
	// (the older ones are dropped in the same write). Atomic against
	// concurrent callers; on PostgreSQL the replicas share one list per
	// service.
	RecordDurations(service string, ds []time.Duration, keep int) error
	// Durations returns up to keep of service's latest durations, oldest
	// first (none recorded: empty, no error).
	Durations(service string, keep int) ([]time.Duration, error)

	// The workspaces of an Enterprise Grid install (workspaces.go), shared
	// by the replicas on PostgreSQL.
	//
	// PutWorkspaces records ws (by TeamID, replacing what was there) in one
	// transaction. A record whose Granted is unchanged keeps its Changed.
	// Changed is the store's to set: the store's clock for a record new or
	// whose Granted changed, the stored one otherwise (ws's is ignored).
	// Of two entries of ws with one TeamID the last is recorded. A
	// workspace without a TeamID is ErrNoTeamID, and nothing is recorded.
	PutWorkspaces(ws []Workspace) error
	// Workspaces returns every workspace recorded, by TeamID (bytewise;
	// none: empty, no error).
	Workspaces() ([]Workspace, error)

	// Messages reported to the security team (userreports.go), shared by
	// the replicas on PostgreSQL: one UserReport per message, its
	// reporters gathered on it.
	//
	// AddUserReport records that r.User reported the message (channel, ts):
	// the report is created at the first reporter (fn, if set, fills a new
	// report's fields: author, thread), and a user already among its
	// reporters is not added again (added false). One transaction.
	//
	// fn is called once, only when the report is new; what it sets in
	// Channel, TS, Reporters, Created and Updated is the store's to set
	// and is overwritten. A reporter added is appended to Reporters, with
	// At the store's clock when r.At is zero, and moves Updated; a user
	// already there leaves the report as it was (nothing is written). rep
	// is the report as stored. Concurrent calls for one message, in any
	// replica, each add their user once, in the order they take the
	// report. No channel, ts or r.User: ErrBadUserReport; fn giving the
	// new report a triage card that is another report's: ErrTriageTaken.
	AddUserReport(channel, ts string, r Reporter, fn func(rep *UserReport)) (rep UserReport, added bool, err error)
	// UpdateUserReport applies fn to the report of (channel, ts) and saves it
	// in one transaction (ErrNotFound when there is none; fn's error
	// aborts and is returned).
	//
	// fn may change any field but Channel, TS and Created (kept) and
	// Updated (the store's clock); it may change the reporters (Told), as
	// long as each has a user and none is there twice (ErrBadUserReport
	// otherwise). A triage card that is another report's is
	// ErrTriageTaken. Either aborts: nothing is recorded.
	UpdateUserReport(channel, ts string, fn func(rep *UserReport) error) (UserReport, error)
	// UserReport returns the report of the message (channel, ts), or
	// ErrNotFound.
	UserReport(channel, ts string) (UserReport, error)
	// UserReportByTriage finds the report whose triage card is (channel, ts).
	// ErrNotFound when none is (or channel or ts is empty).
	UserReportByTriage(channel, ts string) (UserReport, error)
	// UserReportsBy returns the reports user made, newest report first, at most n.
	// Newest is by when user reported it (their Reporter.At); none (or n
	// below 1): empty, no error.
	UserReportsBy(user string, n int) ([]UserReport, error)
	// UserReportsSince counts the reports user made since t (a per-user rate limit shared by replicas).
	// A report counts when user's Reporter.At is at or after since.
	UserReportsSince(user string, since time.Time) (int, error)

	// Backfills: scans of a channel's recent history (backfills.go), one
	// per channel, resumable after a restart or by another replica (shared
	// by the replicas on PostgreSQL). Created and Updated are the store's
	// clock (Updated moves at every write); the times are kept to the
	// microsecond.
	//
	// StartBackfill records a new backfill of b.Channel unless one is running
	// there (ok false, and the running one returned). A finished one is replaced.
	// The backfill recorded is b in state "running" (whatever b.State),
	// created now. No channel: ErrNoChannel. Atomic against concurrent
	// starts of the channel, in any replica: one of them is ok.
	StartBackfill(b Backfill) (cur Backfill, ok bool, err error)
	// UpdateBackfill applies fn to channel's backfill in one transaction (ErrNotFound when none).
	// fn may change any field but Channel and Created (kept) and Updated
	// (the store's clock); fn's error aborts and is returned.
	UpdateBackfill(channel string, fn func(b *Backfill) error) (Backfill, error)
	Backfill(channel string) (Backfill, error) // ErrNotFound
	// ClaimBackfill makes owner the runner of a running backfill whose claim is free or expired (or already owner's), until until: ok false otherwise.
	// A claim is expired when its OwnedUntil is at or before now. b is
	// the backfill as stored after the call (claimed or not); ErrNotFound
	// when channel has none. Of concurrent claims, in any replica, one
	// wins.
	ClaimBackfill(channel, owner string, now, until time.Time) (b Backfill, ok bool, err error)
	// RunningBackfills lists the backfills in state "running", by channel
	// (bytewise; none: empty, no error).
	RunningBackfills() ([]Backfill, error)

	// Replicas sharing the state. The embedded file is opened by one
	// process: it claims every analysis, has no orphans, and counts one
	// replica.
	//
	// ClaimAnalysis makes this process the one that submits target to
	// service, or resumes its analysis: with no analysis in flight it
	// records an intent owned by this process (Claim.Mine, not Existed);
	// an analysis of a replica that stopped (or of this one) is taken over
	// (Mine and Existed, with its task if it has one); an analysis a live
	// replica runs is left to it (not Mine).
	ClaimAnalysis(service, target string) (Claim, error)
	// OrphanJobs claims, for this process, the unfinished jobs of replicas
	// that stopped (no heartbeat within the lease) and returns them, oldest
	// first; they run here from now on.
	OrphanJobs() ([]Job, error)
	// Replicas is how many replicas share the state, this one included
	// (at least 1), as the last heartbeat saw them.
	Replicas() int
	// OnReplicas calls fn with the number of replicas (Replicas) whenever
	// it changes and, on PostgreSQL, once right away, so that what the
	// replicas share (the vendor budgets, Slack's limits) is divided anew.
	// The embedded file never calls fn: one process opens it, and the
	// count is 1 for good (what is shared by one is left as configured).
	OnReplicas(fn func(n int))
	// SweepEvery is how often OrphanJobs should be called to take over
	// the work of replicas that stopped (PostgreSQL with a replica id: a
	// fifth of VERDICTBOT_LEASE). 0 means never: the embedded file, or a
	// process that is not one of the replicas, has no orphans.
	SweepEvery() time.Duration

	// Ping checks that the state answers (for /readyz): on PostgreSQL,
	// that the database does, within ctx. The embedded file is in this
	// process: nil.
	Ping(ctx context.Context) error
	// Size is the embedded file's size in bytes, for the retention log:
	// 0 for the file held in memory (unit tests), -1 on PostgreSQL (no
	// file of its own).
	Size() int64

	Close() error
}
