package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/verdict"
)

// apiCall is one request the fake Slack received.
type apiCall struct {
	method string     // "chat.postMessage", "upload" for the upload URL
	form   url.Values // form values (multipart fields for the upload)
	file   []byte     // uploaded bytes
	at     time.Time
}

// fakeSlack is an httptest server speaking just enough of the Web API for
// the poster, recording every call. Methods answer ok unless a reply was
// queued for them with reply.
type fakeSlack struct {
	t   *testing.T
	srv *httptest.Server

	mu      sync.Mutex
	calls   []apiCall
	replies map[string][]func(w http.ResponseWriter)
	ts      int
}

func newFakeSlack(t *testing.T) *fakeSlack {
	t.Helper()
	f := &fakeSlack{t: t, replies: map[string][]func(http.ResponseWriter){}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// client is a real slack-go client pointed at the fake.
func (f *fakeSlack) client() *slack.Client {
	return slack.New("xoxb-test", slack.OptionAPIURL(f.srv.URL+"/"))
}

// reply queues a one-time answer for method.
func (f *fakeSlack) reply(method string, fn func(w http.ResponseWriter)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies[method] = append(f.replies[method], fn)
}

// replyError queues {"ok":false,"error":code} for method.
func (f *fakeSlack) replyError(method, code string) {
	f.reply(method, func(w http.ResponseWriter) {
		writeJSON(w, map[string]any{"ok": false, "error": code})
	})
}

// reply429 queues a 429 with Retry-After for method.
func (f *fakeSlack) reply429(method string, retryAfter int) {
	f.reply(method, func(w http.ResponseWriter) {
		w.Header().Set("Retry-After", fmt.Sprint(retryAfter))
		w.WriteHeader(http.StatusTooManyRequests)
		writeJSON(w, map[string]any{"ok": false, "error": "ratelimited"})
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/")
	c := apiCall{method: method, at: time.Now()}
	if strings.HasPrefix(method, "upload/") {
		c.method = "upload"
		mr, err := r.MultipartReader()
		if err != nil {
			f.t.Errorf("upload: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.form = url.Values{}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				f.t.Errorf("upload: %v", err)
				return
			}
			b, _ := io.ReadAll(p)
			if p.FormName() == "file" {
				c.file = b
				c.form.Set("filename", p.FileName())
			} else {
				c.form.Set(p.FormName(), string(b))
			}
		}
	} else {
		if err := r.ParseForm(); err != nil {
			f.t.Errorf("%s: %v", method, err)
		}
		c.form = r.PostForm
	}

	f.mu.Lock()
	f.calls = append(f.calls, c)
	var fn func(http.ResponseWriter)
	if q := f.replies[method]; len(q) > 0 {
		fn, f.replies[method] = q[0], q[1:]
	}
	f.ts++
	ts := fmt.Sprintf("1700000000.%06d", f.ts)
	f.mu.Unlock()
	if fn != nil {
		fn(w)
		return
	}

	switch c.method {
	case "chat.postMessage", "chat.update":
		writeJSON(w, map[string]any{"ok": true, "channel": c.form.Get("channel"), "ts": ts})
	case "chat.postEphemeral":
		writeJSON(w, map[string]any{"ok": true, "message_ts": ts})
	case "reactions.add", "reactions.remove", "files.completeUploadExternal":
		if c.method == "files.completeUploadExternal" {
			var files []slack.FileSummary
			_ = json.Unmarshal([]byte(c.form.Get("files")), &files)
			writeJSON(w, map[string]any{"ok": true, "files": files})
			return
		}
		writeJSON(w, map[string]any{"ok": true})
	case "files.getUploadURLExternal":
		writeJSON(w, map[string]any{"ok": true, "upload_url": f.srv.URL + "/upload/F0SHOT", "file_id": "F0SHOT"})
	case "upload":
		_, _ = io.WriteString(w, "OK - "+fmt.Sprint(len(c.file)))
	default:
		f.t.Errorf("unexpected call to %s", method)
		writeJSON(w, map[string]any{"ok": false, "error": "unknown_method"})
	}
}

// callsTo returns the recorded calls of method.
func (f *fakeSlack) callsTo(method string) []apiCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []apiCall
	for _, c := range f.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeSlack) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.method)
	}
	return out
}

// newTestPoster returns a poster on a fresh fake, closed at cleanup (and
// checked to leave no writer goroutine behind).
func newTestPoster(t *testing.T, opts PosterOptions) (*Poster, *fakeSlack) {
	t.Helper()
	f := newFakeSlack(t)
	p := NewPoster(f.client(), opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p, f
}

func testCard(channel string) *card.Card {
	return &card.Card{
		Channel: channel, ThreadTS: "1699999999.000100",
		Lines: []card.Line{{Kind: card.KindURL, Target: "https://evil.example/login", Level: verdict.Pending, Status: "queued", TaskID: "t-1"}},
	}
}

// blocksJSON is how slack-go sends blocks: the form value to compare with.
func blocksJSON(t *testing.T, blocks []slack.Block) string {
	t.Helper()
	b, err := json.Marshal(slack.Blocks{BlockSet: blocks})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPostInThreadUnfurlsOff(t *testing.T) {
	t.Parallel()
	var observed []string
	var mu sync.Mutex
	p, f := newTestPoster(t, PosterOptions{OnCall: func(method string, err error, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		observed = append(observed, fmt.Sprintf("%s %v", method, err))
	}})
	c := testCard("C1")
	if err := p.Post(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	calls := f.callsTo("chat.postMessage")
	if len(calls) != 1 {
		t.Fatalf("%d posts", len(calls))
	}
	form := calls[0].form
	blocks, fallback := Blocks(c)
	for k, want := range map[string]string{
		"channel": "C1", "thread_ts": "1699999999.000100",
		"unfurl_links": "false", "unfurl_media": "false",
		"text": fallback, "blocks": blocksJSON(t, blocks),
	} {
		if got := form.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if strings.Contains(form.Get("blocks"), "evil.example") || strings.Contains(form.Get("text"), "evil") {
		t.Error("the posted card carries the raw URL")
	}
	if c.CardTS == "" {
		t.Error("CardTS not set")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(observed) != 1 || observed[0] != "chat.postMessage <nil>" {
		t.Errorf("OnCall saw %q", observed)
	}
}

func TestPostRetries429(t *testing.T) {
	t.Parallel()
	var codes []string
	var mu sync.Mutex
	p, f := newTestPoster(t, PosterOptions{OnCall: func(method string, err error, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		codes = append(codes, ErrorCode(err))
	}})
	f.reply429("chat.postMessage", 1)
	start := time.Now()
	if err := p.Post(t.Context(), testCard("C1")); err != nil {
		t.Fatal(err)
	}
	calls := f.callsTo("chat.postMessage")
	if len(calls) != 2 {
		t.Fatalf("%d calls, want the 429 and one retry", len(calls))
	}
	if gap := calls[1].at.Sub(calls[0].at); gap < time.Second {
		t.Errorf("retried after %v, before Retry-After (1s)", gap)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(codes, ",") != "ratelimited," {
		t.Errorf("OnCall codes %q", codes)
	}
}

func TestPost429GivesUp(t *testing.T) {
	t.Parallel()
	t.Run("attempts", func(t *testing.T) {
		t.Parallel()
		p, f := newTestPoster(t, PosterOptions{MaxAttempts: 1})
		f.reply429("chat.postMessage", 1)
		err := p.Post(t.Context(), testCard("C1"))
		var rl *slack.RateLimitedError
		if !errors.As(err, &rl) || ErrorCode(err) != "ratelimited" || !strings.HasPrefix(err.Error(), "chat.postMessage: ") {
			t.Errorf("err = %v", err)
		}
		if n := len(f.callsTo("chat.postMessage")); n != 1 {
			t.Errorf("%d calls", n)
		}
	})
	t.Run("context", func(t *testing.T) {
		t.Parallel()
		p, f := newTestPoster(t, PosterOptions{})
		f.reply429("chat.postMessage", 30)
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		err := p.Post(ctx, testCard("C1"))
		if !errors.Is(err, context.DeadlineExceeded) && ErrorCode(err) != "ratelimited" {
			t.Errorf("err = %v", err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("waited %v despite the context", d)
		}
	})
}

func TestPostErrorsNotRetried(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"channel_not_found", "not_in_channel", "msg_too_long"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			p, f := newTestPoster(t, PosterOptions{})
			f.replyError("chat.postMessage", code)
			c := testCard("C1")
			err := p.Post(t.Context(), c)
			if ErrorCode(err) != code || err.Error() != "chat.postMessage: "+code {
				t.Errorf("err = %v", err)
			}
			if n := len(f.callsTo("chat.postMessage")); n != 1 {
				t.Errorf("%d calls", n)
			}
			if c.CardTS != "" {
				t.Error("CardTS set on failure")
			}
		})
	}
}

func TestPostFallsBackToMinimalCard(t *testing.T) {
	t.Parallel()
	for _, code := range []string{"invalid_blocks", "msg_blocks_too_long"} {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			p, f := newTestPoster(t, PosterOptions{})
			f.replyError("chat.postMessage", code)
			c := testCard("C1")
			if err := p.Post(t.Context(), c); err != nil {
				t.Fatal(err)
			}
			calls := f.callsTo("chat.postMessage")
			if len(calls) != 2 {
				t.Fatalf("%d calls", len(calls))
			}
			if got, want := calls[1].form.Get("blocks"), blocksJSON(t, minimalBlocks(c)); got != want {
				t.Errorf("second post: %s, want the minimal card %s", got, want)
			}
			if calls[1].form.Get("thread_ts") != c.ThreadTS || c.CardTS == "" {
				t.Error("minimal card not posted in the thread")
			}
		})
	}
	t.Run("both rejected", func(t *testing.T) {
		t.Parallel()
		p, f := newTestPoster(t, PosterOptions{})
		f.replyError("chat.postMessage", "invalid_blocks")
		f.replyError("chat.postMessage", "invalid_blocks")
		err := p.Post(t.Context(), testCard("C1"))
		if err == nil || !strings.Contains(err.Error(), "minimal card") {
			t.Errorf("err = %v", err)
		}
		if n := len(f.callsTo("chat.postMessage")); n != 2 {
			t.Errorf("%d calls, want one fallback only", n)
		}
	})
}

// TestUpdateCoalesces: ten rapid updates of one card make few chat.update
// calls, spaced by MinUpdateInterval, and the newest state lands; the
// final state that follows them is written at once, in place of the
// progress still queued.
func TestUpdateCoalesces(t *testing.T) {
	t.Parallel()
	const interval = 300 * time.Millisecond
	p, f := newTestPoster(t, PosterOptions{MinUpdateInterval: interval})
	c := testCard("C1")
	if err := p.Post(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	posted := f.callsTo("chat.postMessage")[0].at
	for i := 1; i <= 10; i++ {
		c.Notes = []string{fmt.Sprintf("state %d", i)}
		if err := p.Update(t.Context(), c); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		time.Sleep(interval / 5)
	}
	// The tenth state lands once its interval has passed.
	deadline := time.Now().Add(3 * time.Second)
	for {
		calls := f.callsTo("chat.update")
		if len(calls) > 0 && strings.Contains(calls[len(calls)-1].form.Get("blocks"), "state 10") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state 10 never written; %d calls", len(calls))
		}
		time.Sleep(10 * time.Millisecond)
	}
	calls := f.callsTo("chat.update")
	if len(calls) < 2 || len(calls) > 3 {
		t.Fatalf("%d chat.update calls for 10 updates over %v, want 2 or 3", len(calls), 2*interval)
	}
	last := calls[len(calls)-1]
	if last.form.Get("ts") != c.CardTS || last.form.Get("channel") != "C1" {
		t.Errorf("update of %s/%s", last.form.Get("channel"), last.form.Get("ts"))
	}
	if gap := calls[0].at.Sub(posted); gap < interval-20*time.Millisecond {
		t.Errorf("first update %v after the post, want ≥ %v", gap, interval)
	}
	for i := 1; i < len(calls); i++ {
		if gap := calls[i].at.Sub(calls[i-1].at); gap < interval-20*time.Millisecond {
			t.Errorf("updates %v apart, want ≥ %v", gap, interval)
		}
	}
}

// TestFinalStateDoesNotWaitBehindProgress: a verdict that comes just after
// a progress edit ("Scanning… (completed)") is written at once, not a
// MinUpdateInterval after that edit; and a verdict that comes while
// progress is queued takes its place (one call, the verdict's).
func TestFinalStateDoesNotWaitBehindProgress(t *testing.T) {
	t.Parallel()
	const interval = time.Second
	p, f := newTestPoster(t, PosterOptions{MinUpdateInterval: interval})
	c := testCard("C1")
	if err := p.Post(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	// Progress queued inside the post's interval, then the verdict.
	c.Lines[0].Status = "processing"
	if err := p.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	c.Lines[0].Level, c.Final = verdict.Malicious, true
	start := time.Now()
	if err := p.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > interval/2 {
		t.Errorf("the verdict waited %v behind queued progress", took)
	}
	if calls := f.callsTo("chat.update"); len(calls) != 1 || !strings.Contains(calls[0].form.Get("blocks"), "*Malicious*") {
		t.Fatalf("%d calls; want the verdict's only", len(calls))
	}

	// A second card: progress written, then the verdict 50 ms later.
	c2 := testCard("C2")
	if err := p.Post(t.Context(), c2); err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval + 50*time.Millisecond) // the post's interval is over
	c2.Lines[0].Status = "completed"
	if err := p.Update(t.Context(), c2); err != nil {
		t.Fatal(err)
	}
	for len(f.callsTo("chat.update")) < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	c2.Lines[0].Level, c2.Final = verdict.Clean, true
	start = time.Now()
	if err := p.Update(t.Context(), c2); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > interval/2 {
		t.Errorf("the verdict waited %v behind the progress edit written just before it", took)
	}
	calls := f.callsTo("chat.update")
	if len(calls) != 3 || !strings.Contains(calls[2].form.Get("blocks"), "*Clean*") {
		t.Fatalf("%d calls; want the progress edit and the verdict", len(calls))
	}
}

// TestUpdateLatestStateLands: a state queued behind a write in flight is
// written after it, never lost, even when it is not final.
func TestUpdateLatestStateLands(t *testing.T) {
	t.Parallel()
	const interval = 100 * time.Millisecond
	p, f := newTestPoster(t, PosterOptions{MinUpdateInterval: interval})
	c := testCard("C1")
	c.CardTS = "1700000000.000001"
	for i := 1; i <= 3; i++ {
		c.Notes = []string{fmt.Sprintf("state %d", i)}
		if err := p.Update(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(interval / 3)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		calls := f.callsTo("chat.update")
		if len(calls) > 0 && strings.Contains(calls[len(calls)-1].form.Get("blocks"), "state 3") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("state 3 never written; calls: %d", len(calls))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUpdateFinalNotDropped: a final update whose caller gives up is still
// written.
func TestUpdateFinalNotDropped(t *testing.T) {
	t.Parallel()
	f := newFakeSlack(t)
	p := NewPoster(f.client(), PosterOptions{MinUpdateInterval: 200 * time.Millisecond})
	c := testCard("C1")
	if err := p.Post(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	c.Final = true
	c.Lines[0].Level = verdict.Clean
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.Update(ctx, c); !errors.Is(err, context.Canceled) {
		t.Errorf("Update with a cancelled context = %v", err)
	}
	closeCtx, cancelClose := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancelClose()
	if err := p.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	calls := f.callsTo("chat.update")
	if len(calls) != 1 || !strings.Contains(calls[0].form.Get("blocks"), "*Clean*") {
		t.Errorf("final card not written: %d calls", len(calls))
	}
	if err := p.Update(t.Context(), c); !errors.Is(err, ErrClosed) {
		t.Errorf("Update after Close = %v", err)
	}
}

func TestUpdateFallsBackToMinimalCard(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{MinUpdateInterval: 10 * time.Millisecond})
	f.replyError("chat.update", "msg_blocks_too_long")
	c := testCard("C1")
	c.CardTS = "1700000000.000001"
	c.Final = true
	if err := p.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	calls := f.callsTo("chat.update")
	if len(calls) != 2 || calls[1].form.Get("blocks") != blocksJSON(t, minimalBlocks(c)) {
		t.Errorf("got %d updates; want the full card, then the minimal one", len(calls))
	}
}

func TestUpdateErrors(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{MinUpdateInterval: 10 * time.Millisecond})
	if err := p.Update(t.Context(), testCard("C1")); err == nil {
		t.Error("Update of a card never posted succeeded")
	}
	f.replyError("chat.update", "channel_not_found")
	c := testCard("C1")
	c.CardTS, c.Final = "1700000000.000001", true
	err := p.Update(t.Context(), c)
	if ErrorCode(err) != "channel_not_found" || !strings.HasPrefix(err.Error(), "chat.update: ") {
		t.Errorf("err = %v", err)
	}
}

// TestUpdateConcurrent hammers two cards from many goroutines: each card's
// final state lands, and progress updates of one card never overlap or
// crowd (the final state, last, does not wait for the interval).
func TestUpdateConcurrent(t *testing.T) {
	t.Parallel()
	const interval = 150 * time.Millisecond // long enough that request transit jitter under load stays inside the tolerance below
	p, f := newTestPoster(t, PosterOptions{MinUpdateInterval: interval})
	var wg sync.WaitGroup
	var finals atomic.Int32
	for _, ts := range []string{"1700000000.000001", "1700000000.000002"} {
		for g := range 8 {
			wg.Go(func() {
				for i := range 10 {
					c := testCard("C1")
					c.CardTS = ts
					c.Notes = []string{fmt.Sprintf("g%d i%d", g, i)}
					if err := p.Update(t.Context(), c); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		c := testCard("C1")
		c.CardTS, c.Final = ts, true
		c.Notes = []string{"final " + ts}
		if err := p.Update(t.Context(), c); err != nil {
			t.Error(err)
		}
		finals.Add(1)
	}
	byTS := map[string][]apiCall{}
	for _, c := range f.callsTo("chat.update") {
		byTS[c.form.Get("ts")] = append(byTS[c.form.Get("ts")], c)
	}
	for ts, calls := range byTS {
		if got := calls[len(calls)-1].form.Get("blocks"); !strings.Contains(got, "final "+ts) {
			t.Errorf("%s: last write is not the final state", ts)
		}
		if len(calls) > 5 {
			t.Errorf("%s: %d writes for 81 updates", ts, len(calls))
		}
		for i := 1; i < len(calls)-1; i++ {
			// Times are taken where the fake receives the writes, so a
			// write delayed in transit shortens the next gap: a third of
			// the interval is allowed for it (unpaced writes are ~1 ms apart).
			if gap := calls[i].at.Sub(calls[i-1].at); gap < interval-interval/3 {
				t.Errorf("%s: writes %v apart", ts, gap)
			}
		}
	}
}

// TestPacingPerChannel: posts to one channel are spaced; another channel is
// not held back by it.
func TestPacingPerChannel(t *testing.T) {
	t.Parallel()
	const interval = 400 * time.Millisecond
	p, f := newTestPoster(t, PosterOptions{PostInterval: interval, PostBurst: 1})
	start := time.Now()
	var wg sync.WaitGroup
	for _, ch := range []string{"CA", "CB"} {
		wg.Go(func() {
			for range 2 {
				if err := p.Reply(t.Context(), ch, "1.2", "hello"); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	byChannel := map[string][]time.Time{}
	for _, c := range f.callsTo("chat.postMessage") {
		byChannel[c.form.Get("channel")] = append(byChannel[c.form.Get("channel")], c.at)
	}
	for _, ch := range []string{"CA", "CB"} {
		at := byChannel[ch]
		if len(at) != 2 {
			t.Fatalf("%s: %d posts", ch, len(at))
		}
		if d := at[0].Sub(start); d > interval/2 {
			t.Errorf("%s: first post waited %v (held back by the other channel?)", ch, d)
		}
		if gap := at[1].Sub(at[0]); gap < interval-30*time.Millisecond {
			t.Errorf("%s: posts %v apart, want ≥ %v", ch, gap, interval)
		}
	}
}

func TestReactions(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{})
	if err := p.React(t.Context(), "C1", "1.2", ":white_check_mark:"); err != nil {
		t.Fatal(err)
	}
	f.replyError("reactions.add", "already_reacted")
	if err := p.React(t.Context(), "C1", "1.2", "white_check_mark"); err != nil {
		t.Errorf("already_reacted: %v", err)
	}
	f.replyError("reactions.remove", "no_reaction")
	if err := p.Unreact(t.Context(), "C1", "1.2", "white_check_mark"); err != nil {
		t.Errorf("no_reaction: %v", err)
	}
	f.replyError("reactions.add", "channel_not_found")
	if err := p.React(t.Context(), "C1", "1.2", "x"); ErrorCode(err) != "channel_not_found" || !strings.HasPrefix(err.Error(), "reactions.add: ") {
		t.Errorf("err = %v", err)
	}
	add := f.callsTo("reactions.add")[0].form
	if add.Get("name") != "white_check_mark" || add.Get("channel") != "C1" || add.Get("timestamp") != "1.2" {
		t.Errorf("reactions.add form %v", add)
	}
	if n := len(f.callsTo("reactions.remove")); n != 1 {
		t.Errorf("%d removes", n)
	}
}

func TestEphemeralAndReply(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{})
	blk := sectionBlock("b", "hi")
	if err := p.Ephemeral(t.Context(), "C1", "U0ABC", "only you", blk); err != nil {
		t.Fatal(err)
	}
	e := f.callsTo("chat.postEphemeral")[0].form
	if e.Get("user") != "U0ABC" || e.Get("channel") != "C1" || e.Get("text") != "only you" || e.Get("blocks") != blocksJSON(t, []slack.Block{blk}) {
		t.Errorf("ephemeral form %v", e)
	}
	if err := p.Reply(t.Context(), "C1", "1.2", "now malicious: hxxps://evil[.]example"); err != nil {
		t.Fatal(err)
	}
	r := f.callsTo("chat.postMessage")[0].form
	if r.Get("thread_ts") != "1.2" || r.Get("unfurl_links") != "false" || r.Get("unfurl_media") != "false" || r.Get("text") != "now malicious: hxxps://evil[.]example" {
		t.Errorf("reply form %v", r)
	}
}

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDRrest-of-image")

func TestUploadThreeSteps(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{})
	id, err := p.Upload(t.Context(), "C1", "1.2", "shot-1.png", pngBytes, "Screenshot of hxxps://evil[.]example")
	if err != nil {
		t.Fatal(err)
	}
	if id != "F0SHOT" {
		t.Errorf("file id %q", id)
	}
	if got := strings.Join(f.methods(), " "); got != "files.getUploadURLExternal upload files.completeUploadExternal" {
		t.Fatalf("calls: %s", got)
	}
	get := f.callsTo("files.getUploadURLExternal")[0].form
	if get.Get("filename") != "shot-1.png" || get.Get("length") != fmt.Sprint(len(pngBytes)) {
		t.Errorf("getUploadURLExternal form %v", get)
	}
	up := f.callsTo("upload")[0]
	if string(up.file) != string(pngBytes) {
		t.Errorf("uploaded %q", up.file)
	}
	done := f.callsTo("files.completeUploadExternal")[0].form
	var files []slack.FileSummary
	if err := json.Unmarshal([]byte(done.Get("files")), &files); err != nil || len(files) != 1 || files[0].ID != "F0SHOT" || files[0].Title != "Screenshot of hxxps://evil[.]example" {
		t.Errorf("files = %s (%v)", done.Get("files"), err)
	}
	if done.Get("channel_id") != "C1" || done.Get("thread_ts") != "1.2" {
		t.Errorf("completeUploadExternal form %v", done)
	}

	jpeg := append([]byte{0xFF, 0xD8, 0xFF, 0xE0}, "jfif"...)
	if _, err := p.Upload(t.Context(), "C1", "1.2", "", jpeg, ""); err != nil {
		t.Errorf("JPEG refused: %v", err)
	}
	if got := f.callsTo("files.getUploadURLExternal")[1].form.Get("filename"); got != "screenshot.jpg" {
		t.Errorf("default name %q", got)
	}
}

func TestUploadRefusesNonImages(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{})
	for name, data := range map[string][]byte{
		"empty": nil,
		"html":  []byte("<!doctype html><title>Sign in</title>"),
		"gif":   []byte("GIF89a\x01\x00"),
		"exe":   []byte("MZ\x90\x00"),
		"short": {0x89, 'P', 'N', 'G'},
	} {
		if _, err := p.Upload(t.Context(), "C1", "1.2", name, data, ""); !errors.Is(err, ErrNotImage) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if m := f.methods(); len(m) != 0 {
		t.Errorf("calls made: %v", m)
	}
}

func TestUpload429Retried(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{})
	f.reply429("files.completeUploadExternal", 1)
	if _, err := p.Upload(t.Context(), "C1", "1.2", "a.png", pngBytes, ""); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callsTo("files.completeUploadExternal")); n != 2 {
		t.Errorf("%d completeUploadExternal calls", n)
	}
}

// TestCloseLeavesNoGoroutines runs on its own poster: after Close, none of
// its writers is left.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	f := newFakeSlack(t)
	p := NewPoster(f.client(), PosterOptions{MinUpdateInterval: time.Hour})
	c := testCard("C1")
	if err := p.Post(t.Context(), c); err != nil { // starts the card's hour
		t.Fatal(err)
	}
	for range 5 {
		if err := p.Update(t.Context(), c); err != nil {
			t.Fatal(err)
		}
	}
	// The hour-long interval is cut short by Close, which writes the
	// queued state once.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.callsTo("chat.update")); n != 1 {
		t.Errorf("%d updates written at Close, want 1", n)
	}
	p.mu.Lock()
	for _, s := range p.slots {
		if s.writer {
			t.Error("a slot still has a writer after Close")
		}
	}
	p.mu.Unlock()
}

// TestUpdateNonFinalErrorLogged: a background write that fails reaches the
// logger and OnCall, since no caller waits for it.
func TestUpdateNonFinalErrorLogged(t *testing.T) {
	t.Parallel()
	logger, buf := testutil.Logger(slog.LevelInfo)
	var failed atomic.Int32
	p, f := newTestPoster(t, PosterOptions{
		MinUpdateInterval: 10 * time.Millisecond,
		Logger:            logger,
		OnCall: func(method string, err error, d time.Duration) {
			if method == "chat.update" && ErrorCode(err) == "not_in_channel" {
				failed.Add(1)
			}
		},
	})
	f.replyError("chat.update", "not_in_channel")
	c := testCard("C1")
	c.CardTS = "1700000000.000001"
	if err := p.Update(t.Context(), c); err != nil {
		t.Fatalf("a non-final update returns at once: %v", err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for !strings.Contains(buf.String(), "not_in_channel") {
		if time.Now().After(deadline) {
			t.Fatalf("not logged: %q", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if failed.Load() != 1 {
		t.Errorf("OnCall saw %d failures", failed.Load())
	}
}

// TestRetryClassification: only 429s, and 5xx for idempotent methods, are
// retried, and never past MaxAttempts.
func TestRetryClassification(t *testing.T) {
	p := NewPoster(nil, PosterOptions{MaxAttempts: 3})
	wrapped := fmt.Errorf("GetUploadURLExternal: %w", &slack.RateLimitedError{RetryAfter: 2 * time.Second})
	for _, tc := range []struct {
		name       string
		err        error
		attempt    int
		idempotent bool
		wait       time.Duration
		retry      bool
	}{
		{"429", &slack.RateLimitedError{RetryAfter: 2 * time.Second}, 1, false, 2 * time.Second, true},
		{"429 wrapped", wrapped, 2, false, 2 * time.Second, true},
		{"429 without delay", &slack.RateLimitedError{}, 1, false, time.Second, true},
		{"429 last attempt", &slack.RateLimitedError{RetryAfter: time.Second}, 3, false, 0, false},
		{"503 update", slack.StatusCodeError{Code: 503}, 1, true, time.Second, true},
		{"503 post", slack.StatusCodeError{Code: 503}, 1, false, 0, false},
		{"404", slack.StatusCodeError{Code: 404}, 1, true, 0, false},
		{"channel_not_found", slack.SlackErrorResponse{Err: "channel_not_found"}, 1, true, 0, false},
		{"network", errors.New("connection reset"), 1, true, 0, false},
	} {
		wait, retry := p.retryWait(tc.err, tc.attempt, tc.idempotent)
		if wait != tc.wait || retry != tc.retry {
			t.Errorf("%s: retryWait = %v, %v; want %v, %v", tc.name, wait, retry, tc.wait, tc.retry)
		}
	}
}

// TestFinalUpdatesGetTheBudgetFirst: when the workspace-wide chat.update
// budget is spent, a progress-only update is skipped and a final one waits
// its turn, so a burst of progress never delays verdicts.
func TestFinalUpdatesGetTheBudgetFirst(t *testing.T) {
	t.Parallel()
	p, f := newTestPoster(t, PosterOptions{UpdatesPerMinute: 600, UpdateBurst: 1}) // one token per 100 ms
	a := testCard("C1")
	a.CardTS, a.Final = "1700000000.000001", true
	if err := p.Update(t.Context(), a); err != nil { // takes the only token
		t.Fatal(err)
	}
	b := testCard("C2")
	b.CardTS = "1700000000.000002"
	b.Notes = []string{"progress"}
	if err := p.Update(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	for _, c := range f.callsTo("chat.update") {
		if strings.Contains(c.form.Get("blocks"), "progress") {
			t.Fatal("a progress update was written with no budget to spare")
		}
	}
	c := testCard("C3")
	c.CardTS, c.Final = "1700000000.000003", true
	c.Notes = []string{"final verdict"}
	if err := p.Update(t.Context(), c); err != nil { // waits for the next token
		t.Fatal(err)
	}
	found := false
	for _, call := range f.callsTo("chat.update") {
		found = found || strings.Contains(call.form.Get("blocks"), "final verdict")
	}
	if !found {
		t.Fatal("the final update was not written")
	}
}
