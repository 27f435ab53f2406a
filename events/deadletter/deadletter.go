// Package deadletter is the operator's side of the events' dead-letter
// list (`verdictbot events list|retry`): List shows how many events are
// queued and the dead letters, Retry queues dead letters again, both as
// text for a terminal. It works on any state backend through Queue; which
// backend to open, the flags and the exit statuses are cmd/verdictbot's.
package deadletter

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/verdictbot/verdictbot/events"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/store"
)

// Queue is what List and Retry need of the state layer: the dead-letter
// half of store.EventQueue.
type Queue interface {
	EventsQueued() (int, error)
	DeadEventsCount() (int, error)
	DeadEvents(n int) ([]store.DeadEvent, error)
	RequeueDeadEvents(seqs []uint64, rebuild func(body []byte, seq uint64) ([]byte, error), max int) (requeued []store.Requeued, dropped int, err error)
}

var _ Queue = store.EventQueue(nil)

// List writes the queue's length and the dead letters, at most limit of
// them, oldest first: a table of their sequence number, when they were set
// aside, the receiver's refusals and last status, and the event's kind,
// level and target (defanged), each on one terminal line.
func List(q Queue, limit int, w io.Writer) error {
	queued, err := q.EventsQueued()
	if err != nil {
		return err
	}
	total, err := q.DeadEventsCount()
	if err != nil {
		return err
	}
	dead, err := q.DeadEvents(limit)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "events queued: %d\ndead letters: %d\n", queued, total)
	if total == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tSET ASIDE (UTC)\tREFUSALS\tANSWER\tKIND\tLEVEL\tTARGET")
	for _, d := range dead {
		kind, level, target := summary(d.Body)
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%s\n", d.Seq, d.At.UTC().Format("2006-01-02 15:04:05"), d.Failures, d.Status,
			oneLine(kind), oneLine(level), oneLine(target))
	}
	tw.Flush()
	if total > len(dead) {
		fmt.Fprintf(w, "… and %d more (--limit)\n", total-len(dead))
	}
	fmt.Fprintln(w, "\nThe receiver's last answer to each is in the bot's log (\"set aside as a dead letter\").\n"+
		"Once the receiver takes them: verdictbot events retry SEQ… (or --all).")
	return nil
}

// summary reads an event's kind, level and target (defanged: a
// terminal may link it), for the list.
func summary(body []byte) (kind, level, target string) {
	var ev struct {
		Unmapped struct {
			Kind   string `json:"kind"`
			Level  string `json:"level"`
			Target string `json:"target"`
		} `json:"unmapped"`
	}
	if json.Unmarshal(body, &ev) != nil {
		return "?", "?", "(not an event)"
	}
	u := ev.Unmapped
	return nonEmpty(u.Kind), nonEmpty(u.Level), nonEmpty(links.DefangTruncate(u.Target, 80))
}

func nonEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine is s safe for one terminal line: no control character (escape
// sequences), no line break or tab.
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return ' '
		}
		return r
	}, s)
}

// Retry queues dead letters again (all of them when seqs is empty), each
// at the end of the queue under a new sequence number (events.Resequence),
// the queue bounded by max as the bot bounds it
// (VERDICTBOT_EVENTS_MAX_QUEUED), and writes what it did. A sequence
// number that is not a dead letter is an error, after the others are
// queued.
func Retry(q Queue, seqs []uint64, max int, w io.Writer) error {
	moved, dropped, err := q.RequeueDeadEvents(seqs, events.Resequence, max)
	if err != nil {
		return err
	}
	if len(moved) == 0 && len(seqs) == 0 {
		fmt.Fprintln(w, "no dead letters: nothing to retry")
		return nil
	}
	done := map[uint64]bool{}
	for _, m := range moved {
		fmt.Fprintf(w, "dead letter %d queued again as %d\n", m.From, m.To)
		done[m.From] = true
	}
	if len(moved) > 0 {
		fmt.Fprintf(w, "%d event(s) queued again: the bot sends them after the events queued before them\n", len(moved))
	}
	if dropped > 0 {
		fmt.Fprintf(w, "the queue was full (VERDICTBOT_EVENTS_MAX_QUEUED=%d): its %d oldest event(s) were dropped\n", max, dropped)
	}
	var missing []string
	for _, s := range seqs {
		if !done[s] {
			missing = append(missing, strconv.FormatUint(s, 10))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("not on the dead-letter list: %s (verdictbot events list shows it)", strings.Join(missing, ", "))
	}
	return nil
}
