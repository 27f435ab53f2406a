package cards

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/patrickmn/go-cache"
	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/qrscan"
	"github.com/verdictbot/verdictbot/scan"
)

// QRLink is a link found in a QR code of a shared image.
type QRLink struct {
	URL  string
	File string // the image's name, as the card shows it
}

// QR reads the links in the QR codes of the images a message shares
// ("quishing": a link that never appears as text), locally: the image is
// downloaded from Slack as the file pipeline downloads files and decoded
// in memory (package qrscan); it is sent nowhere for this. The links are
// checked like the message's own (Messages.QR), and their card line says
// which image they came from. A failed download or decode is logged, never
// shown: the message's other links are checked as usual.
type QR struct {
	// Fetch downloads a file (slackfile.Downloader).
	Fetch scan.Fetcher
	// Limits bound each image (zero fields: qrscan's defaults; MaxBytes is
	// also the largest file downloaded for this).
	Limits qrscan.Limits
	// MaxPending bounds the messages whose images wait to be read
	// (default 64): past it a message is checked without its QR codes,
	// so a flood of images cannot hold links back (logged, counted).
	MaxPending int
	// Timeout bounds one message's downloads and decodes (default 1m).
	Timeout time.Duration
	Log     *slog.Logger
	// OnSkipped, if set, is told of a message whose images were not read
	// because MaxPending were waiting.
	OnSkipped func()
	// Enabled, if set, says whether a channel's files are scanned
	// (VERDICTBOT_SCAN_FILES, /scan channel files): a channel whose files
	// are off has its images left alone too (a DM to the bot always has
	// them read).
	Enabled func(channel string) bool
	// OnFound, if set, is told how many links a message's images held.
	OnFound func(n int)

	pending atomic.Int32
	once    sync.Once
	seen    *cache.Cache // file id → []string: an image is read once
}

func (q *QR) init() {
	q.once.Do(func() { q.seen = cache.New(24*time.Hour, time.Hour) })
}

// Images returns the files shared in channel that Read reads: PNG, JPEG,
// GIF and WebP images hosted by Slack, within Limits.MaxBytes, where the
// channel's files are scanned.
func (q *QR) Images(channel string, files []slack.File) []slack.File {
	if q == nil || len(files) == 0 || q.Enabled != nil && !q.Enabled(channel) && !IsDirect(channel) {
		return nil
	}
	max := q.Limits.MaxBytes
	if max <= 0 {
		max = qrscan.DefaultMaxBytes
	}
	var out []slack.File
	for _, f := range files {
		if f.IsExternal || f.Mode == "tombstone" || f.Mode == "hidden_by_limit" || f.URLPrivateDownload == "" && f.URLPrivate == "" {
			continue
		}
		if f.Size <= 0 || int64(f.Size) > max || !qrscan.Supported(f.Mimetype, firstNonEmpty(f.Name, f.Title)) {
			continue
		}
		out = append(out, f)
	}
	return out
}

// Admit reserves a place for one message's images; false when MaxPending
// messages wait already (OnSkipped is told). Release it with Done.
func (q *QR) Admit() bool {
	limit := q.MaxPending
	if limit <= 0 {
		limit = 64
	}
	if int(q.pending.Add(1)) > limit {
		q.pending.Add(-1)
		q.log().Warn("too many images waiting to be read for QR codes; this message's are not read")
		if q.OnSkipped != nil {
			q.OnSkipped()
		}
		return false
	}
	return true
}

// Done releases a place Admit reserved.
func (q *QR) Done() { q.pending.Add(-1) }

// Read returns the http(s) links in the QR codes of images, in order,
// each once.
func (q *QR) Read(ctx context.Context, images []slack.File) []QRLink {
	q.init()
	timeout := q.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out []QRLink
	defer func() {
		if q.OnFound != nil && len(out) > 0 {
			q.OnFound(len(out))
		}
	}()
	seen := map[string]bool{}
	for _, f := range images {
		name := firstNonEmpty(f.Name, f.Title, f.ID)
		for _, u := range q.urls(ctx, f) {
			if !seen[u] {
				seen[u] = true
				out = append(out, QRLink{URL: u, File: name})
			}
		}
	}
	return out
}

func (q *QR) urls(ctx context.Context, f slack.File) []string {
	if f.ID != "" {
		if v, ok := q.seen.Get(f.ID); ok {
			return v.([]string)
		}
	}
	max := q.Limits.MaxBytes
	if max <= 0 {
		max = qrscan.DefaultMaxBytes
	}
	var buf bytes.Buffer
	ref := scan.FileRef{ID: f.ID, Name: f.Name, Filetype: f.Filetype, Mimetype: f.Mimetype, Size: int64(f.Size),
		External: f.IsExternal, Source: firstNonEmpty(f.URLPrivateDownload, f.URLPrivate)}
	if _, err := q.Fetch.Fetch(ctx, ref, max, &buf); err != nil {
		q.log().Info("an image could not be downloaded to read its QR codes", "file", f.ID, "error", err)
		return nil // not cached: a later message sharing it tries again
	}
	codes, err := qrscan.Decode(ctx, &buf, q.Limits)
	if err != nil {
		q.log().Info("an image could not be read for QR codes", "file", f.ID, "error", err)
	}
	urls := qrscan.URLs(codes)
	if f.ID != "" && ctx.Err() == nil {
		q.seen.SetDefault(f.ID, urls)
	}
	return urls
}

func (q *QR) log() *slog.Logger {
	if q.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return q.Log
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if strings.TrimSpace(x) != "" {
			return x
		}
	}
	return ""
}
