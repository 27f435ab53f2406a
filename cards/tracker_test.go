package cards

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/bot"
	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
	"github.com/verdictbot/verdictbot/store/bolt"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/scan/scanstore"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// env is a card lifecycle over the fake Slack and an in-memory store.
type env struct {
	fake     *slackfake.Server
	db       store.State
	poster   *notify.Poster
	messages *Messages
	api      *slack.Client
}

// newEnv shows cards at once (PostGrace -1), as the tests of progress
// expect; the grace period's tests set it.
func newEnv(t *testing.T, urls URLChecker, mode string, opts ...slackfake.Option) *env {
	t.Helper()
	fake := slackfaketest.Start(t, opts...)
	api := slack.New(fake.BotToken(), slack.OptionAPIURL(fake.APIURL()))
	poster := notify.NewPoster(api, notify.PosterOptions{MinUpdateInterval: 5 * time.Millisecond, PostInterval: 5 * time.Millisecond})
	t.Cleanup(func() { _ = poster.Close(context.Background()) })
	policy, err := links.NewPolicy(links.Config{MaxLinks: 10})
	if err != nil {
		t.Fatal(err)
	}
	db := bolt.Memory(bolt.Options{})
	self := func() bot.Identity {
		return bot.Identity{UserID: fake.BotUserID(), BotID: fake.BotID(), AppID: fake.AppID()}
	}
	m := &Messages{Self: self, Links: policy, URLs: urls, Poster: poster, Cards: NewCards(db),
		Finder: &ThreadSearch{API: api, Self: self}, Mode: func(string) string { return mode }, PostGrace: -1}
	return &env{fake: fake, db: db, poster: poster, messages: m, api: api}
}

// deliver puts a user's message in #C1 and hands its event to Handle.
func (e *env) deliver(t *testing.T, text string, done func()) string {
	t.Helper()
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: text})
	if d.TS == "" {
		t.Fatal("the fake did not store the message")
	}
	msg, _ := e.fake.Message("C1", d.TS)
	ev := &slackevents.MessageEvent{Type: "message", Channel: "C1", ChannelType: "channel", User: "U1", Text: msg.Text, TimeStamp: d.TS,
		Message: &slack.Msg{Type: "message", Channel: "C1", User: "U1", Text: msg.Text, Timestamp: d.TS}}
	e.messages.Handle(t.Context(), ev, bot.Meta{EventID: "Ev1", Done: done})
	return d.TS
}

// card returns the stored card answering (C1, src).
func (e *env) card(t *testing.T, src string) *store.CardRecord {
	t.Helper()
	rec, err := e.db.Card(card.Ref{Channel: "C1", SourceTS: src})
	if err != nil {
		t.Fatalf("no card for %s: %v", src, err)
	}
	return rec
}

// botReplies returns the bot's messages in the thread of ts, but for the
// ones that share a file.
func (e *env) botReplies(ts string) []slackfake.Message {
	var out []slackfake.Message
	for _, m := range e.fake.Messages("C1", ts) {
		if m.Bot && m.IsReply() && len(m.Files) == 0 { // not the screenshots
			out = append(out, m)
		}
	}
	return out
}

// urlChecker answers from a table; each URL reports a status first and
// waits for its gate (if any) before answering.
type urlChecker struct {
	levels map[string]verdict.Level
	gates  map[string]chan struct{}
}

func (c *urlChecker) Check(ctx context.Context, url string, o scan.CheckOptions) scan.URLVerdict {
	if o.OnStatus != nil {
		o.OnStatus("submitted")
	}
	if g := c.gates[url]; g != nil {
		select {
		case <-g:
		case <-ctx.Done():
			return scan.URLVerdict{URL: url, Level: verdict.Unknown, Err: ctx.Err()}
		}
	}
	return scan.URLVerdict{URL: url, TaskID: "task-" + url, Level: c.levels[url], CheckedAt: time.Now()}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// One card per message with links, in its thread: posted once while the
// verdicts are pending, updated in place with progress and with each
// verdict, final once every URL has one; each verdict links its target to
// the card (for rechecks) and the event's job is done exactly once.
func TestURLCardPostedOnceUpdatedInPlaceUntilFinal(t *testing.T) {
	const bad, good = "https://login.example.net/", "https://docs.example.org/"
	gate := make(chan struct{})
	checker := &urlChecker{levels: map[string]verdict.Level{bad: verdict.Malicious, good: verdict.Clean},
		gates: map[string]chan struct{}{good: gate}}
	e := newEnv(t, checker, ModeVerbose)
	// The targets are recorded (as the pipeline records its verdicts):
	// the cards showing them are linked to their records.
	for _, u := range []string{bad, good} {
		if _, _, err := e.db.RecordVerdict(store.Verdict{Target: u, Kind: "url", TaskID: "task-" + u, Level: checker.levels[u], At: time.Now()}, nil, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	var done atomic.Int32
	ts := e.deliver(t, "see <"+bad+"> and <"+good+">", func() { done.Add(1) })

	// The first verdict is on the card while the second is pending.
	// (The two checks run on their own goroutines: the second line's
	// progress may be stored after the first verdict.)
	waitUntil(t, "the first verdict and the second line's progress are stored", func() bool {
		rec := e.card(t, ts)
		return rec.Card.CardTS != "" && rec.Card.Lines[0].Level == verdict.Malicious && rec.Card.Lines[1].Status == "submitted"
	})
	if rec := e.card(t, ts); rec.Card.Final || rec.Card.Lines[1].Level != verdict.Pending {
		t.Fatalf("the card is final or lost the pending line's progress: %+v", rec.Card)
	}
	if done.Load() != 0 {
		t.Fatal("the job was done before the card was final")
	}
	close(gate)
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	rec := e.card(t, ts)
	if !rec.Card.Final || rec.Card.Lines[0].Level != verdict.Malicious || rec.Card.Lines[1].Level != verdict.Clean {
		t.Fatalf("final card: %+v", rec.Card)
	}
	if n := done.Load(); n != 1 {
		t.Fatalf("the job was done %d times, want 1", n)
	}
	replies := e.botReplies(ts)
	if len(replies) != 1 {
		t.Fatalf("%d cards in the thread, want 1 (updated in place)", len(replies))
	}
	if replies[0].TS != rec.Card.CardTS || replies[0].Updates() == 0 {
		t.Fatalf("the card in the thread (ts %s, %d updates) is not the stored one (%s) updated in place", replies[0].TS, replies[0].Updates(), rec.Card.CardTS)
	}
	for _, u := range []string{bad, good} {
		if tg, err := e.db.Target(u); err != nil || len(tg.Cards) != 1 || tg.Cards[0] != (card.Ref{Channel: "C1", SourceTS: ts}) {
			t.Errorf("target %s is not linked to its card: %+v, %v", u, tg.Cards, err)
		}
	}
}

// A card posted before a crash whose ts was not saved (PostStarted) is
// found in the thread and updated, not posted a second time.
func TestCardPostedBeforeACrashIsFoundInTheThread(t *testing.T) {
	const u = "https://login.example.net/"
	e := newEnv(t, &urlChecker{levels: map[string]verdict.Level{u: verdict.Suspicious}}, ModeVerbose)
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "see <" + u + ">"})
	// The first life: the card is posted, then the process dies before
	// saving its ts.
	first := card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: d.TS, Poster: "U1",
		Lines: []card.Line{{Kind: card.KindURL, Target: u, Level: verdict.Pending, Service: "reputation", Status: "queued"}}}
	if err := e.poster.Post(t.Context(), &first); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.UpsertCard(card.Ref{Channel: "C1", SourceTS: d.TS}, func(rec *store.CardRecord, _ bool) error {
		rec.Card, rec.Gen, rec.PostStarted, rec.Mode = first, 1, true, ModeVerbose
		rec.Card.CardTS = ""
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	msg, _ := e.fake.Message("C1", d.TS)
	ev := &slackevents.MessageEvent{Type: "message", Channel: "C1", ChannelType: "channel", User: "U1", TimeStamp: d.TS,
		Message: &slack.Msg{Type: "message", Channel: "C1", User: "U1", Text: msg.Text, Timestamp: d.TS}}
	e.messages.Handle(t.Context(), ev, bot.Meta{Replayed: true})
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	replies := e.botReplies(d.TS)
	if len(replies) != 1 {
		t.Fatalf("%d cards in the thread after the restart, want the first one only", len(replies))
	}
	rec := e.card(t, d.TS)
	if rec.Card.CardTS != first.CardTS || rec.PostStarted || !rec.Card.Final || replies[0].Updates() == 0 {
		t.Fatalf("the card posted before the crash was not adopted and updated: record %+v, thread card %s (%d updates)",
			rec, replies[0].TS, replies[0].Updates())
	}
}

// fileChecker gives every file a malicious verdict at once and holds its
// screenshots until release is closed.
type fileChecker struct {
	release chan struct{}
	png     []byte
	shots   atomic.Int32
}

func (c *fileChecker) Precheck(scan.FileRef) string { return "" }

func (c *fileChecker) Check(_ context.Context, ref scan.FileRef, o scan.FileCheckOptions) scan.FileVerdict {
	if o.OnStatus != nil {
		o.OnStatus("uploaded")
	}
	return scan.FileVerdict{FileID: ref.ID, Name: ref.Name, SHA256: "ab12", TaskID: "77", Level: verdict.Malicious, MalScore: 9, CheckedAt: time.Now()}
}

func (c *fileChecker) Screenshots(ctx context.Context, taskID string) ([]scan.Screenshot, error) {
	c.shots.Add(1)
	select {
	case <-c.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []scan.Screenshot{{Name: "0001.png", ContentType: "image/png", Data: c.png}}, nil
}

// A file card is shown final as soon as the verdict is in, while its
// screenshots are still being fetched; they are posted in the thread
// afterwards and the card records how many were.
func TestFileCardIsFinalBeforeItsScreenshots(t *testing.T) {
	e := newEnv(t, &urlChecker{}, ModeQuiet)
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	checker := &fileChecker{release: make(chan struct{}), png: img.Bytes()}
	files := &Files{Messages: e.messages, Check: checker, Uploader: e.poster, MaxScreenshots: 3}
	e.messages.Files = files
	e.messages.init()
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "invoice"})
	msg := &slack.Msg{Channel: "C1", User: "U1", Timestamp: d.TS, Files: []slack.File{{ID: "F1", Name: "invoice.exe",
		Filetype: "exe", Size: 1024, URLPrivateDownload: e.fake.URL() + "/files/F1"}}}
	var done atomic.Int32
	files.handle(t.Context(), "C1", msg, fileJob{who: requesterOf("C1", msg, ""), mode: ModeQuiet}, func() { done.Add(1) })

	src := fileCardTS(d.TS)
	waitUntil(t, "the final file card is posted", func() bool {
		rec := e.card(t, src)
		return rec.Card.Final && rec.Card.CardTS != ""
	})
	waitUntil(t, "the screenshots are asked for", func() bool { return checker.shots.Load() == 1 })
	if n := len(e.fake.Uploads("C1", d.TS)); n != 0 {
		t.Fatalf("%d screenshots posted before they were fetched", n)
	}
	if done.Load() != 0 {
		t.Fatal("the job was done while screenshots were still coming")
	}
	close(checker.release)
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Uploads("C1", d.TS)); n != 1 {
		t.Fatalf("%d screenshots in the thread, want 1", n)
	}
	rec := e.card(t, src)
	if f := rec.Card.Lines[0].File; f == nil || f.Screenshots != 1 || f.ScreenshotsFailed || rec.Card.Lines[0].Level != verdict.Malicious {
		t.Fatalf("the card does not record its screenshot: %+v", rec.Card.Lines[0])
	}
	if n := done.Load(); n != 1 {
		t.Fatalf("the job was done %d times, want 1", n)
	}
	if replies := e.botReplies(d.TS); len(replies) != 1 || replies[0].TS != rec.Card.CardTS {
		t.Fatalf("want the one file card in the thread, got %d messages", len(replies))
	}
}

// failTSOnce is a card store that refuses the writes around a card's first
// post, as a full disk does: the mark that a post is starting, and, once,
// the post's ts after the post went out.
type failTSOnce struct {
	CardStore
	failed atomic.Bool
}

// UpdateCardShared goes through UpdateCard: the disk refuses every write.
func (f *failTSOnce) UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return f.UpdateCard(ref, fn)
}

func (f *failTSOnce) UpdateCard(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return f.CardStore.UpdateCard(ref, func(rec *store.CardRecord) error {
		before, started := rec.Card.CardTS, rec.PostStarted
		if err := fn(rec); err != nil {
			return err
		}
		switch {
		case before == "" && !started && rec.PostStarted && !f.failed.Load():
			return errors.New("no space left on device")
		case before == "" && rec.Card.CardTS != "" && f.failed.CompareAndSwap(false, true):
			return errors.New("no space left on device")
		}
		return nil
	})
}

// A card posted while the store cannot record its ts is updated in place
// afterwards, never posted a second time (the full-disk test found this).
func TestCardWhoseTSCouldNotBeSavedIsNotPostedAgain(t *testing.T) {
	const bad, good = "https://login.example.net/", "https://docs.example.org/"
	gate := make(chan struct{})
	checker := &urlChecker{levels: map[string]verdict.Level{bad: verdict.Malicious, good: verdict.Clean},
		gates: map[string]chan struct{}{good: gate}}
	e := newEnv(t, checker, ModeVerbose)
	failing := &failTSOnce{CardStore: e.db}
	e.messages.Cards = NewCards(failing)
	// The claim is waited for this long, then the card posted without it.
	e.messages.Cards.StoreRetry = 300 * time.Millisecond
	ts := e.deliver(t, "see <"+bad+"> and <"+good+">", func() {})
	waitUntil(t, "the first verdict is stored", func() bool {
		return e.card(t, ts).Card.Lines[0].Level == verdict.Malicious
	})
	close(gate)
	e.messages.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !failing.failed.Load() {
		t.Fatal("the store never refused the card's ts: the test did not test anything")
	}
	if replies := e.botReplies(ts); len(replies) != 1 {
		t.Fatalf("%d cards in the thread, want 1", len(replies))
	}
	if rec := e.card(t, ts); rec.Card.CardTS == "" || !rec.Card.Final {
		t.Fatalf("the store never got the card's ts, or the card is not final: %+v", rec.Card)
	}
}

// failVerdictWrites refuses the first n writes of a verdict onto a card,
// as a database restarting does.
type failVerdictWrites struct {
	CardStore
	left atomic.Int32
}

// SettleCard is the write that shows a link's verdict (and links its
// target); UpdateCard any other.
func (f *failVerdictWrites) SettleCard(ref card.Ref, target string, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return f.CardStore.SettleCard(ref, target, f.refuse(fn))
}

// UpdateCardShared goes through UpdateCard: a verdict's write (Settle)
// is a shared one.
func (f *failVerdictWrites) UpdateCardShared(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return f.UpdateCard(ref, fn)
}

func (f *failVerdictWrites) UpdateCard(ref card.Ref, fn func(rec *store.CardRecord) error) (*store.CardRecord, error) {
	return f.CardStore.UpdateCard(ref, f.refuse(fn))
}

// refuse fails fn's write while refusals are left, if it shows a verdict.
func (f *failVerdictWrites) refuse(fn func(rec *store.CardRecord) error) func(rec *store.CardRecord) error {
	return func(rec *store.CardRecord) error {
		before := rec.Card.Lines[0].Level
		if err := fn(rec); err != nil {
			return err
		}
		if before == verdict.Pending && rec.Card.Lines[0].Level != verdict.Pending && f.left.Add(-1) >= 0 {
			return errors.New("FATAL: terminating connection due to administrator command (SQLSTATE 57P01)")
		}
		return nil
	}
}

// A verdict the store refuses for a while (a database restart) is written
// once it takes it again: the card still reaches its final state and the
// job is done, rather than left unfinished.
func TestVerdictWaitsForTheStoreToComeBack(t *testing.T) {
	const bad = "https://login.example.net/"
	checker := &urlChecker{levels: map[string]verdict.Level{bad: verdict.Malicious}}
	e := newEnv(t, checker, ModeVerbose)
	failing := &failVerdictWrites{CardStore: e.db}
	failing.left.Store(3)
	e.messages.Cards = NewCards(failing)
	var done atomic.Int32
	ts := e.deliver(t, "see <"+bad+">", func() { done.Add(1) })
	e.messages.Wait()
	if failing.left.Load() >= 0 {
		t.Fatal("the store never refused the verdict: the test did not test anything")
	}
	if rec := e.card(t, ts); !rec.Card.Final || rec.Card.Lines[0].Level != verdict.Malicious {
		t.Fatalf("card after the store came back: %+v", rec.Card)
	}
	if done.Load() != 1 {
		t.Fatalf("the job was done %d times, want 1", done.Load())
	}
}

// Two replicas that show the same card at once (an edit handled by one
// while the other finishes the first scan) post it once: the first to
// mark the post posts, the other waits for its ts and updates the card.
func TestTwoReplicasShowingOneCardPostItOnce(t *testing.T) {
	e := newEnv(t, &urlChecker{}, ModeVerbose)
	other := &Messages{Self: e.messages.Self, Links: e.messages.Links, Poster: e.poster, Cards: NewCards(e.db),
		Finder: e.messages.Finder, Mode: e.messages.Mode, PeerPostWait: 5 * time.Second}
	e.messages.PeerPostWait = 5 * time.Second
	const n = 10
	var sources []string
	for i := range n {
		d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: fmt.Sprintf("message %d", i)})
		draft := card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: d.TS, Lines: []card.Line{{Target: "https://a.test/", Level: verdict.Clean}}, Final: true}
		if _, _, err := e.messages.Cards.Begin("C1", d.TS, draft, ModeVerbose); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, d.TS)
	}
	var wg sync.WaitGroup
	for _, src := range sources {
		for _, m := range []*Messages{e.messages, other} {
			wg.Go(func() {
				rec, _ := m.Cards.Get("C1", src)
				c := rec.Card.Clone()
				m.show(t.Context(), &c)
			})
		}
	}
	wg.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, src := range sources {
		if replies := e.botReplies(src); len(replies) != 1 {
			t.Fatalf("%d cards in the thread of %s, want 1", len(replies), src)
		}
		if rec := e.card(t, src); rec.Card.CardTS == "" || rec.PostStarted {
			t.Fatalf("card record %+v: want its ts saved and the post closed", rec)
		}
	}
}

// A replica whose post waits behind Slack's 429s for longer than
// PeerPostWait keeps its claim (it renews it while it waits): another
// replica showing the same card meanwhile waits for that post and updates
// it, rather than taking the claim for a dead replica's and posting a
// second card (the soak's edited message with two cards, one from each
// replica). A claim nobody renews is taken over after PeerPostWait and the
// thread searched first: the card a dead replica posted is updated, not
// posted again.
func TestAPostHeldBy429sKeepsItsClaim(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &urlChecker{}, ModeVerbose)
	const wait = 1500 * time.Millisecond
	other := &Messages{Self: e.messages.Self, Links: e.messages.Links, Poster: e.poster, Cards: NewCards(e.db),
		Finder: e.messages.Finder, Mode: e.messages.Mode, PeerPostWait: wait}
	other.init()
	e.messages.PeerPostWait = wait
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "message"})
	draft := card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: d.TS, Lines: []card.Line{{Target: "https://a.test/", Level: verdict.Clean}}, Final: true}
	if _, _, err := e.messages.Cards.Begin("C1", d.TS, draft, ModeVerbose); err != nil {
		t.Fatal(err)
	}
	// The first post is refused twice, 2 s each: 4 s, past the wait.
	e.fake.RateLimit("chat.postMessage", 2, 2*time.Second)
	var wg sync.WaitGroup
	wg.Go(func() {
		c := draft.Clone()
		e.messages.show(t.Context(), &c)
	})
	waitUntil(t, "the first replica claimed the post", func() bool { return e.card(t, d.TS).PostStarted })
	began := time.Now()
	wg.Go(func() {
		c := draft.Clone()
		c.Lines[0].Level = verdict.Malicious // a newer state, shown on the same card
		other.show(t.Context(), &c)
	})
	wg.Wait()
	if err := e.poster.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if time.Since(began) < 2*time.Second {
		t.Fatalf("the 429s held the post only %s: the test proves nothing", time.Since(began))
	}
	replies := e.botReplies(d.TS)
	if len(replies) != 1 {
		t.Fatalf("%d cards in the thread, want 1", len(replies))
	}
	if rec := e.card(t, d.TS); rec.Card.CardTS != replies[0].TS || rec.PostStarted {
		t.Fatalf("card record: ts %q post started %v; want %q and closed", rec.Card.CardTS, rec.PostStarted, replies[0].TS)
	}

	// A claim left by a replica that died after its post went out: taken
	// over once it is older than the wait, the card found in the thread.
	cardTS := replies[0].TS
	e.messages.Cards.Change("C1", d.TS, 0, func(r *store.CardRecord) {
		r.Card.CardTS, r.PostStarted, r.PostAt = "", true, time.Now()
	})
	began = time.Now()
	c := draft.Clone()
	other.show(t.Context(), &c)
	if took := time.Since(began); took < wait {
		t.Fatalf("a fresh claim was taken over after %s, before the wait (%s)", took, wait)
	}
	if rec := e.card(t, d.TS); rec.Card.CardTS != cardTS || rec.PostStarted {
		t.Fatalf("after the take-over: ts %q post started %v; want %q and closed", rec.Card.CardTS, rec.PostStarted, cardTS)
	}
	if n := len(e.botReplies(d.TS)); n != 1 {
		t.Fatalf("%d cards in the thread after the take-over, want 1", n)
	}
}

// A file job resumed after a crash (or taken over from a replica that
// died) whose file was announced already — by this very job, before the
// crash — finishes the card rather than taking it for the other event's.
func TestResumedFileJobFinishesItsCard(t *testing.T) {
	e := newEnv(t, &urlChecker{}, ModeQuiet)
	checker := &fileChecker{release: make(chan struct{})}
	close(checker.release)
	seen := map[string]bool{}
	var mu sync.Mutex
	firstTime := func(key string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if seen[key] {
			return false, nil
		}
		seen[key] = true
		return true, nil
	}
	files := &Files{Messages: e.messages, Check: checker, Uploader: e.poster, FirstTime: firstTime}
	e.messages.Files = files
	e.messages.init()
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "invoice"})
	msg := &slack.Msg{Channel: "C1", User: "U1", Timestamp: d.TS, Files: []slack.File{{ID: "F1", Name: "invoice.exe",
		Filetype: "exe", Size: 1024, URLPrivateDownload: e.fake.URL() + "/files/F1"}}}
	// Before the crash: the file was announced and its card begun.
	firstTime(shareKey("F1", "C1", d.TS))
	draft := card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: fileCardTS(d.TS), Lines: []card.Line{{Kind: card.KindFile,
		Target: "invoice.exe", Level: verdict.Pending, File: &card.FileInfo{Name: "invoice.exe"}}}}
	if _, _, err := e.messages.Cards.Begin("C1", fileCardTS(d.TS), draft, ModeQuiet); err != nil {
		t.Fatal(err)
	}
	// The other event, not resumed, leaves it alone.
	var done atomic.Int32
	files.handle(t.Context(), "C1", msg, fileJob{who: requesterOf("C1", msg, ""), mode: ModeQuiet}, func() { done.Add(1) })
	if done.Load() != 1 || e.card(t, fileCardTS(d.TS)).Card.Final {
		t.Fatal("a fresh duplicate event handled a file already announced")
	}
	// The resumed job finishes it.
	files.handle(t.Context(), "C1", msg, fileJob{who: requesterOf("C1", msg, ""), mode: ModeQuiet, resumed: true}, func() { done.Add(1) })
	waitUntil(t, "the resumed file card is final and posted", func() bool {
		rec := e.card(t, fileCardTS(d.TS))
		return rec.Card.Final && rec.Card.CardTS != ""
	})
	e.messages.Wait()
	if done.Load() != 2 {
		t.Fatalf("done called %d times, want 2", done.Load())
	}
}

// resumedFileJob is a message in #C1 sharing invoice.exe, announced
// before the process stopped, and the Files handler that resumes its job.
func resumedFileJob(t *testing.T, mode string) (*env, *Files, *slack.Msg) {
	t.Helper()
	e := newEnv(t, &urlChecker{}, mode)
	checker := &fileChecker{release: make(chan struct{})}
	close(checker.release)
	files := &Files{Messages: e.messages, Check: checker, Uploader: e.poster,
		FirstTime: func(string) (bool, error) { return false, nil }} // announced before the stop
	e.messages.Files = files
	e.messages.init()
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "invoice"})
	msg := &slack.Msg{Channel: "C1", User: "U1", Timestamp: d.TS, Files: []slack.File{{ID: "F1", Name: "invoice.exe",
		Filetype: "exe", Size: 1024, URLPrivateDownload: e.fake.URL() + "/files/F1"}}}
	return e, files, msg
}

// The process stopped after the file card's last verdict was saved but
// before (or while) it was posted: the resumed job posts it.
func TestResumedFileJobPostsAFinalCardNeverPosted(t *testing.T) {
	for _, postStarted := range []bool{false, true} {
		e, files, msg := resumedFileJob(t, ModeQuiet)
		d, src := msg.Timestamp, fileCardTS(msg.Timestamp)
		draft := card.Card{Channel: "C1", ThreadTS: d, SourceTS: src, Final: true, Lines: []card.Line{{Kind: card.KindFile,
			Target: "invoice.exe", Level: verdict.Malicious, File: &card.FileInfo{Name: "invoice.exe"}}}}
		if _, _, err := e.messages.Cards.Begin("C1", src, draft, ModeQuiet); err != nil {
			t.Fatal(err)
		}
		if postStarted {
			e.messages.Cards.Change("C1", src, 0, func(r *store.CardRecord) { r.PostStarted = true })
		}
		var done atomic.Int32
		files.handle(t.Context(), "C1", msg, fileJob{who: requesterOf("C1", msg, ""), mode: ModeQuiet, resumed: true}, func() { done.Add(1) })
		waitUntil(t, "the resumed file card is posted", func() bool { return e.card(t, src).Card.CardTS != "" })
		e.messages.Wait()
		if replies := e.botReplies(d); len(replies) != 1 || done.Load() != 1 {
			t.Fatalf("post started %v: %d cards in the thread, done %d; want 1 and 1", postStarted, len(replies), done.Load())
		}
	}
}

// recordingChecker is urlChecker that records each verdict through mem,
// as the URL pipeline does, before answering; at is the store's write
// count once it has.
type recordingChecker struct {
	urlChecker
	mem    *scanstore.URLMemory
	writes *atomic.Int32
	at     atomic.Int32
}

func (c *recordingChecker) Check(ctx context.Context, url string, o scan.CheckOptions) scan.URLVerdict {
	v := c.urlChecker.Check(ctx, url, o)
	c.mem.Finished(v, "scan")
	c.at.Store(c.writes.Load())
	return v
}

// A link's verdict is shown on its card and links its target to the card
// (for rechecks) in one write of the store on disk: the card's.
func TestVerdictLinksItsTargetInTheCardsWrite(t *testing.T) {
	const clean = "https://docs.example.org/"
	var writes atomic.Int32
	db, err := bolt.Open(t.TempDir(), bolt.Options{WriteFault: func() error { writes.Add(1); return nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	mem := &scanstore.URLMemory{DB: db}
	checker := &recordingChecker{urlChecker: urlChecker{levels: map[string]verdict.Level{clean: verdict.Clean}}, mem: mem, writes: &writes}
	e := newEnv(t, checker, ModeQuiet)
	e.db = db
	e.messages.Cards = NewCards(db)
	ts := e.deliver(t, "see <"+clean+">", func() {})
	e.messages.Wait()

	tg, err := db.Target(clean)
	if err != nil {
		t.Fatal(err)
	}
	if want := (card.Ref{Channel: "C1", SourceTS: ts}); len(tg.Cards) != 1 || tg.Cards[0] != want {
		t.Fatalf("target's cards %+v, want %+v", tg.Cards, want)
	}
	if rec := e.card(t, ts); !rec.Card.Final || rec.Card.Lines[0].Level != verdict.Clean {
		t.Fatalf("card %+v", rec.Card)
	}
	if n := writes.Load() - checker.at.Load(); n != 1 {
		t.Fatalf("%d store writes after the verdict was recorded, want 1 (the card's, linking the target)", n)
	}
}

// TestShareOfIsTheNewestShareInTheChannel: a file_shared event is about a
// new share, and the file may have been shared in the channel before: the
// newest share is the message to answer, each share its own dedupe key.
func TestShareOfIsTheNewestShareInTheChannel(t *testing.T) {
	f := &slack.File{}
	f.Shares.Public = map[string][]slack.ShareFileInfo{
		"C1": {{Ts: "1700000009.000900"}, {Ts: "1700000010.000100", ThreadTs: "1700000001.000001"}, {Ts: "999999999.999999"}},
		"C2": {{Ts: "1700000020.000000"}},
	}
	if ts, thread := shareOf(f, "C1"); ts != "1700000010.000100" || thread != "1700000001.000001" {
		t.Errorf("shareOf C1 = %q, %q", ts, thread)
	}
	if ts, _ := shareOf(f, "C3"); ts != "" {
		t.Errorf("shareOf a channel without a share = %q", ts)
	}
	if shareKey("F1", "C1", "1.1") == shareKey("F1", "C1", "1.2") {
		t.Error("two shares of a file in a channel have one dedupe key")
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"2.0", "10.0", false}, {"10.0", "2.0", true}, {"5.000010", "5.000009", true}, {"5.1", "5.1", false}} {
		if got := laterTS(tc.a, tc.b); got != tc.want {
			t.Errorf("laterTS(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

// An edit that changes the links while the first scan is in flight
// starts a newer scan; the first scan's job is done too once its verdict
// comes back to a card the edit took over, not left in the journal
// (the chaos soak found the job of every such message left behind: a
// restart would have resumed the message's first version).
func TestEditDuringTheScanFinishesBothJobs(t *testing.T) {
	const slow, added = "https://slow.example.net/", "https://added.example.net/"
	gate := make(chan struct{})
	checker := &urlChecker{levels: map[string]verdict.Level{slow: verdict.Malicious, added: verdict.Clean},
		gates: map[string]chan struct{}{slow: gate}}
	e := newEnv(t, checker, ModeVerbose)
	var first, second atomic.Int32
	ts := e.deliver(t, "see <"+slow+">", func() { first.Add(1) })
	waitUntil(t, "the first scan's card is posted", func() bool { return e.card(t, ts).Card.CardTS != "" })

	text := "see <" + slow + "> and <" + added + ">"
	prev := &slack.Msg{Type: "message", Channel: "C1", User: "U1", Text: "see <" + slow + ">", Timestamp: ts}
	edited := &slack.Msg{Type: "message", Channel: "C1", User: "U1", Text: text, Timestamp: ts}
	ev := &slackevents.MessageEvent{Type: "message", SubType: "message_changed", Channel: "C1", ChannelType: "channel",
		TimeStamp: "9999999999.000001", Message: edited, PreviousMessage: prev}
	e.messages.Handle(t.Context(), ev, bot.Meta{EventID: "Ev2", Done: func() { second.Add(1) }})
	waitUntil(t, "the edit's scan took the card over", func() bool { return e.card(t, ts).Gen > 1 || len(e.card(t, ts).Card.Lines) == 2 })
	close(gate)
	e.messages.Wait()

	rec := e.card(t, ts)
	if !rec.Card.Final || len(rec.Card.Lines) != 2 {
		t.Fatalf("final card: %+v", rec.Card)
	}
	if f, s := first.Load(), second.Load(); f != 1 || s != 1 {
		t.Fatalf("jobs done: the first message's %d times, the edit's %d times; want each once", f, s)
	}
}

// The note a deletion adds to a posted card outlasts a 429 storm on
// chat.update (more 429s than the poster's own retries): it is the card's
// last word, and the deletion's event is not delivered again.
func TestDeletionNoteOutlastsA429Storm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, &urlChecker{}, ModeVerbose)
	e.messages.init()
	d, _ := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "message"})
	draft := card.Card{Channel: "C1", ThreadTS: d.TS, SourceTS: d.TS, Lines: []card.Line{{Target: "https://a.test/", Level: verdict.Malicious}}, Final: true}
	if _, _, err := e.messages.Cards.Begin("C1", d.TS, draft, ModeVerbose); err != nil {
		t.Fatal(err)
	}
	c := draft.Clone()
	e.messages.show(t.Context(), &c)
	cardTS := e.card(t, d.TS).Card.CardTS
	if cardTS == "" {
		t.Fatal("the card was not posted")
	}
	e.fake.RateLimit("chat.update", 5, 100*time.Millisecond)
	ev := &slackevents.MessageEvent{Type: "message", SubType: "message_deleted", Channel: "C1", ChannelType: "channel", DeletedTimeStamp: d.TS,
		Message: &slack.Msg{Type: "message", SubType: "message_deleted"}}
	e.messages.Handle(t.Context(), ev, bot.Meta{EventID: "Ev2"})
	m, _ := e.fake.Message("C1", cardTS)
	if !bytes.Contains(m.Blocks, []byte("was deleted")) {
		t.Fatalf("the card does not carry the deletion's note after the 429s: %s", m.Blocks)
	}
	if !e.card(t, d.TS).Deleted {
		t.Fatal("the card record is not marked deleted")
	}
}

// The process stopped while the file card's final update waited its turn
// (Slack's chat.update budget after a 429 storm): the store holds the
// final card, posted, but Slack still shows "Scanning…". The resumed job
// shows the final card once more (the 30-minute soak's file card left at
// "Scanning…").
func TestResumedFileJobShowsAFinalCardSlackMissed(t *testing.T) {
	e, files, msg := resumedFileJob(t, ModeVerbose)
	d := msg.Timestamp
	cardTS := finalFileCardSlackMissed(t, e, d, "F1")
	var done atomic.Int32
	files.handle(t.Context(), "C1", msg, fileJob{who: requesterOf("C1", msg, ""), mode: ModeVerbose, resumed: true}, func() { done.Add(1) })
	e.messages.Wait()
	m, _ := e.fake.Message("C1", cardTS)
	if bytes.Contains(m.Blocks, []byte("Scanning")) || !bytes.Contains(m.Blocks, []byte("Malicious")) {
		t.Fatalf("the resumed job left the card at: %s", m.Blocks)
	}
	if done.Load() != 1 || len(e.botReplies(d)) != 1 {
		t.Fatalf("done %d, %d cards in the thread; want 1 and 1", done.Load(), len(e.botReplies(d)))
	}
}

// A replica was killed between the file card's final write and its update
// in Slack, after quarantine had removed the message that shared the file:
// the job taken over is the file_shared event's, which carries only the
// file's id, and Slack no longer shows the share (its message is gone).
// The resumed job finds the card by the file and shows the final card once
// more (the 30-minute soak's file card left at "Scanning…", seed
// 1795875693851307672).
func TestResumedFileSharedJobShowsTheCardOfARemovedMessage(t *testing.T) {
	resumedFileSharedJobOfARemovedMessage(t, 0)
}

// The same, in a channel that gained more cards between the kill and the
// takeover than the first read looks through (recentFileCards): the job
// reads further back, while the cards it reads are newer than the share.
func TestResumedFileSharedJobFindsItsCardPastABusyChannel(t *testing.T) {
	resumedFileSharedJobOfARemovedMessage(t, recentFileCards+50)
}

func resumedFileSharedJobOfARemovedMessage(t *testing.T, newer int) {
	t.Helper()
	e := newEnv(t, &urlChecker{}, ModeVerbose)
	checker := &fileChecker{release: make(chan struct{})}
	close(checker.release)
	files := &Files{Messages: e.messages, Check: checker, Uploader: e.poster, Info: e.api,
		FirstTime: func(string) (bool, error) { return false, nil }} // announced before the kill
	e.messages.Files = files
	e.messages.init()
	e.fake.AddFile(slackfake.File{ID: "F1", Name: "invoice.exe", Filetype: "exe", Content: []byte("MZ")})
	d, err := e.fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "invoice", SubType: "file_share", Files: []string{"F1"}})
	if err != nil {
		t.Fatal(err)
	}
	cardTS := finalFileCardSlackMissed(t, e, d.TS, "F1")
	if _, err := e.fake.DeleteMessage("C1", d.TS); err != nil { // quarantine removed it
		t.Fatal(err)
	}
	sec, _, _ := strings.Cut(d.TS, ".")
	after, err := strconv.Atoi(sec)
	if err != nil {
		t.Fatal(err)
	}
	for i := range newer { // other messages' cards, a second after the share
		ts := fmt.Sprintf("%d.%06d", after+1, i)
		c := card.Card{Channel: "C1", ThreadTS: ts, SourceTS: ts, Lines: []card.Line{{Kind: card.KindURL,
			Target: fmt.Sprintf("https://site%d.test/", i), Level: verdict.Clean}}, Final: true}
		if _, _, err := e.messages.Cards.Begin("C1", ts, c, ModeVerbose); err != nil {
			t.Fatal(err)
		}
	}
	var done atomic.Int32
	files.Shared(t.Context(), &slackevents.FileSharedEvent{FileID: "F1", ChannelID: "C1", UserID: "U1", EventTimestamp: d.TS},
		bot.Meta{Replayed: true, Done: func() { done.Add(1) }})
	e.messages.Wait()
	m, _ := e.fake.Message("C1", cardTS)
	if bytes.Contains(m.Blocks, []byte("Scanning")) || !bytes.Contains(m.Blocks, []byte("Malicious")) {
		t.Fatalf("the resumed job left the card at: %s", m.Blocks)
	}
	if done.Load() != 1 {
		t.Fatalf("done %d times, want 1", done.Load())
	}
}

// finalFileCardSlackMissed posts the file card of the message at ts in C1
// while it is scanning, then stores it final (malicious) without showing
// it: the card's update never reached Slack. It returns the card's ts.
func finalFileCardSlackMissed(t *testing.T, e *env, ts, fileID string) string {
	t.Helper()
	src := fileCardTS(ts)
	scanning := card.Card{Channel: "C1", ThreadTS: ts, SourceTS: src, Lines: []card.Line{{Kind: card.KindFile,
		Target: "invoice.exe", Level: verdict.Pending, Status: "running", File: &card.FileInfo{ID: fileID, Name: "invoice.exe"}}}}
	if _, _, err := e.messages.Cards.Begin("C1", src, scanning, ModeVerbose); err != nil {
		t.Fatal(err)
	}
	c := scanning.Clone()
	e.messages.show(t.Context(), &c) // posted while scanning
	e.messages.Cards.Change("C1", src, 0, func(r *store.CardRecord) {
		r.Card.Lines[0].Level, r.Card.Lines[0].Status, r.Card.Final = verdict.Malicious, "", true
	})
	cardTS := e.card(t, src).Card.CardTS
	if m, _ := e.fake.Message("C1", cardTS); !bytes.Contains(m.Blocks, []byte("Scanning")) {
		t.Fatalf("the card in Slack before the restart: %s", m.Blocks)
	}
	return cardTS
}
