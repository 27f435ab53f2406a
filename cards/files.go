package cards

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// FileChecker checks files in the sandbox (*scan.Files implements it).
type FileChecker interface {
	Precheck(ref scan.FileRef) string
	Check(ctx context.Context, ref scan.FileRef, o scan.FileCheckOptions) scan.FileVerdict
	// Screenshots reads a reported task's screenshots, within its own
	// deadline; it is called after the verdict is shown.
	Screenshots(ctx context.Context, taskID string) ([]scan.Screenshot, error)
}

// FileInfo reads a file's metadata (files.info; *slack.Client).
type FileInfo interface {
	GetFileInfoContext(ctx context.Context, fileID string, count, page int) (*slack.File, []slack.Comment, *slack.Paging, error)
}

// Uploader posts images in a thread (*notify.Poster).
type Uploader interface {
	Upload(ctx context.Context, channel, threadTS, name string, data []byte, title string) (string, error)
}

// Files turns shared files into file cards. A share announced twice (the
// file_shared event and the message's file_share subtype) is handled once;
// every message that shares a file is a share of its own and gets its
// card, in the same channel or another, but the file is analysed once (the
// pipeline joins by sha256).
type Files struct {
	Messages *Messages // cards, modes, posting
	Check    FileChecker
	Info     FileInfo
	Uploader Uploader
	// FirstTime records a key and reports whether it is new (the store's
	// SeenEvent), so a share is handled once across restarts.
	FirstTime func(key string) (bool, error)
	// MaxScreenshots bounds the images posted per file.
	MaxScreenshots int
	// Enabled, if set, says whether files shared in a channel are scanned
	// (VERDICTBOT_SCAN_FILES, "/scan channel files on|off"). When it says
	// no, the files are listed as not checked and are neither downloaded
	// nor sent, even on request (the shortcut).
	Enabled func(channel string) bool
}

// ReasonFilesOff is the card's reason for files not scanned in a channel.
const ReasonFilesOff = "file scanning is off in this channel"

// fileCardTS is the source key of a message's file card: the message's
// own card (if it has links) keeps the message ts.
func fileCardTS(ts string) string { return ts + "/files" }

// NeedsWork reports whether Shared may have work to do for a file_shared
// event, from the event alone (see Messages.NeedsWork): every file but the
// bot's own uploads.
func (f *Files) NeedsWork(ev *slackevents.FileSharedEvent) bool {
	return ev.UserID == "" || ev.UserID != f.Messages.Self().UserID
}

// Shared handles a file_shared event.
func (f *Files) Shared(ctx context.Context, ev *slackevents.FileSharedEvent, meta bot.Meta) {
	m := f.Messages
	m.init()
	if ev.UserID != "" && ev.UserID == m.Self().UserID {
		finished(meta) // our own screenshots
		return
	}
	file, _, _, err := f.Info.GetFileInfoContext(ctx, ev.FileID, 0, 0)
	if err != nil {
		if meta.Replayed && f.reshowFileCard(ctx, ev.ChannelID, ev.FileID, sharedAt(ev, meta), doneOf(meta)) {
			return
		}
		m.Log.Warn("files.info failed; the file will be handled from its message event", "file", ev.FileID, "error", err)
		finished(meta)
		return
	}
	ts, thread := shareOf(file, ev.ChannelID)
	if ts == "" {
		if meta.Replayed && f.reshowFileCard(ctx, ev.ChannelID, ev.FileID, sharedAt(ev, meta), doneOf(meta)) {
			return
		}
		// Not visible as shared in this channel yet: the message event
		// (subtype file_share) carries the ts and handles it.
		finished(meta)
		return
	}
	msg := &slack.Msg{Channel: ev.ChannelID, Timestamp: ts, ThreadTimestamp: thread, User: ev.UserID, Files: []slack.File{*file}}
	mode := m.Mode(ev.ChannelID)
	if IsDirect(ev.ChannelID) {
		// A file sent to the bot in its Messages tab: checked on the
		// sender's request, the card in the DM.
		mode = ModeVerbose
	}
	f.handle(ctx, ev.ChannelID, msg, fileJob{mode: mode, who: requesterOf(ev.ChannelID, msg, ""), resumed: meta.Replayed}, doneOf(meta))
}

// unfinished reports whether the file card of the message at ts exists
// and may not have been shown in its final state: not final, its post
// under way, or not posted (a process may have stopped between the last
// verdict and the post; a quiet channel's clean card is handled again,
// which only adds the reaction that is there already).
func (f *Files) unfinished(channel, ts string) bool {
	rec, ok := f.Messages.Cards.Get(channel, fileCardTS(ts))
	return ok && (!rec.Card.Final || rec.PostStarted || rec.Card.CardTS == "")
}

// reshowFinal shows once more the final file card of the message at ts,
// when it is final and posted, for a job resumed after its process stopped:
// the process may have stopped while the final update waited its turn
// (Slack's chat.update budget after a 429 storm), so the card in Slack
// may still show an earlier state though the store holds the final one
// (the 30-minute soak's one file card left at "Scanning…"). One chat.update
// of what the card already shows costs nothing more. It calls done once
// the card is shown and reports whether it took the job on.
func (f *Files) reshowFinal(ctx context.Context, channel, ts string, done func()) bool {
	m := f.Messages
	rec, ok := m.Cards.Get(channel, fileCardTS(ts))
	if !ok || !rec.Card.Final || rec.Card.CardTS == "" || rec.PostStarted {
		return false
	}
	c := rec.Card.Clone()
	m.Log.Info("showing a final file card again for a resumed job", "channel", channel, "ts", ts, "card_ts", c.CardTS)
	return m.launch(ctx, func() {
		m.show(ctx, &c)
		if ctx.Err() == nil {
			done() // otherwise the job stays, and resumes again
		}
	}) == nil
}

// recentFileCards is how many of a channel's newest cards reshowFileCard
// reads at first; it reads four times as many each time the cards read are
// all newer than the share, up to maxFileCards.
const (
	recentFileCards = 200
	maxFileCards    = 12800
)

// shareSlack is how long, in seconds, before its file_shared event a
// share's message may have been posted (the event follows the message
// within seconds; a generous bound, so reshowFileCard does not stop short
// of the card).
const shareSlack = 10 * 60

// reshowFileCard is reshowFinal for a resumed file_shared job whose share
// Slack no longer shows: quarantine removed the message (and the file) it
// was shared in, or its poster deleted it. The event carries only the
// file's id and its own time, and the card's key is the message's ts: the
// card is found among the channel's newest ones by the file it shows,
// reading further back while every card read is newer than the share (a
// channel busy between the kill and the takeover). A job taken over from
// a replica killed between the final card's write and its update in Slack
// otherwise ended here with nothing done, leaving "Scanning…" in the
// thread (the 30-minute soak of 2026-11-28, seed 1795875693851307672).
func (f *Files) reshowFileCard(ctx context.Context, channel, fileID, sharedAt string, done func()) bool {
	for n := recentFileCards; ; n *= 4 {
		recs, err := f.Messages.Cards.st.RecentCards(channel, n)
		if err != nil {
			f.Messages.Log.Warn("a resumed file job could not look for its card", "channel", channel, "file", fileID, "error", err)
			return false
		}
		for _, r := range recs {
			ts, ok := strings.CutSuffix(r.Card.SourceTS, "/files")
			if !ok {
				continue
			}
			for _, l := range r.Card.Lines {
				if l.File != nil && l.File.ID == fileID {
					return f.reshowFinal(ctx, channel, ts, done)
				}
			}
		}
		if len(recs) < n || n >= maxFileCards || !newerThanShare(recs[len(recs)-1].Card.SourceTS, sharedAt) {
			f.Messages.Log.Info("a resumed file job found no card of its file", "channel", channel, "file", fileID, "cards_read", len(recs))
			return false
		}
	}
}

// sharedAt is the time of a file_shared event, as a Slack timestamp: its
// event_ts, else the envelope's event_time.
func sharedAt(ev *slackevents.FileSharedEvent, meta bot.Meta) string {
	if ev.EventTimestamp != "" || meta.EventTime.IsZero() {
		return ev.EventTimestamp
	}
	return strconv.FormatInt(meta.EventTime.Unix(), 10)
}

// newerThanShare reports whether a card's source ts is later than the
// share's event time less shareSlack: a card older than that cannot be
// the share's. Without the event's time (an older journal), it is not.
func newerThanShare(sourceTS, sharedAt string) bool {
	ev, err := strconv.ParseFloat(sharedAt, 64)
	if err != nil || ev <= 0 {
		return false
	}
	ts, _, _ := strings.Cut(sourceTS, "/")
	sec, err := strconv.ParseFloat(ts, 64)
	return err == nil && sec > ev-shareSlack
}

// shareOf finds the message that shared file in channel: the newest of
// its shares there (a file_shared event is about a new share; the file may
// have been shared in the channel before).
func shareOf(file *slack.File, channel string) (ts, thread string) {
	for _, shares := range []map[string][]slack.ShareFileInfo{file.Shares.Public, file.Shares.Private} {
		for _, s := range shares[channel] {
			if ts == "" || laterTS(s.Ts, ts) {
				ts, thread = s.Ts, s.ThreadTs
			}
		}
	}
	return ts, thread
}

// laterTS reports whether Slack timestamp a ("1700000000.000200") is later
// than b: seconds, then the sequence after the dot, compared as numbers.
func laterTS(a, b string) bool {
	as, af, _ := strings.Cut(a, ".")
	bs, bf, _ := strings.Cut(b, ".")
	if len(as) != len(bs) {
		return len(as) > len(bs)
	}
	if as != bs {
		return as > bs
	}
	if len(af) != len(bf) {
		return len(af) > len(bf)
	}
	return af > bf
}

// shareKey is the dedupe key of one share of a file: a share is announced
// twice (file_shared and the message's file_share subtype) and handled
// once; each message that shares the file is a share of its own, so the
// same file shared again in the channel (after quarantine removed the
// first message, say) is checked and acted on again. Keys of earlier
// versions were per channel ("file:<id>:<channel>").
func shareKey(fileID, channel, ts string) string {
	return "file:" + fileID + ":" + channel + ":" + ts
}

// fileJob says how handle treats a message's files.
type fileJob struct {
	// mode is the channel's mode (verbose for a request or a DM).
	mode string
	// requestedBy is who asked ("" for the automatic scan); the card says so.
	requestedBy string
	// again checks files already announced for this channel (a request, a
	// DM): the per-channel dedupe of file_shared and file_share is skipped.
	again bool
	// onlyNew begins the file card only when the message has none (a
	// request): one already there is left exactly as it is. With
	// orphaned, the file card the request found orphaned, it is begun
	// again only if no one did since (Cards.BeginIfAt).
	onlyNew  bool
	orphaned *store.CardRecord
	// who is whom the checks are for (fair queues, the allowance).
	who scan.Requester
	// resumed: a job resumed after a restart, or taken over from a replica
	// that stopped, carries on a file card that is not final although its
	// files were announced already (the job that announced them is this one).
	resumed bool
}

// handle checks the files of one message and shows its file card. done is
// called once the card is final (or there was nothing to do). It reports
// whether a card generation was begun (false with onlyNew when the message
// had a file card: rec is then that card).
//
// In a channel with quarantine on, a file that cannot be checked (too
// large, a type in VERDICTBOT_SKIP_FILETYPES, not fetchable) is not merely
// listed as skipped: it is a line "could not check", so the message is
// never shown clean and a quiet channel gets its card (notCleared). Files
// the channel's switch leaves out, or that no sandbox could check, stay
// skipped: that is the admins' choice, not something a sender can force.
func (f *Files) handle(ctx context.Context, channel string, msg *slack.Msg, job fileJob, done func()) (began bool, rec *store.CardRecord) {
	m := f.Messages
	self := m.Self()
	mode := job.mode
	if mode == ModeOff {
		done()
		return false, nil
	}
	var refs []scan.FileRef
	for i := range msg.Files {
		sf := &msg.Files[i]
		if sf.User != "" && sf.User == self.UserID {
			continue
		}
		first := true
		if f.FirstTime != nil && !job.again {
			var err error
			if first, err = f.FirstTime(shareKey(sf.ID, channel, msg.Timestamp)); err != nil {
				m.Log.Warn("file dedupe failed; handling the file anyway", "file", sf.ID, "error", err)
				first = true
			}
		}
		if !first && !(job.resumed && f.unfinished(channel, msg.Timestamp)) {
			continue // already announced by the other event
		}
		refs = append(refs, f.ref(ctx, sf))
	}
	if len(refs) == 0 {
		if job.resumed && f.reshowFinal(ctx, channel, msg.Timestamp, done) {
			return false, nil
		}
		done()
		return false, nil
	}
	thread := msg.ThreadTimestamp
	if thread == "" {
		thread = msg.Timestamp
	}
	src := fileCardTS(msg.Timestamp)
	draft := card.Card{Channel: channel, ThreadTS: thread, SourceTS: src, Poster: msg.User, RequestedBy: job.requestedBy}
	var checks []int // line index per ref, -1 when not checked
	unchecked := 0
	switch {
	case f.Enabled != nil && !f.Enabled(channel) && !IsDirect(channel):
		// A channel's file switch does not apply to a file someone sent
		// the bot to have it checked.
		for _, r := range refs {
			draft.Skipped = append(draft.Skipped, card.Skip{Kind: card.KindFile, Target: r.Name, Reason: ReasonFilesOff})
			checks = append(checks, -1)
		}
	case f.Check == nil:
		for _, r := range refs {
			draft.Skipped = append(draft.Skipped, card.Skip{Kind: card.KindFile, Target: r.Name, Reason: "no sandbox service is configured (SANDBOX_URL)"})
			checks = append(checks, -1)
		}
	default:
		strict := !IsDirect(channel) && m.quarantineOn(channel)
		for _, r := range refs {
			if reason := f.Check.Precheck(r); reason != "" {
				checks = append(checks, -1)
				if strict {
					unchecked++
					draft.Lines = append(draft.Lines, card.Line{Kind: card.KindFile, Target: r.Name, Level: verdict.Unknown,
						Service: "sandbox", Problem: sentence(reason), File: &card.FileInfo{Name: r.Name, Type: r.Filetype, Size: r.Size}})
					continue
				}
				draft.Skipped = append(draft.Skipped, card.Skip{Kind: card.KindFile, Target: r.Name, Reason: reason})
				continue
			}
			checks = append(checks, len(draft.Lines))
			draft.Lines = append(draft.Lines, card.Line{Kind: card.KindFile, Target: r.Name, Level: verdict.Pending,
				Service: "sandbox", Status: "queued", File: &card.FileInfo{ID: r.ID, Name: r.Name, Type: r.Filetype, Size: r.Size}})
		}
	}
	draft.Final = len(refs) == countNot(checks)
	if draft.Final && mode != ModeVerbose && unchecked == 0 {
		m.Log.Info("files not checked", "channel", channel, "ts", msg.Timestamp, "skipped", len(draft.Skipped))
		done()
		return false, nil
	}
	var gen int
	var snap card.Card
	if job.onlyNew {
		var err error
		gen, snap, rec, err = m.Cards.BeginIfAt(channel, src, genOf(job.orphaned), draft, mode)
		switch {
		case rec != nil:
			done()
			return false, rec
		case err != nil:
			m.Log.Error("could not save the file card of a requested scan", "channel", channel, "ts", msg.Timestamp, "error", err)
			done()
			return false, nil
		}
		if job.orphaned != nil && m.Events != nil {
			m.remember(channel, src, gen, job.orphaned.Card.Lines)
		}
	} else {
		var ok bool
		if gen, snap, ok = m.begin(ctx, channel, src, draft, mode); !ok {
			return false, nil // the job stays in the journal and resumes after the restart
		}
	}
	if unchecked > 0 && m.OnUnchecked != nil {
		m.OnUnchecked(card.KindFile, unchecked)
	}
	m.Log.Info("checking files", "channel", channel, "ts", msg.Timestamp, "files", len(draft.Lines)-unchecked, "skipped", len(draft.Skipped),
		"not_checked", unchecked, "mode", mode, "requested", job.requestedBy != "")
	m.start(ctx, snap, mode, func(hold time.Time) bool { return f.track(ctx, channel, src, gen, mode, hold, refs, checks, job.who) }, done)
	return true, nil
}

// sentence makes a reason ("it is larger than …") a sentence for a card.
func sentence(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[size:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// countNot counts the refs that get no analysis (-1 in checks).
func countNot(checks []int) int {
	n := 0
	for _, c := range checks {
		if c < 0 {
			n++
		}
	}
	return n
}

// ref fills a file reference, from files.info when the event's copy lacks
// what the download needs.
func (f *Files) ref(ctx context.Context, sf *slack.File) scan.FileRef {
	if (sf.URLPrivateDownload == "" || sf.Size == 0) && !sf.IsExternal && f.Info != nil {
		if full, _, _, err := f.Info.GetFileInfoContext(ctx, sf.ID, 0, 0); err == nil {
			sf = full
		} else {
			f.Messages.Log.Warn("files.info failed", "file", sf.ID, "error", err)
		}
	}
	name := sf.Name
	if name == "" {
		name = sf.Title
	}
	return scan.FileRef{ID: sf.ID, Name: name, Filetype: sf.Filetype, Mimetype: sf.Mimetype, Size: int64(sf.Size),
		External: sf.IsExternal, Source: sf.URLPrivateDownload}
}

// track checks the files of one card (see the generic track): the final
// card is shown as soon as every verdict is in, then the screenshots are
// posted in the thread as they come (or the card notes that they could not
// be fetched): screenshots never hold a verdict back. lineOf is the card
// line of each ref, -1 for one not checked. The checks are for who.
func (f *Files) track(ctx context.Context, channel, src string, gen int, mode string, hold time.Time, refs []scan.FileRef, lineOf []int, who scan.Requester) bool {
	var lines []pending[scan.FileVerdict]
	for i, r := range refs {
		if lineOf[i] < 0 {
			continue
		}
		lines = append(lines, pending[scan.FileVerdict]{line: lineOf[i], check: func(ctx context.Context, onStatus func(string)) scan.FileVerdict {
			// A history's files wait behind live ones for the sandbox.
			return f.Check.Check(ctx, r, scan.FileCheckOptions{OnStatus: onStatus, For: who, Background: mode == ModeBackfill})
		}})
	}
	kind := lineKind[scan.FileVerdict]{
		err:  func(v scan.FileVerdict) error { return v.Err },
		fill: fileLine,
		target: func(v scan.FileVerdict) string {
			// The file's record (its SHA-256) remembers the cards showing
			// it, as a URL's does: /scan answers about a file only to
			// those who may see one of them (commands.Scope).
			if v.Err != nil || v.SHA256 == "" || v.Level == verdict.Skipped {
				return ""
			}
			return v.SHA256
		},
		after: func(ctx context.Context, c card.Card, line int, v scan.FileVerdict) func() func() (card.Card, bool) {
			if !f.wantsShots(mode, c, line, v) {
				return nil
			}
			return func() func() (card.Card, bool) {
				imgs, err := f.Check.Screenshots(ctx, v.TaskID)
				return func() (card.Card, bool) {
					if err != nil && ctx.Err() != nil {
						return card.Card{}, false // shutting down: the card keeps its verdict
					}
					return f.postScreenshots(ctx, channel, src, gen, line, v, imgs, err)
				}
			}
		},
	}
	return track(ctx, f.Messages, kind, channel, src, gen, mode, hold, lines)
}

// wantsShots reports whether the screenshots of a verdict are to be posted:
// on verbose cards and for verdicts that need attention, once per line (a
// resumed card that already shows them does not post them again).
func (f *Files) wantsShots(mode string, c card.Card, line int, v scan.FileVerdict) bool {
	if f.Uploader == nil || v.TaskID == "" || v.Err != nil || v.Level < verdict.Clean || v.Level == verdict.Unknown {
		return false
	}
	if mode != ModeVerbose && !v.Level.NeedsAttention() {
		return false
	}
	return line < len(c.Lines) && c.Lines[line].File != nil && c.Lines[line].File.Screenshots == 0 && !c.Lines[line].File.ScreenshotsWithheld
}

// postScreenshots uploads a file's screenshots into the card's thread and
// records on its line how many were posted, or that they could not be
// fetched (err, or every upload failed), or that they were withheld: a
// card whose message quarantine removed gets none (it is called once the
// card is final, after quarantine acted). ok is false when the card did not
// change (no screenshots, or a newer generation took over).
func (f *Files) postScreenshots(ctx context.Context, channel, src string, gen, line int, v scan.FileVerdict, imgs []scan.Screenshot, err error) (card.Card, bool) {
	m := f.Messages
	rec, ok := m.Cards.Get(channel, src)
	if !ok || rec.Gen != gen || line >= len(rec.Card.Lines) || rec.Card.Lines[line].File == nil || rec.Card.Lines[line].File.Screenshots > 0 ||
		rec.Card.Lines[line].File.ScreenshotsWithheld {
		return card.Card{}, false
	}
	if err == nil && len(imgs) == 0 {
		return card.Card{}, false // the task has none
	}
	if rec.Card.Quarantined() {
		// The message was removed (or is being removed) for what the
		// sandbox saw: its screenshots do not go in the thread.
		m.Log.Info("screenshots withheld: the message was quarantined", "channel", channel, "task_id", v.TaskID)
		return m.Cards.Change(channel, src, gen, func(r *store.CardRecord) {
			if line < len(r.Card.Lines) && r.Card.Lines[line].File != nil {
				r.Card.Lines[line].File.ScreenshotsWithheld = true
			}
		})
	}
	max := f.MaxScreenshots
	if max <= 0 {
		max = scan.DefaultMaxScreenshots
	}
	posted := 0
	for i, img := range imgs {
		if i >= max {
			break
		}
		title := fmt.Sprintf("Sandbox screenshot %d of %s (task %s)", i+1, v.Name, v.TaskID)
		if _, uerr := f.Uploader.Upload(ctx, channel, rec.Card.ThreadTS, img.Name, img.Data, title); uerr != nil {
			m.Log.Warn("screenshot upload failed", "channel", channel, "task_id", v.TaskID, "error", uerr)
			continue
		}
		posted++
	}
	if err != nil {
		m.Log.Warn("screenshots could not be fetched; the card says so", "channel", channel, "task_id", v.TaskID, "error", err)
	}
	return m.Cards.Change(channel, src, gen, func(r *store.CardRecord) {
		if line < len(r.Card.Lines) && r.Card.Lines[line].File != nil {
			r.Card.Lines[line].File.Screenshots = posted
			r.Card.Lines[line].File.ScreenshotsFailed = posted == 0
		}
	})
}

// fileLine fills a card line from a file verdict.
func fileLine(l card.Line, v scan.FileVerdict) card.Line {
	l.Level, l.TaskID, l.Problem, l.Cached, l.CheckedAt, l.Status = v.Level, v.TaskID, v.Problem, v.Cached || v.Reused, v.CheckedAt, ""
	fi := card.FileInfo{}
	if l.File != nil {
		fi = *l.File
	}
	fi.Name = v.Name
	if v.Magic != "" {
		fi.Type = v.Magic
	} else if v.Type != "" {
		fi.Type = v.Type
	}
	if v.Size > 0 {
		fi.Size = v.Size
	}
	fi.MD5, fi.SHA1, fi.SHA256 = v.MD5, v.SHA1, v.SHA256
	fi.MalScore, fi.Family = v.MalScore, v.Family
	fi.AddedOn, fi.StartedOn, fi.DoneOn = v.AddedOn, v.StartedOn, v.CompletedOn
	l.File = &fi
	if v.Reused {
		l.Detail = "The sandbox already knew this file: no upload was needed."
	}
	return l
}
