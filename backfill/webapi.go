package backfill

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slack-go/slack"
)

// Message is one message of a conversation's history, decoded, with its
// JSON: the links of a shared message (attachments[].message_blocks) are
// only in the JSON, which slack-go's decoding drops, and a history message
// is read for its links as a live one is (links.Policy.ExtractRaw).
type Message struct {
	slack.Message
	Raw json.RawMessage
}

// Page is one page of conversations.history or conversations.replies.
type Page struct {
	Messages   []Message
	HasMore    bool
	NextCursor string
}

// WebAPI reads conversations.history and conversations.replies with their
// messages' JSON (History, Replies; see Message). Slack's errors are
// *slack.SlackErrorResponse and its 429s *slack.RateLimitedError, as
// slack-go's own; the token is sent in the Authorization header only, so
// no error names it.
type WebAPI struct {
	// URL is the Web API's base ("https://slack.com/api/"), Token the
	// bot token, HTTP the client (nil: http.DefaultClient).
	URL   string
	Token string
	HTTP  *http.Client
}

// maxPageBytes bounds one page's body: 999 messages of Slack's largest
// (40,000 characters of text, 50 blocks) fit many times over.
const maxPageBytes = 256 << 20

// History reads a page of channel's messages between oldest and latest
// (Slack ts, inclusive), newest first.
func (w *WebAPI) History(ctx context.Context, channel, cursor, oldest, latest string, limit int) (Page, error) {
	v := url.Values{"channel": {channel}, "limit": {strconv.Itoa(limit)}, "inclusive": {"true"}}
	set(v, "cursor", cursor)
	set(v, "oldest", oldest)
	set(v, "latest", latest)
	return w.page(ctx, "conversations.history", v)
}

// Replies reads a page of the thread of ts (its root first).
func (w *WebAPI) Replies(ctx context.Context, channel, ts, cursor string, limit int) (Page, error) {
	v := url.Values{"channel": {channel}, "ts": {ts}, "limit": {strconv.Itoa(limit)}}
	set(v, "cursor", cursor)
	return w.page(ctx, "conversations.replies", v)
}

func set(v url.Values, k, s string) {
	if s != "" {
		v.Set(k, s)
	}
}

func (w *WebAPI) page(ctx context.Context, method string, v url.Values) (Page, error) {
	base := w.URL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+method, strings.NewReader(v.Encode()))
	if err != nil {
		return Page{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer "+w.Token)
	hc := w.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Page{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests {
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return Page{}, &slack.RateLimitedError{RetryAfter: time.Duration(max(secs, 1)) * time.Second}
	}
	if resp.StatusCode != http.StatusOK {
		return Page{}, slack.StatusCodeError{Code: resp.StatusCode, Status: resp.Status}
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxPageBytes+1))
	if err != nil {
		return Page{}, err
	}
	if len(body) > maxPageBytes {
		return Page{}, fmt.Errorf("%s: the answer is larger than %d bytes", method, maxPageBytes)
	}
	var out struct {
		OK       bool              `json:"ok"`
		Error    string            `json:"error"`
		Messages []json.RawMessage `json:"messages"`
		HasMore  bool              `json:"has_more"`
		Meta     struct {
			NextCursor string `json:"next_cursor"`
		} `json:"response_metadata"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return Page{}, fmt.Errorf("%s: the answer is not JSON: %w", method, err)
	}
	if !out.OK {
		return Page{}, slack.SlackErrorResponse{Err: cmp.Or(out.Error, "unknown_error")}
	}
	p := Page{HasMore: out.HasMore, NextCursor: out.Meta.NextCursor, Messages: make([]Message, 0, len(out.Messages))}
	for _, raw := range out.Messages {
		var m slack.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			// One message slack-go cannot decode does not stop the page:
			// its ts, user and text are read alone, its links from its
			// JSON.
			_ = json.Unmarshal(raw, &struct {
				TS   *string `json:"ts"`
				User *string `json:"user"`
				Text *string `json:"text"`
			}{&m.Timestamp, &m.User, &m.Text})
		}
		p.Messages = append(p.Messages, Message{Message: m, Raw: raw})
	}
	return p, nil
}
