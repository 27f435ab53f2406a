package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/settings"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/store/bolt"
	"github.com/verdictbot/verdictbot/verdict"
)

// homeAPI is a hand-written HomeSlack: channels the bot is in, their
// members, and the views published. Membership reads several channels'
// members at once, so it is safe for concurrent use.
type homeAPI struct {
	mu          sync.Mutex
	channels    []slack.Channel
	members     map[string][]string
	membersErr  map[string]error
	memberCalls int
	published   []slack.PublishViewContextRequest
}

func (a *homeAPI) PublishViewContext(_ context.Context, req slack.PublishViewContextRequest) (*slack.ViewResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.published = append(a.published, req)
	return &slack.ViewResponse{}, nil
}

func (a *homeAPI) GetConversationsForUserContext(_ context.Context, p *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.channels, "", nil
}

func (a *homeAPI) GetUsersInConversationContext(_ context.Context, p *slack.GetUsersInConversationParameters) ([]string, string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.memberCalls++
	if err := a.membersErr[p.ChannelID]; err != nil {
		return nil, "", err
	}
	return a.members[p.ChannelID], "", nil
}

func channelOf(id, name string, private bool) slack.Channel {
	var c slack.Channel
	c.ID, c.Name, c.IsPrivate = id, name, private
	return c
}

func openStore(t *testing.T) store.State {
	t.Helper()
	db, err := bolt.Open(t.TempDir(), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func putVerdict(t *testing.T, db store.State, channel, ts, target string, level verdict.Level) {
	t.Helper()
	rec := &store.CardRecord{Card: card.Card{Channel: channel, SourceTS: ts, Final: true,
		Lines: []card.Line{{Kind: card.KindURL, Target: target, Level: level}}}}
	if err := db.PutCard(rec); err != nil {
		t.Fatal(err)
	}
}

func viewJSON(t *testing.T, v slack.HomeTabViewRequest) (string, int) {
	t.Helper()
	raw, err := json.Marshal(v.Blocks)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw), len(v.Blocks.BlockSet)
}

func TestHomeStaysWithinSlacksLimits(t *testing.T) {
	db := openStore(t)
	api := &homeAPI{members: map[string][]string{}}
	for i := range 60 {
		id := fmt.Sprintf("C%03d", i)
		api.channels = append(api.channels, channelOf(id, fmt.Sprintf("chan-%03d", i), false))
		api.members[id] = []string{"UADMIN"}
		putVerdict(t, db, id, "1.1", fmt.Sprintf("https://evil-%03d.test/", i), verdict.Malicious)
	}
	s := &Scan{State: db, Settings: &settings.Channels{Store: db, Defaults: settings.Defaults{Mode: "quiet"}}}
	h := &Home{API: api, Scan: s, Registry: NewScanRegistry(s), Access: &Access{Admins: []string{"UADMIN"}}}
	v := h.View(t.Context(), "UADMIN", "")
	js, n := viewJSON(t, v)
	if n > maxHomeBlocks {
		t.Fatalf("%d blocks, Slack takes 100", n)
	}
	for _, want := range []string{"and 40 more channel(s)", "… and 50 more", `"action_id":"home_channel_mode"`, `"block_id":"home_channel:C000"`} {
		if !strings.Contains(js, want) {
			t.Errorf("the view lacks %q", want)
		}
	}
	if strings.Contains(js, "home_channel:C020") {
		t.Error("a 21st channel is listed with its selects")
	}
	if api.memberCalls != 60 {
		t.Errorf("%d conversations.members calls, want one per channel", api.memberCalls)
	}
	h.View(t.Context(), "UADMIN", "")
	if api.memberCalls != 60 {
		t.Errorf("%d conversations.members calls after a second open, want the cached 60", api.memberCalls)
	}
}

func TestHomeFailsClosedWhenMembershipIsUnknown(t *testing.T) {
	db := openStore(t)
	api := &homeAPI{
		channels:   []slack.Channel{channelOf("C1", "general", false), channelOf("G1", "incident", true)},
		members:    map[string][]string{"C1": {"U1"}},
		membersErr: map[string]error{"G1": errors.New("ratelimited")},
	}
	putVerdict(t, db, "C1", "1.1", "https://public.test/", verdict.Suspicious)
	putVerdict(t, db, "G1", "1.1", "https://private-incident.test/", verdict.Malicious)
	s := &Scan{State: db, Settings: &settings.Channels{Store: db, Defaults: settings.Defaults{Mode: "quiet"}}}
	h := &Home{API: api, Scan: s, Registry: NewScanRegistry(s), Access: &Access{}}
	js, _ := viewJSON(t, h.View(t.Context(), "U1", ""))
	if !strings.Contains(js, "public[.]test") {
		t.Errorf("the viewer's own channel's verdict is missing: %s", js)
	}
	if strings.Contains(js, "private-incident") || strings.Contains(js, "G1") {
		t.Errorf("a channel whose members could not be read is shown: %s", js)
	}
	if strings.Contains(js, "static_select") {
		t.Error("a non-admin gets selects")
	}
}

func TestHomeListsReportsAwaitingAnAnswer(t *testing.T) {
	db := openStore(t)
	api := &homeAPI{channels: []slack.Channel{channelOf("C1", "general", false)}, members: map[string][]string{"C1": {"U1"}}}
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	rec := &store.CardRecord{Card: card.Card{Channel: "C1", SourceTS: "1.1", Final: true, Lines: []card.Line{
		{Kind: card.KindURL, Target: "https://a.test/", TaskID: "aaaa", Level: verdict.Malicious,
			Reports: []card.Report{{User: "U1", Option: "fp", Category: verdict.CatPhishing, At: at, Outcome: OutcomeUnreachable}}},
		{Kind: card.KindURL, Target: "https://b.test/", TaskID: "bbbb", Level: verdict.Malicious,
			Reports: []card.Report{{User: "U1", Option: "fp", Category: verdict.CatPhishing, At: at, Outcome: OutcomeUnreachable},
				{User: "U2", Option: "fp", Category: verdict.CatPhishing, At: at.Add(time.Minute)}}},
	}}}
	if err := db.PutCard(rec); err != nil {
		t.Fatal(err)
	}
	f := &Feedback{}
	f.pending = map[string]PendingReport{"k": {User: "U3", Channel: "C1", TaskID: "cccc", Option: "fn", Category: verdict.CatPhishing, Since: at},
		"elsewhere": {User: "U4", Channel: "C9", TaskID: "dddd", Option: "fp", Since: at}}
	s := &Scan{State: db, Settings: &settings.Channels{Store: db, Defaults: settings.Defaults{Mode: "quiet"}}}
	h := &Home{API: api, Scan: s, Registry: NewScanRegistry(s), Access: &Access{}, Pending: f.Pending}
	js, _ := viewJSON(t, h.View(t.Context(), "U1", ""))
	for _, want := range []string{"task `aaaa`", "task `cccc`", "being sent since"} {
		if !strings.Contains(js, want) {
			t.Errorf("reports lack %q: %s", want, js)
		}
	}
	for _, not := range []string{"task `bbbb`", "task `dddd`"} {
		if strings.Contains(js, not) {
			t.Errorf("reports show %q (answered later, or in a channel the viewer is not in)", not)
		}
	}
}

// publishAPI is a homeAPI that tells each publish on a channel.
type publishAPI struct {
	homeAPI
	done chan string // the user of each publish
}

func (a *publishAPI) PublishViewContext(ctx context.Context, req slack.PublishViewContextRequest) (*slack.ViewResponse, error) {
	r, err := a.homeAPI.PublishViewContext(ctx, req)
	a.done <- req.UserID
	return r, err
}

func (a *publishAPI) publishedFor(user string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, p := range a.published {
		if p.UserID == user {
			n++
		}
	}
	return n
}

func waitPublished(t *testing.T, api *publishAPI, users ...string) {
	t.Helper()
	for range users {
		select {
		case <-api.done:
		case <-time.After(10 * time.Second):
			t.Fatalf("the Home was not published for all of %v", users)
		}
	}
}

func TestHomeOpensAreDebouncedPerPerson(t *testing.T) {
	db := openStore(t)
	api := &publishAPI{homeAPI: homeAPI{channels: []slack.Channel{channelOf("C1", "general", false)},
		members: map[string][]string{"C1": {"U1", "U2"}}}, done: make(chan string, 1000)}
	s := &Scan{State: db, Settings: &settings.Channels{Store: db, Defaults: settings.Defaults{Mode: "quiet"}}}
	h := &Home{API: api, Scan: s, Registry: NewScanRegistry(s), Access: &Access{}}
	h.Start(t.Context())
	t.Cleanup(h.Stop)

	// One person opening the tab 150 times at once: one Home.
	for range 150 {
		h.Opened(t.Context(), "U1", "home")
	}
	waitPublished(t, api, "U1")
	// Opened again now: served by the view just published.
	for range 150 {
		h.Opened(t.Context(), "U1", "home")
	}
	h.mu.Lock()
	waiting := len(h.waiting)
	h.mu.Unlock()
	if waiting != 0 || api.publishedFor("U1") != 1 {
		t.Fatalf("after 300 opens by one person: %d Homes published, %d waiting; want 1 and 0", api.publishedFor("U1"), waiting)
	}
	// Another person is served too, and the Messages tab needs nothing.
	h.Opened(t.Context(), "U2", "home")
	h.Opened(t.Context(), "U3", "messages")
	waitPublished(t, api, "U2")
	if api.publishedFor("U1") != 1 || api.publishedFor("U2") != 1 || api.publishedFor("U3") != 0 {
		t.Fatalf("published U1 %d, U2 %d, U3 %d; want 1, 1, 0", api.publishedFor("U1"), api.publishedFor("U2"), api.publishedFor("U3"))
	}
	// Once Fresh has passed, an open builds it again.
	h.mu.Lock()
	h.published["U1"] = time.Now().Add(-DefaultHomeFresh)
	h.mu.Unlock()
	h.Opened(t.Context(), "U1", "home")
	waitPublished(t, api, "U1")
	if n := api.publishedFor("U1"); n != 2 {
		t.Fatalf("U1's Home published %d times, want 2", n)
	}
}

func TestHomeWaitingOpensAreBoundedAndTheRestLogged(t *testing.T) {
	db := openStore(t)
	api := &publishAPI{homeAPI: homeAPI{channels: []slack.Channel{channelOf("C1", "general", false)},
		members: map[string][]string{"C1": {}}}, done: make(chan string, 2*maxHomeWaiting)}
	s := &Scan{State: db, Settings: &settings.Channels{Store: db, Defaults: settings.Defaults{Mode: "quiet"}}}
	logs := &lockedBuffer{}
	h := &Home{API: api, Scan: s, Registry: NewScanRegistry(s), Access: &Access{}, Log: slog.New(slog.NewTextHandler(logs, nil))}
	// Not started yet: the opens wait, up to the bound.
	for i := range maxHomeWaiting + 7 {
		h.Opened(t.Context(), fmt.Sprintf("U%05d", i), "home")
	}
	h.mu.Lock()
	waiting, dropped := len(h.waiting), h.dropped
	h.mu.Unlock()
	if waiting != maxHomeWaiting || dropped != 7 {
		t.Fatalf("%d waiting and %d dropped, want %d and 7", waiting, dropped, maxHomeWaiting)
	}
	h.Start(t.Context())
	users := make([]string, maxHomeWaiting)
	waitPublished(t, api, users...)
	h.Stop()
	if !strings.Contains(logs.String(), "App Home opens not served: too many people waiting") || !strings.Contains(logs.String(), "opens=7") {
		t.Errorf("the opens not served were not logged:\n%s", logs.String())
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
