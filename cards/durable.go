package cards

import (
	"context"
	"errors"
	"fmt"
	"github.com/verdictbot/verdictbot/card"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/scan"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// URLMemory keeps the URL pipeline's submissions and verdicts in the store
// (it implements scan.Memory[scan.URLVerdict], scan.DueTargets and
// TargetCards).
type URLMemory struct {
	DB *store.DB
	// Schedule plans rechecks (VERDICTBOT_RECHECK_AFTER).
	Schedule store.Schedule
	Now      func() time.Time
	Log      interface{ Warn(string, ...any) }
}

const serviceReputation = "reputation"

var (
	_ scan.Memory[scan.URLVerdict] = (*URLMemory)(nil)
	_ scan.DueTargets              = (*URLMemory)(nil)
)

func (m *URLMemory) now() time.Time {
	if m.Now == nil {
		return time.Now()
	}
	return m.Now()
}

func (m *URLMemory) warn(msg string, err error) {
	if m.Log != nil {
		m.Log.Warn(msg, "error", err)
	}
}

// Recall returns the last verdict recorded for url within ttl.
func (m *URLMemory) Recall(url string, ttl time.Duration) (scan.URLVerdict, bool) {
	tg, err := m.DB.Target(url)
	if err != nil || tg.Kind != "url" || m.now().Sub(tg.Checked) > ttl || tg.Level < verdict.Clean || tg.Level == verdict.Unknown {
		return scan.URLVerdict{}, false
	}
	hist, err := m.DB.History(url)
	if err != nil || len(hist) == 0 {
		return scan.URLVerdict{}, false
	}
	last := hist[len(hist)-1]
	// A verdict an analyst reported on since (fp, fn, restore) may have
	// changed at the service: it is checked again, not reused.
	if reports, err := m.DB.Reports(url); err != nil {
		return scan.URLVerdict{}, false
	} else if n := len(reports); n > 0 && reports[n-1].Outcome == "" && !reports[n-1].At.Before(last.At) {
		return scan.URLVerdict{}, false
	}
	return scan.URLVerdict{URL: url, TaskID: last.TaskID, Level: last.Level, Category: last.Category,
		Scores: last.Scores, CheckedAt: last.At}, true
}

// InFlight returns the task of a submission whose verdict is not known.
func (m *URLMemory) InFlight(url string) (string, bool) {
	a, err := m.DB.Analysis(serviceReputation, url)
	if err != nil {
		return "", false
	}
	return a.TaskID, true
}

// Submitting records the intent to submit url (an analysis without a task).
func (m *URLMemory) Submitting(url string) {
	if err := m.DB.PutAnalysis(store.Analysis{Service: serviceReputation, Target: url}); err != nil {
		m.warn("could not record a submission intent", err)
	}
}

// LastTask returns the task of url's last recorded verdict.
func (m *URLMemory) LastTask(url string) string {
	tg, err := m.DB.Target(url)
	if err != nil {
		return ""
	}
	return tg.TaskID
}

// Submitted records a submission.
func (m *URLMemory) Submitted(url, taskID string) {
	if err := m.DB.PutAnalysis(store.Analysis{Service: serviceReputation, Target: url, TaskID: taskID}); err != nil {
		m.warn("could not record a submission; a restart would submit it again", err)
	}
}

// Finished records a verdict in the target's history (a failed analysis
// leaves the history alone) and forgets the submission.
func (m *URLMemory) Finished(v scan.URLVerdict, source string) {
	if v.Err != nil {
		if err := m.DB.DeleteAnalysis(serviceReputation, v.URL); err != nil {
			m.warn("could not clear a finished submission", err)
		}
		return
	}
	// One transaction: the verdict is recorded and the submission forgotten
	// together, or neither (a restart then resumes the task).
	_, _, err := m.DB.FinishAnalysis(serviceReputation, store.Verdict{Target: v.URL, Kind: "url", TaskID: v.TaskID, Level: v.Level,
		Category: v.Category, Scores: v.Scores, At: v.CheckedAt, Source: source}, m.Schedule, source == "recheck")
	if err != nil {
		m.warn("could not record a verdict", err)
	}
}

// AddCard remembers that a card shows target.
func (m *URLMemory) AddCard(target string, card store.CardRef) error {
	err := m.DB.AddCard(target, card)
	if errors.Is(err, store.ErrNotFound) {
		return nil // a verdict that was not recorded (failed analysis)
	}
	return err
}

// Due returns the URLs whose recheck is due (scan.DueTargets).
func (m *URLMemory) Due(now time.Time, limit int) ([]scan.DueURL, error) {
	tgs, err := m.DB.Due(now, limit)
	if err != nil {
		return nil, err
	}
	out := make([]scan.DueURL, len(tgs))
	for i, tg := range tgs {
		out[i] = scan.DueURL{Target: tg.Target, Level: tg.Level}
		for _, ref := range tg.Cards {
			out[i].Cards = append(out[i].Cards, card.Ref{Channel: ref.Channel, SourceTS: ref.SourceTS})
		}
	}
	return out, nil
}

// RecheckFailed advances url's recheck schedule (scan.DueTargets).
func (m *URLMemory) RecheckFailed(url string) error { return m.DB.RecheckFailed(url, m.Schedule) }

// ThreadSearch finds our cards in a thread with conversations.replies.
type ThreadSearch struct {
	API  *slack.Client
	Self func() Identity
}

// FindCard returns the ts of our card answering sourceTS in the thread, or
// "" when there is none. It recognises the card by its summary block id.
func (f *ThreadSearch) FindCard(ctx context.Context, channel, threadTS, sourceTS string) (string, error) {
	want := notify.SummaryBlockID(&card.Card{SourceTS: sourceTS})
	cursor := ""
	for range 20 { // at most 20 pages of 200 replies
		msgs, more, next, err := f.API.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: threadTS, Limit: 200, Cursor: cursor})
		if err != nil {
			return "", fmt.Errorf("conversations.replies: %w", err)
		}
		self := f.Self()
		for _, msg := range msgs {
			if msg.BotID != self.BotID && msg.User != self.UserID {
				continue
			}
			for _, b := range msg.Blocks.BlockSet {
				if b.ID() == want {
					return msg.Timestamp, nil
				}
			}
		}
		if !more || next == "" {
			return "", nil
		}
		cursor = next
	}
	return "", nil
}

// FileMemory keeps the file pipeline's uploads and verdicts in the store
// (service "sandbox", target the sha256); it implements
// scan.Memory[scan.FileVerdict].
type FileMemory struct {
	DB  *store.DB
	Now func() time.Time
	Log interface{ Warn(string, ...any) }
}

const serviceSandbox = "sandbox"

var _ scan.Memory[scan.FileVerdict] = (*FileMemory)(nil)

func (m *FileMemory) warn(msg string, err error) {
	if m.Log != nil {
		m.Log.Warn(msg, "error", err)
	}
}

// Recall returns the last verdict recorded for the file within ttl.
func (m *FileMemory) Recall(sha256 string, ttl time.Duration) (scan.FileVerdict, bool) {
	now := time.Now
	if m.Now != nil {
		now = m.Now
	}
	tg, err := m.DB.Target(sha256)
	if err != nil || tg.Kind != "file" || now().Sub(tg.Checked) > ttl || tg.Level < verdict.Clean || tg.Level == verdict.Unknown {
		return scan.FileVerdict{}, false
	}
	hist, err := m.DB.History(sha256)
	if err != nil || len(hist) == 0 {
		return scan.FileVerdict{}, false
	}
	last := hist[len(hist)-1]
	return scan.FileVerdict{SHA256: sha256, TaskID: last.TaskID, Level: last.Level, MalScore: last.MalScore,
		Family: last.Family, CheckedAt: last.At}, true
}

// InFlight returns the task of an upload whose verdict is not known.
func (m *FileMemory) InFlight(sha256 string) (string, bool) {
	a, err := m.DB.Analysis(serviceSandbox, sha256)
	if err != nil {
		return "", false
	}
	return a.TaskID, true
}

// Submitting records the intent to upload.
func (m *FileMemory) Submitting(sha256 string) {
	if err := m.DB.PutAnalysis(store.Analysis{Service: serviceSandbox, Target: sha256}); err != nil {
		m.warn("could not record an upload intent", err)
	}
}

// Submitted records an upload's task.
func (m *FileMemory) Submitted(sha256, taskID string) {
	if err := m.DB.PutAnalysis(store.Analysis{Service: serviceSandbox, Target: sha256, TaskID: taskID}); err != nil {
		m.warn("could not record an upload; a restart would upload it again", err)
	}
}

// LastTask returns the task of the file's last recorded verdict.
func (m *FileMemory) LastTask(sha256 string) string {
	tg, err := m.DB.Target(sha256)
	if err != nil {
		return ""
	}
	return tg.TaskID
}

// Finished records a file verdict and forgets the upload.
func (m *FileMemory) Finished(v scan.FileVerdict, source string) {
	if v.Err != nil || v.SHA256 == "" || v.Level == verdict.Skipped {
		if err := m.DB.DeleteAnalysis(serviceSandbox, v.SHA256); err != nil {
			m.warn("could not clear a finished upload", err)
		}
		return
	}
	_, _, err := m.DB.FinishAnalysis(serviceSandbox, store.Verdict{Target: v.SHA256, Kind: "file", TaskID: v.TaskID, Level: v.Level,
		MalScore: v.MalScore, Family: v.Family, At: v.CheckedAt, Source: source}, nil, false)
	if err != nil {
		m.warn("could not record a file verdict", err)
	}
}
