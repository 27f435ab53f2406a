package sim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

const unknownID = "0123456789abcdef0123456789abcdef"

func TestReputationErrorTexts(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	done := h.scan("https://example.com/")
	h.completeURL(done)
	pending := h.scan("https://pending.test/")
	noresult := h.scan("https://noresult.test/")
	h.completeURL(noresult)

	e := func(msg string) string { return `{"error":true,"msg":"` + msg + `"}` }
	tests := []struct {
		name, method, path, body string
		want                     string
	}{
		{"scan GET", "GET", api("scan/"), "", e("invalid method")},
		{"scan PUT", "PUT", api("scan/"), `{"url":"https://a.test/"}`, e("invalid method")},
		{"scan not json", "POST", api("scan/"), `url=https://a.test/`, e("invalid json")},
		{"scan empty body", "POST", api("scan/"), ``, e("invalid json")},
		{"scan array", "POST", api("scan/"), `["https://a.test/"]`, e("invalid json")},
		{"scan no url", "POST", api("scan/"), `{"link":"https://a.test/"}`, e("invalid json")},
		{"scan url number", "POST", api("scan/"), `{"url":42}`, e("invalid json")},
		{"scan url null", "POST", api("scan/"), `{"url":null}`, e("invalid json")},
		{"status POST", "POST", api("status/" + done + "/"), "", e("invalid method")},
		{"status short id", "GET", api("status/abc/"), "", e("wrong task id")},
		{"status upper id", "GET", api("status/" + strings.ToUpper(done) + "/"), "", e("wrong task id")},
		{"status non-hex id", "GET", api("status/" + strings.Repeat("g", 32) + "/"), "", e("wrong task id")},
		{"status unknown", "GET", api("status/" + unknownID + "/"), "", e("task not found")},
		{"result bad id", "GET", api("result/xyz/"), "", e("wrong task id")},
		{"result unknown", "GET", api("result/" + unknownID + "/"), "", e("task not found")},
		{"result pending", "GET", api("result/" + pending + "/"), "", e("task not completed yet")},
		{"result noresult", "GET", api("result/" + noresult + "/"), "", e("failed to get result")},
		{"detail bad id", "GET", api("result/detail/xyz/"), "", e("wrong task id")},
		{"detail unknown", "GET", api("result/detail/" + unknownID + "/"), "", e("task not found")},
		{"detail pending", "GET", api("result/detail/" + pending + "/"), "", e("task not completed yet")},
		{"detail noresult", "GET", api("result/detail/" + noresult + "/"), "", e("failed to get result")},
		{"detail DELETE", "DELETE", api("result/detail/" + done + "/"), "", e("invalid method")},
		{"search GET", "GET", api("search/task_id/"), "", e("invalid method")},
		{"search not json", "POST", api("search/task_id/"), `{`, e("invalid json")},
		{"search url number", "POST", api("search/task_id/"), `{"url":1}`, e("invalid json")},
		{"search no url", "POST", api("search/task_id/"), `{}`, e("invalid url")},
		{"search empty url", "POST", api("search/task_id/"), `{"url":"  "}`, e("invalid url")},
		{"search relative", "POST", api("search/task_id/"), `{"url":"example.com/x"}`, e("invalid url")},
		{"search ftp", "POST", api("search/task_id/"), `{"url":"ftp://example.com/"}`, e("invalid url")},
		{"search unknown", "POST", api("search/task_id/"), `{"url":"https://never.test/"}`, e("task not found")},
		{"verdict unknown", "GET", api("verdict/report/" + unknownID + "/phishing/fp/"), "", e("task not found")},
		{"verdict bad id", "GET", api("verdict/report/nope/bogus/bogus/"), "", e("task not found")},
		{"verdict bad type", "GET", api("verdict/report/" + pending + "/spam/bogus/"), "", e("verdict_type error.")},
		{"verdict no type", "GET", api("verdict/report/" + done + "/"), "", e("verdict_type error.")},
		{"verdict pending", "GET", api("verdict/report/" + pending + "/phishing/bogus/"), "", e("task not completed yet")},
		{"verdict bad option", "GET", api("verdict/report/" + done + "/phishing/FP/"), "", e("Option error.")},
		{"verdict no option", "GET", api("verdict/report/" + done + "/malicious/"), "", e("Option error.")},
		{"verdict POST", "POST", api("verdict/report/" + done + "/phishing/fp/"), "", e("invalid method")},
		{"bad key", "GET", "/api//status/" + done + "/", "", e("invalid api key")},
	}
	for _, tc := range tests {
		r := h.do(tc.method, tc.path, "application/json", strings.NewReader(tc.body))
		code := 200
		if tc.name == "bad key" {
			code = 403
		}
		wantBody(t, tc.name, r, code, tc.want)
		if ct := r.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", tc.name, ct)
		}
	}
}

func TestReputationKeys(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Keys: []string{testKey, "other"}})
	h.scan("https://example.com/")
	r := h.postJSON("/api/wrong/scan/", `{"url":"https://example.com/"}`)
	// Invented text (an assumption: the spec says nothing about unknown keys).
	wantBody(t, "unknown key", r, 403, `{"error":true,"msg":"invalid api key"}`)
	r = h.postJSON("/api/other/scan/", `{"url":"https://example.com/"}`)
	if r.code != 200 {
		t.Errorf("second key: %d %s", r.code, r)
	}
}

func TestReputationNotFoundShapes(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	for _, p := range []string{
		"/api/", "/api/" + testKey, "/api/" + testKey + "/", api("scans/"), api("status/"),
		api("status/a/b/"), api("result/detail/a/b/"), api("verdict/report/"),
		api("verdict/report/a/b/c/d/"), api("search/"), api("scan//"), "/nothing",
	} {
		r := h.get(p)
		if r.code != 404 || !strings.Contains(string(r.body), "<h1>Not Found</h1>") ||
			!strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %q %s", p, r.code, r.header.Get("Content-Type"), r)
		}
	}
}

func TestReputationScanShape(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	r := h.postJSON(api("scan/"), `{"url":"https://example.com/"}`)
	var out map[string]any
	json.Unmarshal(r.body, &out)
	id := out["task_id"].(string)
	want := fmt.Sprintf(`{"error":false,"task_id":"%s","query_url":{"status":"/api/k3y/status/%s/","result":"/api/k3y/result/%s/"}}`, id, id, id)
	wantBody(t, "scan", r, 200, want)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Errorf("task id %q: want 32 lowercase hex", id)
	}
	// Every scan makes a new task, even for the same URL.
	if id2 := h.scan("https://example.com/"); id2 == id {
		t.Errorf("second scan reused task %s", id)
	}
	// No trailing slash is accepted too.
	r = h.postJSON(api("scan"), `{"url":"https://example.com/"}`)
	if r.code != 200 || !strings.Contains(r.String(), `"task_id"`) {
		t.Errorf("scan without slash: %d %s", r.code, r)
	}
	if got := h.srv.URLTasks(" https://example.com/ "); len(got) != 3 || got[0] != id {
		t.Errorf("URLTasks = %v", got)
	}
}

func TestReputationFastProgression(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Profile: sim.FastProfile()})
	id := h.scan("https://example.com/")
	res := api("result/" + id + "/")
	notYet := `{"error":true,"msg":"task not completed yet"}`
	wantBody(t, "result before polls", h.get(res), 200, notYet)
	var seen []string
	for range 4 {
		seen = append(seen, h.urlStatus(id))
		if seen[len(seen)-1] != "completed" {
			// Result endpoints act on the status last shown and never move the task.
			wantBody(t, "result while "+seen[len(seen)-1], h.get(res), 200, notYet)
		}
	}
	if want := []string{"pending", "processing", "completed", "completed"}; !slices.Equal(seen, want) {
		t.Errorf("statuses = %v, want %v", seen, want)
	}
	wantBody(t, "result", h.get(res), 200,
		`{"url":"https://example.com/","verdict":{"phishing":0.0,"advertising":0.0,"malicious":0.0,"illegal":0.0},"error":false}`)
}

func TestReputationRealisticProgression(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Profile: sim.RealisticProfile()})
	id := h.scan("https://example.com/")
	steps := []struct {
		at   time.Duration
		want string
	}{{0, "pending"}, {1999 * time.Millisecond, "pending"}, {2 * time.Second, "processing"},
		{11999 * time.Millisecond, "processing"}, {12 * time.Second, "completed"}, {time.Hour, "completed"}}
	for _, s := range steps {
		h.clock.Set(t0.Add(s.at))
		// Polling more than once changes nothing in a timed profile.
		for range 3 {
			if got := h.urlStatus(id); got != s.want {
				t.Fatalf("at %v: status %q, want %q", s.at, got, s.want)
			}
		}
	}
	r := h.get(api("result/detail/" + id + "/"))
	var d struct {
		Detail struct {
			AnalyzedAt string `json:"analyzed_at"`
		} `json:"detail"`
	}
	json.Unmarshal(r.body, &d)
	if d.Detail.AnalyzedAt != "2026-03-14 09:27:05" {
		t.Errorf("analyzed_at = %q, want the completion time t0+12s", d.Detail.AnalyzedAt)
	}
}

func TestReputationCustomProfile(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Profile: sim.Profile{Name: "minute", URLProcessing: time.Minute}})
	id := h.scan("https://example.com/")
	if got := h.urlStatus(id); got != "processing" {
		t.Errorf("at 0: %q, want processing (zero pending is skipped)", got)
	}
	h.clock.Advance(59 * time.Second)
	if got := h.urlStatus(id); got != "processing" {
		t.Errorf("at 59s: %q", got)
	}
	h.clock.Advance(time.Second)
	if got := h.urlStatus(id); got != "completed" {
		t.Errorf("at 60s: %q", got)
	}
}

func TestReputationSentinelHosts(t *testing.T) {
	t.Parallel()
	t.Run("fast", func(t *testing.T) {
		t.Parallel()
		h := setup(t, sim.Config{})
		poll := func(u string, n int) []string {
			id := h.scan(u)
			var out []string
			for range n {
				out = append(out, h.urlStatus(id))
			}
			return out
		}
		if got := poll("https://pending.test/x", 20); slices.ContainsFunc(got, func(s string) bool { return s != "pending" }) {
			t.Errorf("pending.test: %v", got)
		}
		if got := poll("https://www.fail.test/", 4); !slices.Equal(got, []string{"pending", "processing", "failed", "failed"}) {
			t.Errorf("fail.test: %v", got)
		}
		got := poll("https://slow.test/", 21)
		if got[9] != "pending" || got[10] != "processing" || got[19] != "processing" || got[20] != "completed" {
			t.Errorf("slow.test: want 10 polls per phase, got %v", got)
		}
		// d<N>s.test is timed even in the fast profile.
		id := h.scan("https://d30s.test/")
		if st := h.urlStatus(id); st != "pending" {
			t.Errorf("d30s.test at 0: %s", st)
		}
		h.clock.Advance(30 * time.Second)
		if st := h.urlStatus(id); st != "completed" {
			t.Errorf("d30s.test at 30s: %s", st)
		}
		id = h.scan("https://d0s.test/")
		if st := h.urlStatus(id); st != "completed" {
			t.Errorf("d0s.test at 0: %s", st)
		}
	})
	t.Run("realistic", func(t *testing.T) {
		t.Parallel()
		h := setup(t, sim.Config{Profile: sim.RealisticProfile()})
		slow := h.scan("https://slow.test/")
		d := h.scan("https://d60s.test/")
		at := func(d time.Duration) { h.clock.Set(t0.Add(d)) }
		at(119 * time.Second)
		if st := h.urlStatus(slow); st != "processing" {
			t.Errorf("slow.test at 119s: %s", st)
		}
		at(120 * time.Second)
		if st := h.urlStatus(slow); st != "completed" {
			t.Errorf("slow.test at 120s: %s", st)
		}
		at(59 * time.Second)
		if st := h.urlStatus(d); st != "processing" {
			t.Errorf("d60s.test at 59s: %s", st)
		}
		at(60 * time.Second)
		if st := h.urlStatus(d); st != "completed" {
			t.Errorf("d60s.test at 60s: %s", st)
		}
	})
}

func TestVerdictRules(t *testing.T) {
	t.Parallel()
	phish := sim.Scores{Phishing: 0.97, Advertising: 0.02, Malicious: 0.05, Illegal: 0.01}
	ads := sim.Scores{Phishing: 0.03, Advertising: 0.90, Malicious: 0.04, Illegal: 0.01}
	mal := sim.Scores{Phishing: 0.04, Advertising: 0.02, Malicious: 0.95, Illegal: 0.03}
	ill := sim.Scores{Phishing: 0.02, Advertising: 0.05, Malicious: 0.03, Illegal: 0.90}
	clean := sim.Scores{}
	tests := []struct {
		url  string
		want sim.Scores
	}{
		{"https://bank.phish.test/", phish},
		{"https://PhIsHing-Site.net/", phish},
		{"https://shop.test/login?next=/", phish},
		{"https://shop.test/Account/settings", phish},
		{"https://shop.test/verify", phish},
		{"https://example.com/login", clean},       // /login on an example host is not phishing
		{"https://www.example.org/account", clean}, // nor here
		{"https://ads.tracker.test/pixel", ads},
		{"https://news.test/ads/banner.js", ads},
		{"https://ad.doubleclick.net/x", ads},
		{"https://adverts.test/", ads},
		{"https://example.com/login-ads/", ads}, // ads wins over the example rule (table order)
		{"https://malware.test/", mal},
		{"https://EVIL.example.net/", mal},
		{"https://cdn.test/setup.EXE", mal},
		{"https://cdn.test/app.apk", mal},
		{"https://casino-royal.test/", ill},
		{"https://gambling.test/", ill},
		{"https://illegal-stuff.test/", ill},
		{"https://example.com/", clean},
		{"http://sub.example.com/page", clean},
		{"https://example.org", clean},
		{"https://a.clean.test/x", clean},
		{"example.com/path", clean}, // scheme-less URLs are read as http
	}
	for _, tc := range tests {
		if got := sim.ScoresFor(tc.url); got != tc.want {
			t.Errorf("ScoresFor(%q) = %+v, want %+v", tc.url, got, tc.want)
		}
	}
	// Anything else: stable small hash-derived scores.
	for _, u := range []string{"https://news.test/", "https://files.test/downloads/report.pdf", "https://a.test/uploads"} {
		s := sim.ScoresFor(u)
		if s != sim.ScoresFor(u) {
			t.Errorf("%s: unstable", u)
		}
		for _, v := range []float64{s.Phishing, s.Advertising, s.Malicious, s.Illegal} {
			if v < 0 || v >= 0.2 || v != float64(int(v*1e4+0.5))/1e4 {
				t.Errorf("%s: score %v out of [0, 0.2) or more than 4 decimals", u, v)
			}
		}
	}
	if sim.ScoresFor("https://news.test/") == sim.ScoresFor("https://news.test/a") {
		t.Error("hash scores do not depend on the URL")
	}
}

func TestReputationResultAndScale(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		scale float64
		want  string
	}{
		{0, `{"phishing":0.97,"advertising":0.02,"malicious":0.05,"illegal":0.01}`},
		{100, `{"phishing":97.0,"advertising":2.0,"malicious":5.0,"illegal":1.0}`},
	} {
		h := setup(t, sim.Config{ScoreScale: tc.scale})
		id := h.scan("https://login.phish.test/")
		h.completeURL(id)
		wantBody(t, fmt.Sprint("scale ", tc.scale), h.get(api("result/"+id+"/")), 200,
			`{"url":"https://login.phish.test/","verdict":`+tc.want+`,"error":false}`)
	}
}

func TestReputationDetail(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Location: time.FixedZone("ICT", 7*3600)})
	id := h.scan("https://casino.test/play")
	h.clock.Advance(5 * time.Second)
	h.completeURL(id) // completes on the third poll, at t0+5s
	r := h.get(api("result/detail/" + id + "/"))
	wantBody(t, "detail", r, 200, `{"error":false,"detail":{"url":"https://casino.test/play","final_url":"https://casino.test/play",`+
		`"redirect_chain":[],"http_status":200,"page_title":"Online casino",`+
		`"verdict":{"phishing":0.02,"advertising":0.05,"malicious":0.03,"illegal":0.9},`+
		`"categories":["illegal"],"analyzed_at":"2026-03-14 16:26:58"}}`)
}

func TestReputationSearch(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	h.scan("https://a.test/")
	newest := h.scan("https://a.test/")
	h.scan("https://a.test/other")
	wantBody(t, "search", h.postJSON(api("search/task_id/"), `{"url":" https://a.test/ "}`), 200,
		`{"error":false,"task_id":"`+newest+`"}`)
	// Exact match only: no normalisation beyond trimming.
	wantBody(t, "search variant", h.postJSON(api("search/task_id/"), `{"url":"https://a.test"}`), 200,
		`{"error":true,"msg":"task not found"}`)
}

func TestReputationDisposition(t *testing.T) {
	t.Parallel()
	verdict := func(h *harness, id string) string {
		var out struct {
			Verdict json.RawMessage `json:"verdict"`
		}
		json.Unmarshal(h.get(api("result/"+id+"/")).body, &out)
		return string(out.Verdict)
	}
	ok := `{"error":false}`
	h := setup(t, sim.Config{})
	id := h.scan("https://bank.phish.test/")
	h.completeURL(id)
	report := func(typ, opt string) reply { return h.get(api("verdict/report/" + id + "/" + typ + "/" + opt + "/")) }

	wantBody(t, "fp", report("phishing", "fp"), 200, ok)
	if got := verdict(h, id); got != `{"phishing":0.0,"advertising":0.02,"malicious":0.05,"illegal":0.01}` {
		t.Errorf("after fp: %s", got)
	}
	wantBody(t, "fn", report("malicious", "fn"), 200, ok)
	if got := verdict(h, id); got != `{"phishing":0.0,"advertising":0.02,"malicious":1.0,"illegal":0.01}` {
		t.Errorf("after fn: %s", got)
	}
	wantBody(t, "restore", report("phishing", "restore"), 200, ok)
	wantBody(t, "restore", report("malicious", "restore"), 200, ok)
	if got := verdict(h, id); got != `{"phishing":0.97,"advertising":0.02,"malicious":0.05,"illegal":0.01}` {
		t.Errorf("after restore: %s", got)
	}
	// Without the slash too.
	wantBody(t, "no slash", h.get(api("verdict/report/"+id+"/illegal/fn")), 200, ok)
	if !strings.Contains(string(h.get(api("result/detail/"+id+"/")).body), `"categories":["phishing","illegal"]`) {
		t.Error("detail does not show the fn report")
	}
	task, _ := h.srv.URLTask(id)
	if len(task.Dispositions) != 5 || task.Dispositions[0].Option != "fp" || task.Scores.Illegal != 1 {
		t.Errorf("URLTask = %+v", task)
	}

	t.Run("scale 100", func(t *testing.T) {
		h := setup(t, sim.Config{ScoreScale: 100})
		id := h.scan("https://example.com/")
		h.completeURL(id)
		h.get(api("verdict/report/" + id + "/advertising/fn/"))
		if got := verdict(h, id); got != `{"phishing":0.0,"advertising":100.0,"malicious":0.0,"illegal":0.0}` {
			t.Errorf("fn on scale 100: %s", got)
		}
	})
	t.Run("record only", func(t *testing.T) {
		h := setup(t, sim.Config{DispositionRecordOnly: true})
		id := h.scan("https://bank.phish.test/")
		h.completeURL(id)
		wantBody(t, "fp", h.get(api("verdict/report/"+id+"/phishing/fp/")), 200, ok)
		if got := verdict(h, id); !strings.Contains(got, `"phishing":0.97`) {
			t.Errorf("record-only changed the verdict: %s", got)
		}
		if task, _ := h.srv.URLTask(id); len(task.Dispositions) != 1 {
			t.Errorf("report not recorded: %+v", task)
		}
	})
}

func TestReputationFlip(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	result := func(u string) string {
		id := h.scan(u)
		h.completeURL(id)
		var out struct {
			Verdict map[string]float64 `json:"verdict"`
		}
		json.Unmarshal(h.get(api("result/"+id+"/")).body, &out)
		return fmt.Sprint(out.Verdict["phishing"])
	}
	u := "https://news.flip.test/story"
	var got []string
	for range 4 {
		got = append(got, result(u))
	}
	if want := []string{"0", "0.97", "0", "0.97"}; !slices.Equal(got, want) {
		t.Errorf("flip.test phishing scores = %v, want %v", got, want)
	}
	if result("https://flip.test/other") != "0" {
		t.Error("flip.test alternation is not per URL")
	}

	v := "https://example.com/recheck"
	h.srv.FlipOnNextScan(v, sim.Scores{Phishing: 0.88})
	if got := []string{result(v), result(v)}; !slices.Equal(got, []string{"0.88", "0"}) {
		t.Errorf("FlipOnNextScan: scores %v, want the flip once then the table", got)
	}
}

func TestReputationStrictHTTP(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{StrictHTTP: true})
	pending := h.scan("https://pending.test/")
	noresult := h.scan("https://noresult.test/")
	h.completeURL(noresult)
	for _, tc := range []struct {
		method, path, body string
		code               int
	}{
		{"GET", api("scan/"), "", http.StatusMethodNotAllowed},
		{"POST", api("scan/"), "{", http.StatusBadRequest},
		{"POST", api("search/task_id/"), `{"url":"x"}`, http.StatusBadRequest},
		{"POST", api("search/task_id/"), `{"url":"https://x.test/"}`, http.StatusNotFound},
		{"GET", api("status/zz/"), "", http.StatusBadRequest},
		{"GET", api("status/" + unknownID + "/"), "", http.StatusNotFound},
		{"GET", api("result/" + pending + "/"), "", http.StatusConflict},
		{"GET", api("result/" + noresult + "/"), "", http.StatusInternalServerError},
		{"GET", api("verdict/report/" + pending + "/x/fp/"), "", http.StatusBadRequest},
		{"GET", api("verdict/report/" + noresult + "/phishing/x/"), "", http.StatusBadRequest},
		{"GET", api("status/" + pending + "/"), "", http.StatusOK},
	} {
		r := h.do(tc.method, tc.path, "application/json", strings.NewReader(tc.body))
		if r.code != tc.code {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, r.code, r, tc.code)
		}
	}
}

func TestRedirectNoSlash(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{RedirectNoSlash: true})
	id := h.scan("https://example.com/")
	for _, p := range []string{api("status/" + id), neo("tasks/status/1000"), neo("files/view/md5/" + strings.Repeat("a", 32))} {
		r := h.get(p + "?x=1")
		if r.code != http.StatusMovedPermanently || r.header.Get("Location") != p+"/?x=1" {
			t.Errorf("GET %s: %d Location %q", p, r.code, r.header.Get("Location"))
		}
	}
	// POST is never redirected.
	r := h.postJSON(api("scan"), `{"url":"https://example.com/"}`)
	if r.code != 200 {
		t.Errorf("POST without slash: %d %s", r.code, r)
	}
	// A following client gets the answer.
	resp, err := http.Get(h.base + api("status/"+id))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != api("status/"+id+"/") {
		t.Errorf("followed redirect: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
}
