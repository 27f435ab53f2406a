package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/notify"
	"github.com/verdictbot/verdictbot/verdict"
)

// WriteText writes one line per result (Result.Text).
func WriteText(w io.Writer, rs []Result) error {
	for _, r := range rs {
		if _, err := fmt.Fprintln(w, r.Text()); err != nil {
			return err
		}
	}
	return nil
}

// WriteJSON writes rs as an indented JSON array (the Result fields),
// with no escape sequence a terminal would act on.
func WriteJSON(w io.Writer, rs []Result) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rs); err != nil {
		return err
	}
	// encoding/json leaves DEL, C1 controls and bidi overrides raw:
	// escaped, the values stay the same and the terminal sees none.
	_, err := w.Write(notify.TermJSON(buf.Bytes()))
	return err
}

// Text is the one-line form: level, target (a link defanged), then
// scores or the problem.
func (r Result) Text() string {
	target := r.Target
	if r.Kind == "url" {
		target = links.DefangTruncate(r.Target, 200)
		if r.URL != "" {
			target = links.DefangTruncate(r.URL, 200)
		}
	}
	// The bot's own reasons first: they are why a clean score is not.
	details := slices.Clone(r.Signals)
	switch {
	case r.level == verdict.Skipped:
		details = append(details, "not checked: "+r.Problem)
	case r.level == verdict.Unknown:
		details = append(details, r.Problem)
	case r.Scores != nil:
		for _, c := range verdict.Categories {
			details = append(details, fmt.Sprintf("%s %d%%", c, int(math.Round(100*r.Scores[string(c)]))))
		}
	case r.MalScore != nil:
		details = append(details, fmt.Sprintf("malscore %.1f/10", *r.MalScore))
		if r.Family != "" {
			details = append(details, "family "+r.Family)
		}
	}
	if r.QueryNotSent {
		details = append(details, "query not sent")
	}
	if r.TaskID != "" {
		t := "task " + r.TaskID
		if r.Reused {
			t += " (already analysed)"
		}
		details = append(details, t)
	}
	// The services' words (problems, families, task ids) and the
	// arguments go to a terminal: one line, no escape sequence.
	return notify.TermLine(fmt.Sprintf("%-15s  %s  %s", strings.ToUpper(r.level.String()), target, strings.Join(details, " · ")))
}
