package sim

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// URL-service error texts (URL spec §7), byte-exact: note the trailing
// dots and the capital O.
const (
	msgInvalidMethod    = "invalid method"
	msgInvalidJSON      = "invalid json"
	msgInvalidURL       = "invalid url"
	msgTaskNotFound     = "task not found"
	msgWrongTaskID      = "wrong task id"
	msgNotCompleted     = "task not completed yet"
	msgFailedResult     = "failed to get result"
	msgVerdictTypeError = "verdict_type error."
	msgOptionError      = "Option error."
)

// strictCode is the HTTP status of each error text with StrictHTTP (notes
// §4.1 "HTTP status codes").
var strictCode = map[string]int{
	msgInvalidJSON:      http.StatusBadRequest,
	msgInvalidURL:       http.StatusBadRequest,
	msgVerdictTypeError: http.StatusBadRequest,
	msgOptionError:      http.StatusBadRequest,
	msgWrongTaskID:      http.StatusBadRequest,
	msgTaskNotFound:     http.StatusNotFound,
	msgInvalidMethod:    http.StatusMethodNotAllowed,
	msgNotCompleted:     http.StatusConflict,
	msgFailedResult:     http.StatusInternalServerError,
}

// URL task statuses. Only "completed" is in the spec; the rest are
// ASSUMPTION (the spec documents only "completed").
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
)

// maxJSONBody bounds the JSON bodies of scan and search.
const maxJSONBody = 1 << 20

// urlError is the URL service's error envelope (URL spec §7).
type urlError struct {
	Error bool   `json:"error"`
	Msg   string `json:"msg"`
}

// urlTask is one URL analysis.
type urlTask struct {
	id       string
	url      string // trimmed
	created  time.Time
	prog     *progress
	noResult bool
	class    string
	orig     Scores // unit scale, as analysed
	cur      Scores // unit scale, after dispositions
	reports  []Disposition
}

// Disposition is one verdict report made on a URL task.
type Disposition struct {
	Time        time.Time `json:"time"`
	VerdictType string    `json:"verdict_type"` // phishing, advertising, malicious, illegal
	Option      string    `json:"option"`       // fp, fn, restore
}

// URLTask is a snapshot of a URL task for tests.
type URLTask struct {
	ID           string
	URL          string
	Created      time.Time
	Status       string // as of now, without counting a poll
	Original     Scores // unit scale, as analysed
	Scores       Scores // unit scale, as now returned
	Dispositions []Disposition
}

func (s *Server) urlErr(w http.ResponseWriter, msg string) {
	code := http.StatusOK
	if s.cfg.StrictHTTP {
		code = strictCode[msg]
	}
	writeJSON(w, code, urlError{Error: true, Msg: msg})
}

func (s *Server) serveReputation(w http.ResponseWriter, r *http.Request, rt *route) {
	switch rt.op {
	case OpScan:
		s.scan(w, r, rt)
	case OpSearch:
		s.searchTaskID(w, r)
	case OpStatus:
		s.urlStatus(w, rt.params[0])
	case OpResult, OpDetail:
		s.urlResult(w, rt.params[0], rt.op == OpDetail)
	case OpVerdictReport:
		s.verdictReport(w, rt.params)
	}
}

// readURLBody decodes {"url": …}. missing is true when the object has no
// url member; ok is false when the body is not a JSON object or url is not
// a string.
func readURLBody(r *http.Request) (u string, missing, ok bool) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxJSONBody))
	if err != nil {
		return "", false, false
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil || m == nil {
		return "", false, false
	}
	raw, found := m["url"]
	if !found {
		return "", true, true
	}
	if err := json.Unmarshal(raw, &u); err != nil || string(raw) == "null" {
		return "", false, false
	}
	return u, false, true
}

// scan is POST scan/ (URL spec §4.1). Every scan makes a new task.
func (s *Server) scan(w http.ResponseWriter, r *http.Request, rt *route) {
	u, missing, ok := readURLBody(r)
	if !ok || missing {
		s.urlErr(w, msgInvalidJSON)
		return
	}
	u = strings.TrimSpace(u)
	s.mu.Lock()
	t := s.newURLTask(u)
	s.mu.Unlock()
	prefix := reputationPrefix + rt.key + "/"
	type queryURL struct {
		Status string `json:"status"`
		Result string `json:"result"`
	}
	writeJSON(w, http.StatusOK, struct {
		Error    bool     `json:"error"`
		TaskID   string   `json:"task_id"`
		QueryURL queryURL `json:"query_url"`
	}{TaskID: t.id, QueryURL: queryURL{prefix + "status/" + t.id + "/", prefix + "result/" + t.id + "/"}})
}

// newURLTask creates the task for a scan of u. Caller holds mu.
func (s *Server) newURLTask(u string) *urlTask {
	s.urlSeq++
	sum := sha256.Sum256(fmt.Appendf(nil, "verdictbot-sim/url-task/%d", s.urlSeq))
	now := s.cfg.Now()
	s.scanCount[u]++
	class, scores := classify(u)
	host, _ := hostPath(u)
	if inDomain(host, hostFlip) {
		// flip.test alternates: odd scans clean, even scans phishing.
		class = classClean
		if s.scanCount[u]%2 == 0 {
			class = classPhishing
		}
		scores = classScores[class]
	}
	if f, ok := s.flips[u]; ok {
		delete(s.flips, u)
		scores, class = f, classOther
	}
	t := &urlTask{
		id: hex.EncodeToString(sum[:16]), url: u, created: now,
		noResult: inDomain(host, hostNoResult),
		class:    class, orig: scores, cur: scores,
	}
	t.prog = s.urlPlan(host, now)
	s.urlTasks[t.id] = t
	s.urlByURL[u] = append(s.urlByURL[u], t)
	return t
}

// urlPlan returns the progression of a URL task on host.
func (s *Server) urlPlan(host string, now time.Time) *progress {
	p := s.cfg.Profile
	final := StatusCompleted
	if inDomain(host, hostFail) {
		final = StatusFailed
	}
	steps := []step{{StatusPending, p.URLPending}, {StatusProcessing, p.URLProcessing}, {final, 0}}
	if inDomain(host, hostPending) {
		steps = []step{{StatusPending, 0}}
	}
	perPoll, polls := p.PerPoll, p.PollsPerPhase
	if d, ok := durationHost(host); ok {
		tmpl := []step{{StatusPending, 2 * time.Second}, {StatusProcessing, 10 * time.Second}, {final, 0}}
		steps, perPoll = spreadSteps(tmpl, d), false
	} else if inDomain(host, hostSlow) {
		steps, polls = scaleSteps(steps, 10), polls*10
	}
	return newProgress(steps, perPoll, polls, now)
}

// lookupURLTask validates and finds a task id. Caller holds mu.
func (s *Server) lookupURLTask(id string) (*urlTask, string) {
	if len(id) != 32 || !isLowerHex(id) {
		return nil, msgWrongTaskID
	}
	t := s.urlTasks[id]
	if t == nil {
		return nil, msgTaskNotFound
	}
	return t, ""
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// urlStatus is GET status/<task_id>/ (URL spec §4.2).
func (s *Server) urlStatus(w http.ResponseWriter, id string) {
	s.mu.Lock()
	t, msg := s.lookupURLTask(id)
	var st string
	if t != nil {
		st = t.prog.poll(s.cfg.Now())
	}
	s.mu.Unlock()
	if msg != "" {
		s.urlErr(w, msg)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Status string `json:"status"`
		Error  bool   `json:"error"`
	}{Status: st})
}

// urlResult is GET result/<task_id>/ and result/detail/<task_id>/ (URL
// spec §4.3, §4.4).
func (s *Server) urlResult(w http.ResponseWriter, id string, detail bool) {
	s.mu.Lock()
	t, msg := s.lookupURLTask(id)
	var snap urlTask
	var doneAt time.Time
	if t != nil {
		now := s.cfg.Now()
		switch {
		case t.prog.peek(now) != StatusCompleted:
			msg = msgNotCompleted
		case t.noResult:
			msg = msgFailedResult
		default:
			snap = *t
			doneAt, _ = t.prog.enteredAt(now, StatusCompleted)
		}
	}
	s.mu.Unlock()
	if msg != "" {
		s.urlErr(w, msg)
		return
	}
	v := toWire(snap.cur, s.cfg.ScoreScale)
	if !detail {
		writeJSON(w, http.StatusOK, struct {
			URL     string      `json:"url"`
			Verdict wireVerdict `json:"verdict"`
			Error   bool        `json:"error"`
		}{URL: snap.url, Verdict: v})
		return
	}
	// The detail's content is not in the spec; this shape is an
	// ASSUMPTION.
	type detailObj struct {
		URL           string      `json:"url"`
		FinalURL      string      `json:"final_url"`
		RedirectChain []string    `json:"redirect_chain"`
		HTTPStatus    int         `json:"http_status"`
		PageTitle     string      `json:"page_title"`
		Verdict       wireVerdict `json:"verdict"`
		Categories    []string    `json:"categories"`
		AnalyzedAt    string      `json:"analyzed_at"`
	}
	writeJSON(w, http.StatusOK, struct {
		Error  bool      `json:"error"`
		Detail detailObj `json:"detail"`
	}{Detail: detailObj{
		URL: snap.url, FinalURL: snap.url, RedirectChain: []string{},
		HTTPStatus: http.StatusOK, PageTitle: pageTitle[snap.class],
		Verdict: v, Categories: snap.cur.categories(),
		AnalyzedAt: s.stamp(doneAt),
	}})
}

// stamp formats t as the services do: YYYY-MM-DD HH:MM:SS in Config.Location.
func (s *Server) stamp(t time.Time) string {
	return t.In(s.cfg.Location).Format(time.DateTime)
}

// searchTaskID is POST search/task_id/ (URL spec §4.5): the newest task for
// the exact trimmed URL.
func (s *Server) searchTaskID(w http.ResponseWriter, r *http.Request) {
	u, missing, ok := readURLBody(r)
	if !ok {
		s.urlErr(w, msgInvalidJSON)
		return
	}
	u = strings.TrimSpace(u)
	if pu, err := url.Parse(u); missing || u == "" || err != nil || pu.Host == "" ||
		(pu.Scheme != "http" && pu.Scheme != "https") {
		s.urlErr(w, msgInvalidURL)
		return
	}
	s.mu.Lock()
	var id string
	if ts := s.urlByURL[u]; len(ts) > 0 {
		id = ts[len(ts)-1].id
	}
	s.mu.Unlock()
	if id == "" {
		s.urlErr(w, msgTaskNotFound)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Error  bool   `json:"error"`
		TaskID string `json:"task_id"`
	}{TaskID: id})
}

// verdictReport is GET verdict/report/<task>/<type>/<option>/ (URL spec
// §4.6). Checks run in the spec's order.
func (s *Server) verdictReport(w http.ResponseWriter, params []string) {
	get := func(i int) string {
		if i < len(params) {
			return params[i]
		}
		return ""
	}
	id, vt, opt := get(0), get(1), get(2)
	s.mu.Lock()
	now := s.cfg.Now()
	t := s.urlTasks[id]
	var msg string
	switch {
	case t == nil:
		msg = msgTaskNotFound
	case !slices.Contains(verdictTypes, vt):
		msg = msgVerdictTypeError
	case t.prog.peek(now) != StatusCompleted:
		msg = msgNotCompleted
	case opt != "fp" && opt != "fn" && opt != "restore":
		msg = msgOptionError
	default:
		t.reports = append(t.reports, Disposition{Time: now, VerdictType: vt, Option: opt})
		if !s.cfg.DispositionRecordOnly {
			v := t.cur.field(vt)
			switch opt {
			case "fp":
				*v = 0
			case "fn":
				*v = 1
			case "restore":
				*v = *t.orig.field(vt)
			}
		}
	}
	s.mu.Unlock()
	if msg != "" {
		s.urlErr(w, msg)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Error bool `json:"error"`
	}{})
}

// FlipOnNextScan makes the next scan of exactly url (trimmed) get scores
// (unit scale), whatever the rule table says. Later scans use the table
// again. Use it to make the recheck job see a changed verdict.
func (s *Server) FlipOnNextScan(url string, scores Scores) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flips[strings.TrimSpace(url)] = scores
}

// URLTasks returns the ids of the tasks created for exactly url (trimmed),
// oldest first.
func (s *Server) URLTasks(url string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, t := range s.urlByURL[strings.TrimSpace(url)] {
		ids = append(ids, t.id)
	}
	return ids
}

// URLTask returns a snapshot of a URL task.
func (s *Server) URLTask(id string) (URLTask, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.urlTasks[id]
	if t == nil {
		return URLTask{}, false
	}
	return URLTask{
		ID: t.id, URL: t.url, Created: t.created, Status: t.prog.peek(s.cfg.Now()),
		Original: t.orig, Scores: t.cur, Dispositions: slices.Clone(t.reports),
	}, true
}
