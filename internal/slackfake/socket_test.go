package slackfake_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/internal/slackfake/slackfaketest"
)

func eventsAPI(t *testing.T, ev socketmode.Event) (slackevents.EventsAPIEvent, *slackevents.EventsAPICallbackEvent) {
	t.Helper()
	api, ok := ev.Data.(slackevents.EventsAPIEvent)
	if !ok {
		t.Fatalf("event data is %T", ev.Data)
	}
	cb, ok := api.Data.(*slackevents.EventsAPICallbackEvent)
	if !ok {
		t.Fatalf("outer event is %T", api.Data)
	}
	return api, cb
}

func messageEvent(t *testing.T, ev socketmode.Event) *slackevents.MessageEvent {
	t.Helper()
	api, _ := eventsAPI(t, ev)
	m, ok := api.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		t.Fatalf("inner event is %T", api.InnerEvent.Data)
	}
	return m
}

func TestHelloEventAndAck(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)

	hello := b.next(t, ctx, socketmode.EventTypeHello)
	if got := hello.Request.ConnectionInfo.AppID; got != f.AppID() {
		t.Errorf("hello app_id = %q, want %q", got, f.AppID())
	}
	if hello.Request.NumConnections != 1 {
		t.Errorf("hello num_connections = %d, want 1", hello.Request.NumConnections)
	}
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{
		Channel: chanSec, User: alice,
		Text: "look <https://evil.example/a?b=1&amp;c=2|evil.example> &lt;now&gt;",
	}))
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	req := ev.Request
	if req.EnvelopeID != d.EnvelopeID || req.RetryAttempt != 0 || req.RetryReason != "" || req.AcceptsResponsePayload {
		t.Errorf("envelope = %+v", req)
	}
	api, cb := eventsAPI(t, ev)
	if api.APIAppID != f.AppID() || api.TeamID != f.TeamID() || cb.EventID != d.EventID {
		t.Errorf("outer event: app %q team %q event %q", api.APIAppID, api.TeamID, cb.EventID)
	}
	if len(cb.Authorizations) != 1 || cb.Authorizations[0].UserID != f.BotUserID() || !cb.Authorizations[0].IsBot {
		t.Errorf("authorizations = %+v", cb.Authorizations)
	}
	msg := messageEvent(t, ev)
	if msg.Channel != chanSec || msg.User != alice || msg.TimeStamp != d.TS || msg.ChannelType != "channel" || msg.SubType != "" {
		t.Errorf("message event = %+v", msg)
	}
	// The rich_text block a Slack client attaches carries the unescaped URL.
	rt, ok := msg.Message.Blocks.BlockSet[0].(*slack.RichTextBlock)
	if !ok {
		t.Fatalf("first block is %T", msg.Message.Blocks.BlockSet[0])
	}
	sec := rt.Elements[0].(*slack.RichTextSection)
	link, ok := sec.Elements[1].(*slack.RichTextSectionLinkElement)
	if !ok || link.URL != "https://evil.example/a?b=1&c=2" || link.Text != "evil.example" {
		t.Errorf("link element = %#v", sec.Elements[1])
	}
	if txt := sec.Elements[2].(*slack.RichTextSectionTextElement); txt.Text != " <now>" {
		t.Errorf("text element = %q", txt.Text)
	}

	if err := b.sm.Ack(*req); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitAcked(ctx, d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	env, _ := f.Envelope(d.EnvelopeID)
	if len(env.Acks) != 1 || env.Acks[0].Latency <= 0 || env.Acks[0].Payload != nil || env.SentAt.IsZero() {
		t.Errorf("envelope after ack = %+v", env)
	}
	if m, ok := f.Message(chanSec, d.TS); !ok || m.Bot || m.User != alice {
		t.Errorf("stored message = %+v, %v", m, ok)
	}
}

func TestRedeliveryUntilAcked(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond),
		slackfake.WithAckTimeout(150*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	d := must[slackfake.Delivery](t)(f.DeliverEvent(map[string]any{
		"type": "app_mention", "user": alice, "text": "<@" + f.BotUserID() + "> scan", "ts": "1700000000.000100",
		"channel": chanSec, "event_ts": "1700000000.000100",
	}))
	first := b.next(t, ctx, socketmode.EventTypeEventsAPI) // not acked
	second := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if second.Request.RetryAttempt != 1 || second.Request.RetryReason != "timeout" {
		t.Errorf("redelivery retry_attempt %d reason %q", second.Request.RetryAttempt, second.Request.RetryReason)
	}
	if second.Request.EnvelopeID == first.Request.EnvelopeID {
		t.Error("redelivery reused the envelope_id")
	}
	if _, cb := eventsAPI(t, second); cb.EventID != d.EventID {
		t.Errorf("redelivery event_id %q, want %q", cb.EventID, d.EventID)
	}
	if err := b.sm.Ack(*second.Request); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitAcked(ctx, second.Request.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	// Nothing is outstanding: the timed-out attempt was superseded.
	if err := f.WaitAcked(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-b.sm.Events:
		if ev.Type == socketmode.EventTypeEventsAPI {
			t.Errorf("a third delivery after the ack: retry %d", ev.Request.RetryAttempt)
		}
	case <-time.After(500 * time.Millisecond):
	}
	envs := f.EventEnvelopes(d.EventID)
	if len(envs) != 2 || !envs[0].TimedOut || envs[0].Acked() || !envs[1].Acked() {
		t.Fatalf("attempts = %+v", envs)
	}

	// A manual redelivery is one more retry of the same event.
	id, err := f.Redeliver(d.EventID)
	if err != nil {
		t.Fatal(err)
	}
	third := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if third.Request.EnvelopeID != id || third.Request.RetryAttempt != 2 {
		t.Errorf("manual redelivery = %+v", third.Request)
	}
	_ = b.sm.Ack(*third.Request)
}

func TestRedeliveryGivesUpAfterMaxRetries(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithAckTimeout(50*time.Millisecond),
		slackfake.WithMaxRetries(2), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "never acked"}))
	for want := range 3 {
		ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
		if ev.Request.RetryAttempt != want {
			t.Errorf("attempt %d has retry_attempt %d", want, ev.Request.RetryAttempt)
		}
	}
	err := f.WaitFor(ctx, func(st *slackfake.State) bool {
		envs := st.EventEnvelopes(d.EventID)
		return len(envs) == 3 && envs[2].Exhausted
	})
	if err != nil {
		t.Fatalf("last attempt not marked exhausted: %v (%+v)", err, f.EventEnvelopes(d.EventID))
	}
	if st := f.AckStats(); st.Unacked != 3 || st.Redeliveries != 2 || st.ExactlyOnce() {
		t.Errorf("stats = %+v", st)
	}
}

func TestDuplicateAndUnknownAcksAreCounted(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "hi"}))
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	_ = b.sm.Ack(*ev.Request)
	_ = b.sm.Ack(*ev.Request)
	_ = b.sm.AckCtx(ctx, "no-such-envelope", map[string]string{"x": "y"})
	if err := f.WaitFor(ctx, func(st *slackfake.State) bool { return len(st.Acks()) == 3 }); err != nil {
		t.Fatal(err)
	}
	st := f.AckStats()
	if st.Envelopes != 1 || st.Acked != 1 || st.Duplicated != 1 || st.UnknownAcks != 1 || st.ExactlyOnce() {
		t.Errorf("stats = %+v", st)
	}
	acks := f.Acks()
	if !acks[2].Unknown || string(acks[2].Payload) != `{"x":"y"}` || acks[0].EnvelopeID != d.EnvelopeID {
		t.Errorf("acks = %+v", acks)
	}
}

func TestDisconnectAndDropMakeSlackGoReconnect(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	b.autoAck(t)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	f.Disconnect("refresh_requested")
	if err := f.WaitConnected(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if n := len(f.Calls("apps.connections.open")); n != 2 {
		t.Errorf("apps.connections.open called %d times, want 2 (slack-go opens a new URL to reconnect)", n)
	}
	if err := f.WaitFor(ctx, func(st *slackfake.State) bool { return st.OpenConnections() == 1 }); err != nil {
		t.Fatalf("old connection not closed: %v", err)
	}

	f.DropConnection()
	if err := f.WaitConnected(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// Events flow on the new connection.
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "after"}))
	if err := f.WaitAcked(ctx, d.EnvelopeID); err != nil {
		t.Fatal(err)
	}
	if env, _ := f.Envelope(d.EnvelopeID); env.ConnID != 3 {
		t.Errorf("delivered on connection %d, want 3", env.ConnID)
	}
}

func TestEventsQueuedWhileDisconnectedArriveAsRetries(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	b.next(t, ctx, socketmode.EventTypeHello)

	// Keep slack-go away for a second: its reconnect gets a 429.
	f.RateLimit("apps.connections.open", 1, time.Second)
	f.DropConnection()
	if err := f.WaitFor(ctx, func(st *slackfake.State) bool { return st.OpenConnections() == 0 }); err != nil {
		t.Fatal(err)
	}
	d := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "while away"}))
	envs := f.EventEnvelopes(d.EventID)
	if len(envs) != 2 || !envs[0].Undelivered || envs[1].RetryAttempt != 1 || !envs[1].SentAt.IsZero() {
		t.Fatalf("attempts while disconnected = %+v", envs)
	}

	cerr := b.next(t, ctx, socketmode.EventTypeConnectionError)
	ce := cerr.Data.(*slack.ConnectionErrorEvent)
	var rl *slack.RateLimitedError
	if !errors.As(ce.ErrorObj, &rl) || rl.RetryAfter != time.Second || ce.Backoff < time.Second {
		t.Errorf("connection error = %v, backoff %v", ce.ErrorObj, ce.Backoff)
	}
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if ev.Request.RetryAttempt != 1 || ev.Request.RetryReason != "timeout" || ev.Request.EnvelopeID != envs[1].ID {
		t.Errorf("queued event arrived as %+v", ev.Request)
	}
	if msg := messageEvent(t, ev); msg.Text != "while away" {
		t.Errorf("text = %q", msg.Text)
	}
	_ = b.sm.Ack(*ev.Request)
	if err := f.WaitConnected(ctx, 2); err != nil {
		t.Fatal(err)
	}
}

func TestConnectionsOpenInvalidAuthIsFatal(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	f.Fail("apps.connections.open", 0, "invalid_auth")
	sm := socketmode.New(newAPI(f))
	ctx := testCtx(t)
	err := sm.RunContext(ctx)
	if err == nil || err.Error() != "invalid_auth" {
		t.Fatalf("RunContext = %v, want invalid_auth", err)
	}
}

func TestConnectionsOpenTokenRules(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	ctx := testCtx(t)

	if _, u, err := newAPI(f).StartSocketModeContext(ctx); err != nil || !strings.HasPrefix(u, "ws://127.0.0.1:") || !strings.Contains(u, "/link/?ticket=") {
		t.Fatalf("apps.connections.open = %q, %v", u, err)
	}
	if c := f.Calls("apps.connections.open")[0]; c.TokenSource != "header" || c.TokenKind != slackfake.TokenApp {
		t.Errorf("call = %+v", c)
	}
	botAsApp := slack.New(f.BotToken(), slack.OptionAppLevelToken(f.BotToken()), slack.OptionAPIURL(f.APIURL()))
	if _, _, err := botAsApp.StartSocketModeContext(ctx); err == nil || err.Error() != "not_allowed_token_type" {
		t.Errorf("bot token: %v", err)
	}
	wrong := slack.New(f.BotToken(), slack.OptionAppLevelToken("xapp-1-wrong"), slack.OptionAPIURL(f.APIURL()))
	if _, _, err := wrong.StartSocketModeContext(ctx); err == nil || err.Error() != "invalid_auth" {
		t.Errorf("wrong app token: %v", err)
	}
	resp, err := http.PostForm(f.APIURL()+"apps.connections.open", url.Values{"token": {f.AppToken()}})
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if body.Error != "not_authed" {
		t.Errorf("app token as a form field: %q, want not_authed", body.Error)
	}
	// A ticket works once.
	_, u, _ := newAPI(f).StartSocketModeContext(ctx)
	for i, want := range []int{http.StatusSwitchingProtocols, http.StatusUnauthorized} {
		conn, resp, _ := websocket.DefaultDialer.DialContext(ctx, u, nil)
		if resp == nil || resp.StatusCode != want {
			t.Errorf("dial %d: response %v, want %d", i, resp, want)
		}
		if conn != nil {
			conn.Close()
		}
	}
}

func TestUndecodableEnvelopes(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond),
		slackfake.WithAckTimeout(200*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// slack-go cannot parse the inner event: error_bad_message, no ack. The
	// bot must dig the envelope_id out of the raw frame and ack it itself.
	d := must[slackfake.Delivery](t)(f.DeliverRaw(`{"envelope_id":"raw-env-1","type":"events_api","accepts_response_payload":false,` +
		`"payload":{"type":"event_callback","event_id":"EvRAW0001","event":{"type":"no_such_event_type"}}}`))
	if d.EnvelopeID != "raw-env-1" {
		t.Errorf("envelope id = %q", d.EnvelopeID)
	}
	ev := b.next(t, ctx, socketmode.EventTypeErrorBadMessage)
	bad := ev.Data.(*socketmode.ErrorBadMessage)
	var head struct {
		EnvelopeID string `json:"envelope_id"`
	}
	if err := json.Unmarshal(bad.Message, &head); err != nil || head.EnvelopeID != "raw-env-1" {
		t.Fatalf("raw frame %s: %v", bad.Message, err)
	}
	if err := b.sm.AckCtx(ctx, head.EnvelopeID, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.WaitAcked(ctx, "raw-env-1"); err != nil {
		t.Fatal(err)
	}

	// Not JSON at all: slack-go reports incoming_error and keeps the socket.
	must[slackfake.Delivery](t)(f.DeliverRaw("this is not json"))
	b.next(t, ctx, socketmode.EventTypeIncomingError)

	// An events_api envelope slack-go cannot decode is redelivered when not acked.
	d2 := must[slackfake.Delivery](t)(f.DeliverEvent(json.RawMessage(`{"type":"no_such_event_type","event_ts":"1.2"}`)))
	b.next(t, ctx, socketmode.EventTypeErrorBadMessage)
	again := b.next(t, ctx, socketmode.EventTypeErrorBadMessage)
	if err := json.Unmarshal(again.Data.(*socketmode.ErrorBadMessage).Message, &head); err != nil {
		t.Fatal(err)
	}
	envs := f.EventEnvelopes(d2.EventID)
	if len(envs) < 2 || envs[1].ID != head.EnvelopeID || envs[1].RetryAttempt != 1 {
		t.Errorf("redeliveries = %+v", envs)
	}
	_ = b.sm.AckCtx(ctx, head.EnvelopeID, nil)
	if open, total := f.Connections(); open != 1 || total != 1 {
		t.Errorf("connections open %d total %d: bad frames must not cost the socket", open, total)
	}
}

func TestPings(t *testing.T) {
	t.Parallel()
	t.Run("keep slack-go connected", func(t *testing.T) {
		t.Parallel()
		f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond))
		runSocket(t, f, socketmode.OptionPingInterval(400*time.Millisecond))
		ctx := testCtx(t)
		if err := f.WaitConnected(ctx, 1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // several of slack-go's ping deadlines
		if _, total := f.Connections(); total != 1 {
			t.Errorf("%d connections: slack-go dropped a pinged socket", total)
		}
	})
	t.Run("none make slack-go reconnect", func(t *testing.T) {
		t.Parallel()
		f := slackfaketest.Start(t, slackfake.WithPingInterval(0))
		runSocket(t, f, socketmode.OptionPingInterval(300*time.Millisecond))
		if err := f.WaitConnected(testCtx(t), 2); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConnectionLifetimeRefresh(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithConnectionLifetime(300*time.Millisecond))
	b := runSocket(t, f)
	ctx := testCtx(t)
	b.next(t, ctx, socketmode.EventTypeHello)
	// The fake sends refresh_requested after 300 ms; slack-go reconnects.
	if err := f.WaitConnected(ctx, 2); err != nil {
		t.Fatal(err)
	}
}

func TestSlashCommandAckPayloadAndResponseURL(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	f.AddChannel(slackfake.Channel{ID: chanSec, Name: "security"})
	f.AddUser(slackfake.User{ID: alice, Name: "alice"})
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}

	d := must[slackfake.Delivery](t)(f.DeliverSlashCommand(slackfake.SlashCommand{
		Command: "/scan", Text: "https://evil.example", UserID: alice, ChannelID: chanSec,
	}))
	ev := b.next(t, ctx, socketmode.EventTypeSlashCommand)
	cmd := ev.Data.(slack.SlashCommand)
	if cmd.Command != "/scan" || cmd.Text != "https://evil.example" || cmd.UserName != "alice" || cmd.ChannelName != "security" ||
		cmd.ResponseURL != d.ResponseURL || cmd.TriggerID != d.TriggerID || cmd.APIAppID != f.AppID() || cmd.TeamID != f.TeamID() {
		t.Errorf("slash command = %+v", cmd)
	}
	if !ev.Request.AcceptsResponsePayload {
		t.Error("slash_commands envelope must accept a response payload")
	}
	if !strings.HasPrefix(cmd.ResponseURL, f.URL()+"/commands/") {
		t.Errorf("response_url %q is not on the fake", cmd.ResponseURL)
	}

	// The ack payload is shown to the user, ephemeral by default.
	if err := b.sm.Ack(*ev.Request, map[string]any{"text": "Scanning…"}); err != nil {
		t.Fatal(err)
	}
	eph := must[[]slackfake.Ephemeral](t)(f.WaitEphemerals(ctx, chanSec, alice, 1))
	if eph[0].Text != "Scanning…" || eph[0].Via != "ack" {
		t.Errorf("ephemeral = %+v", eph[0])
	}

	// The verdict comes later through the response_url.
	api := newAPI(f)
	if _, _, err := api.PostMessageContext(ctx, "", slack.MsgOptionResponseURL(d.ResponseURL, slack.ResponseTypeInChannel),
		slack.MsgOptionText("Verdict: malicious", false)); err != nil {
		t.Fatal(err)
	}
	msgs := must[[]slackfake.Message](t)(f.WaitMessages(ctx, chanSec, "", 1))
	if msgs[0].Text != "Verdict: malicious" || msgs[0].Via != slackfake.MethodResponseURL {
		t.Errorf("in_channel response = %+v", msgs[0])
	}
	posts := f.ResponsePosts()
	if len(posts) != 1 || posts[0].ResponseType != "in_channel" || posts[0].EnvelopeID != d.EnvelopeID || posts[0].Kind != slackfake.EnvelopeSlashCommands {
		t.Errorf("response posts = %+v", posts)
	}
	resp, err := http.Post(f.URL()+"/commands/"+f.TeamID()+"/1/nope", "application/json", strings.NewReader(`{"text":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown response_url: %d", resp.StatusCode)
	}
}

func TestBlockActionOnCard(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "<https://evil.example>"}))
	b.sm.Ack(*b.next(t, ctx, socketmode.EventTypeEventsAPI).Request)

	api := newAPI(f)
	card := []slack.Block{
		slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, "*Malicious* hxxps://evil[.]example", false, false), nil, nil),
		slack.NewActionBlock("verdict_actions",
			slack.NewButtonBlockElement("fp_report", "scan-42", slack.NewTextBlockObject(slack.PlainTextType, "False positive", false, false)).WithStyle(slack.StyleDanger)),
		slack.NewActionBlock("second_line",
			slack.NewButtonBlockElement("fp_report", "scan-43", slack.NewTextBlockObject(slack.PlainTextType, "False positive", false, false))),
	}
	_, ts, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionBlocks(card...), slack.MsgOptionText("Malicious link", false),
		slack.MsgOptionTS(root.TS), slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl())
	if err != nil {
		t.Fatal(err)
	}

	da := must[slackfake.Delivery](t)(f.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: chanSec, MessageTS: ts, ActionID: "fp_report"}))
	ev := b.next(t, ctx, socketmode.EventTypeInteractive)
	cb := ev.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) != 1 {
		t.Fatalf("interaction = %+v", cb)
	}
	act := cb.ActionCallback.BlockActions[0]
	if act.ActionID != "fp_report" || act.Value != "scan-42" || act.BlockID != "verdict_actions" || act.Text.Text != "False positive" {
		t.Errorf("action = %+v", act)
	}
	if cb.User.ID != bob || cb.Channel.ID != chanSec || cb.Container.MessageTs != ts || cb.Container.ThreadTs != root.TS ||
		cb.Container.ChannelID != chanSec || cb.Message.Timestamp != ts || len(cb.Message.Blocks.BlockSet) != 3 ||
		cb.ResponseURL != da.ResponseURL || cb.TriggerID != da.TriggerID || cb.APIAppID != f.AppID() {
		t.Errorf("callback = %+v", cb)
	}
	_ = b.sm.Ack(*ev.Request)

	// Several blocks carry the same action id (one per card line): BlockID
	// picks the button of one of them.
	must[slackfake.Delivery](t)(f.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: chanSec, MessageTS: ts, ActionID: "fp_report", BlockID: "second_line"}))
	ev = b.next(t, ctx, socketmode.EventTypeInteractive)
	if act := ev.Data.(slack.InteractionCallback).ActionCallback.BlockActions[0]; act.BlockID != "second_line" || act.Value != "scan-43" {
		t.Errorf("action in a given block = %+v", act)
	}
	_ = b.sm.Ack(*ev.Request)
	if _, err := f.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: chanSec, MessageTS: ts, ActionID: "fp_report", BlockID: "no_such_block"}); err == nil {
		t.Error("a click in a block the card does not have was delivered")
	}

	// replace_original through the response_url rewrites the card.
	if _, _, err := api.PostMessageContext(ctx, "", slack.MsgOptionReplaceOriginal(da.ResponseURL),
		slack.MsgOptionText("Reported as false positive by <@"+bob+">", false)); err != nil {
		t.Fatal(err)
	}
	m, _ := f.Message(chanSec, ts)
	if m.Text != "Reported as false positive by <@"+bob+">" || m.Blocks != nil || m.Updates() != 1 || m.Versions[1].Via != slackfake.MethodResponseURL {
		t.Errorf("card after replace_original = %+v", m)
	}

	if _, err := f.DeliverBlockAction(slackfake.BlockAction{UserID: bob, Channel: chanSec, MessageTS: ts, ActionID: "fp_report"}); err == nil {
		t.Error("a click on a button the card no longer has was delivered")
	}
}

func TestMessageShortcut(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "check <https://x.example>"}))
	b.sm.Ack(*b.next(t, ctx, socketmode.EventTypeEventsAPI).Request)

	must[slackfake.Delivery](t)(f.DeliverMessageShortcut(slackfake.MessageShortcut{CallbackID: "scan_message", UserID: bob, Channel: chanSec, MessageTS: root.TS}))
	ev := b.next(t, ctx, socketmode.EventTypeInteractive)
	cb := ev.Data.(slack.InteractionCallback)
	if cb.Type != slack.InteractionTypeMessageAction || cb.CallbackID != "scan_message" || cb.MessageTs != root.TS ||
		cb.Message.Text != "check <https://x.example>" || cb.User.ID != bob || cb.Channel.ID != chanSec || cb.ResponseURL == "" {
		t.Errorf("shortcut = %+v", cb)
	}
	_ = b.sm.Ack(*ev.Request)
}

func TestOwnActionsComeBackAsEvents(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond))
	f.AddChannel(slackfake.Channel{ID: chanSec, Name: "security"})
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	api := newAPI(f)

	if _, _, err := api.PostMessageContext(ctx, chanSec, slack.MsgOptionText("card", false)); err != nil {
		t.Fatal(err)
	}
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	msg := messageEvent(t, ev)
	if msg.BotID != f.BotID() || msg.User != f.BotUserID() || msg.SubType != "" || msg.Message.BotProfile == nil || msg.Message.BotProfile.AppID != f.AppID() {
		t.Errorf("own message event = %+v", msg)
	}
	if env, _ := f.Envelope(ev.Request.EnvelopeID); !env.Echo {
		t.Error("envelope not marked Echo")
	}
	_ = b.sm.Ack(*ev.Request)

	posted := msg.TimeStamp
	if _, _, _, err := api.UpdateMessageContext(ctx, chanSec, posted, slack.MsgOptionText("card v2", false)); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if m := messageEvent(t, ev); m.SubType != "message_changed" || m.Message.Text != "card v2" || m.PreviousMessage.Text != "card" {
		t.Errorf("own update event = %+v", m)
	}
	_ = b.sm.Ack(*ev.Request)

	png := makePNG(t)
	if _, err := api.UploadFileContext(ctx, slack.UploadFileParameters{Filename: "shot.png", FileSize: len(png), Content: string(png),
		Channel: chanSec, ThreadTimestamp: posted}); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if m := messageEvent(t, ev); m.SubType != "file_share" || len(m.Message.Files) != 1 || m.ThreadTimeStamp != posted {
		t.Errorf("own upload message = %+v", m)
	}
	_ = b.sm.Ack(*ev.Request)
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	api2, _ := eventsAPI(t, ev)
	if fs, ok := api2.InnerEvent.Data.(*slackevents.FileSharedEvent); !ok || fs.UserID != f.BotUserID() || fs.ChannelID != chanSec {
		t.Errorf("own file_shared = %#v", api2.InnerEvent.Data)
	}
	_ = b.sm.Ack(*ev.Request)

	if _, _, err := api.DeleteMessageContext(ctx, chanSec, posted); err != nil {
		t.Fatal(err)
	}
	ev = b.next(t, ctx, socketmode.EventTypeEventsAPI)
	if m := messageEvent(t, ev); m.SubType != "message_deleted" || m.DeletedTimeStamp != posted {
		t.Errorf("own delete event = %+v", m)
	}
	_ = b.sm.Ack(*ev.Request)
}

func TestUserMessageVariants(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t, slackfake.WithPingInterval(100*time.Millisecond), slackfake.WithEchoOwnMessages(false))
	b := runSocket(t, f)
	ctx := testCtx(t)
	if err := f.WaitConnected(ctx, 1); err != nil {
		t.Fatal(err)
	}
	next := func() *slackevents.MessageEvent {
		ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
		_ = b.sm.Ack(*ev.Request)
		return messageEvent(t, ev)
	}

	root := must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: alice, Text: "<https://a.example>"}))
	next()

	must[slackfake.Delivery](t)(f.UnfurlMessage(chanSec, root.TS, json.RawMessage(`[{"title":"A","title_link":"https://a.example","from_url":"https://a.example"}]`)))
	if m := next(); m.SubType != "message_changed" || len(m.Message.Attachments) != 1 || m.Message.Edited != nil || len(m.PreviousMessage.Attachments) != 0 {
		t.Errorf("unfurl event = %+v", m)
	}

	must[slackfake.Delivery](t)(f.EditMessage(chanSec, root.TS, "<https://b.example>"))
	if m := next(); m.SubType != "message_changed" || m.Message.Text != "<https://b.example>" || m.Message.Edited == nil ||
		m.PreviousMessage.Text != "<https://a.example>" || m.Message.User != alice {
		t.Errorf("edit event = %+v", m)
	}

	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, User: bob, Text: "also <https://c.example>",
		ThreadTS: root.TS, SubType: "thread_broadcast"}))
	if m := next(); m.SubType != "thread_broadcast" || m.Root == nil || m.Root.Timestamp != root.TS || m.ThreadTimeStamp != root.TS {
		t.Errorf("thread_broadcast event = %+v", m)
	}

	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: chanSec, SubType: "bot_message", BotID: "B0MAILGW01",
		Username: "mail-gateway", Text: "Reported mail", Attachments: json.RawMessage(`[{"title":"link","title_link":"https://d.example"}]`)}))
	if m := next(); m.SubType != "bot_message" || m.BotID != "B0MAILGW01" || m.Username != "mail-gateway" ||
		len(m.Message.Attachments) != 1 || m.Message.Attachments[0].TitleLink != "https://d.example" {
		t.Errorf("bot_message event = %+v", m)
	}

	file := f.AddFile(slackfake.File{Name: "invoice.pdf", User: alice, Content: []byte("%PDF-1.4 fake")})
	must[[]slackfake.Delivery](t)(f.ShareFile(chanSec, alice, file.ID, "please check"))
	if m := next(); m.SubType != "file_share" || len(m.Message.Files) != 1 || m.Message.Files[0].ID != file.ID ||
		m.Message.Files[0].URLPrivateDownload != file.URLPrivateDownload {
		t.Errorf("file_share event = %+v", m)
	}
	ev := b.next(t, ctx, socketmode.EventTypeEventsAPI)
	api, _ := eventsAPI(t, ev)
	if fs, ok := api.InnerEvent.Data.(*slackevents.FileSharedEvent); !ok || fs.FileID != file.ID || fs.UserID != alice {
		t.Errorf("file_shared = %#v", api.InnerEvent.Data)
	}
	_ = b.sm.Ack(*ev.Request)

	must[slackfake.Delivery](t)(f.DeleteMessage(chanSec, root.TS))
	if m := next(); m.SubType != "message_deleted" || m.DeletedTimeStamp != root.TS || m.PreviousMessage == nil {
		t.Errorf("delete event = %+v", m)
	}

	must[slackfake.Delivery](t)(f.DeliverMessage(slackfake.MessageEvent{Channel: "D0ALICE001", User: alice, Text: "dm"}))
	if m := next(); m.ChannelType != "im" || !m.IsIM() {
		t.Errorf("dm event channel_type = %q", m.ChannelType)
	}
}

func TestInteractionsNeedAConnection(t *testing.T) {
	t.Parallel()
	f := slackfaketest.Start(t)
	if _, err := f.DeliverSlashCommand(slackfake.SlashCommand{Command: "/scan", UserID: alice, ChannelID: chanSec}); !errors.Is(err, slackfake.ErrNotConnected) {
		t.Errorf("slash command without a socket: %v", err)
	}
	if _, err := f.DeliverRaw("{}"); !errors.Is(err, slackfake.ErrNotConnected) {
		t.Errorf("raw frame without a socket: %v", err)
	}
	if len(f.Envelopes()) != 0 {
		t.Error("undeliverable interactions were recorded")
	}
}
