package slackfake_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"slices"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"

	"github.com/verdictbot/verdictbot/internal/slackfake"
)

const (
	chanSec = "C0SEC00001"
	alice   = "U0ALICE001"
	bob     = "U0BOB00001"
)

// testCtx bounds every wait of a test.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newAPI is the bot's Web API client pointed at the fake.
func newAPI(f *slackfake.Server, opts ...slack.Option) *slack.Client {
	return slack.New(f.BotToken(), append([]slack.Option{
		slack.OptionAppLevelToken(f.AppToken()),
		slack.OptionAPIURL(f.APIURL()),
	}, opts...)...)
}

// sockBot is a slack-go socketmode client connected to the fake.
type sockBot struct {
	sm   *socketmode.Client
	done chan error
}

func runSocket(t *testing.T, f *slackfake.Server, opts ...socketmode.Option) *sockBot {
	t.Helper()
	b := &sockBot{sm: socketmode.New(newAPI(f), opts...), done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { b.done <- b.sm.RunContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-b.done:
		case <-time.After(10 * time.Second):
			t.Error("socketmode client did not stop")
		}
	})
	return b
}

// next returns the next event of one of types, skipping the others.
func (b *sockBot) next(t *testing.T, ctx context.Context, types ...socketmode.EventType) socketmode.Event {
	t.Helper()
	for {
		select {
		case ev := <-b.sm.Events:
			if slices.Contains(types, ev.Type) {
				return ev
			}
		case err := <-b.done:
			b.done <- err
			t.Fatalf("socketmode client stopped while waiting for %v: %v", types, err)
		case <-ctx.Done():
			t.Fatalf("waiting for %v: %v", types, ctx.Err())
		}
	}
}

// autoAck acks every envelope at once, like a well-behaved bot, until the
// test ends.
func (b *sockBot) autoAck(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case ev := <-b.sm.Events:
				if ev.Request != nil && ev.Request.EnvelopeID != "" {
					_ = b.sm.AckCtx(ctx, ev.Request.EnvelopeID, nil)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })
}

func makePNG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func makeJPEG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 8, 8))
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
