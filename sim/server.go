package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Server simulates both analysis services on one http.Handler: the URL
// reputation service under /api/<key>/ and the sandbox under /apineo/<key>/,
// plus an admin API under /_sim/. It is safe for concurrent use.
type Server struct {
	cfg Config

	mu sync.Mutex

	// URL reputation service.
	urlSeq    int
	urlTasks  map[string]*urlTask
	urlByURL  map[string][]*urlTask // by trimmed URL, oldest first
	scanCount map[string]int        // scans per trimmed URL (flip.test)
	flips     map[string]Scores     // FlipOnNextScan, by trimmed URL

	// Sandbox service.
	nextTask  int
	sbTasks   map[int]*sbTask
	samples   map[string]*sample // by sha256
	byMD5     map[string]*sample
	bySHA1    map[string]*sample
	sbByHash  map[string][]*sbTask // by sample sha256, oldest first
	limits    map[string]*keyLimits
	faults    faultState
	reqs      []Request
	counts    map[string]int // service + "\x00" + op
	keyAccept map[string]bool
}

var _ http.Handler = (*Server)(nil)

// New returns a Server for cfg; zero fields take their documented defaults.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{
		cfg:       cfg,
		urlTasks:  map[string]*urlTask{},
		urlByURL:  map[string][]*urlTask{},
		scanCount: map[string]int{},
		flips:     map[string]Scores{},
		nextTask:  cfg.FirstTaskID,
		sbTasks:   map[int]*sbTask{},
		samples:   map[string]*sample{},
		byMD5:     map[string]*sample{},
		bySHA1:    map[string]*sample{},
		sbByHash:  map[string][]*sbTask{},
		limits:    map[string]*keyLimits{},
		faults:    newFaultState(cfg.Faults),
		counts:    map[string]int{},
		keyAccept: map[string]bool{},
	}
	for _, k := range cfg.Keys {
		s.keyAccept[k] = true
	}
	return s
}

// Request is one logged request to a service.
type Request struct {
	Time    time.Time `json:"time"`    // Config.Now when it arrived
	Service string    `json:"service"` // ServiceReputation or ServiceSandbox
	Op      string    `json:"op"`      // OpScan, OpStatus, …, OpNotFound
	Bucket  string    `json:"bucket"`  // BucketRun or BucketReport
	Method  string    `json:"method"`
	Path    string    `json:"path"`   // with the key replaced by <key>
	Status  int       `json:"status"` // HTTP status of the answer
}

// Requests returns the logged requests, oldest first (at most
// Config.MaxLog of the latest).
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs[max(0, len(s.reqs)-s.cfg.MaxLog):])
}

// Count returns how many requests of service and op arrived since New or
// ResetRequests; op "" counts every op of the service.
func (s *Server) Count(service, op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if op != "" {
		return s.counts[service+"\x00"+op]
	}
	n := 0
	for k, v := range s.counts {
		if strings.HasPrefix(k, service+"\x00") {
			n += v
		}
	}
	return n
}

// ResetRequests clears the request log and the counters.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
	s.counts = map[string]int{}
}

// SetFaults replaces the fault set and restarts its counters.
func (s *Server) SetFaults(f Faults) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = newFaultState(f)
}

// Faults returns the current fault set.
func (s *Server) Faults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults.f
	f.Throttle = slices.Clone(f.Throttle)
	for i := range f.Throttle {
		f.Throttle[i].Count = s.faults.left[i]
	}
	return f
}

// Config returns the effective configuration, defaults filled in.
func (s *Server) Config() Config {
	cfg := s.cfg
	cfg.Keys = slices.Clone(cfg.Keys)
	return cfg
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_sim" || strings.HasPrefix(r.URL.Path, adminPrefix) {
		s.serveAdmin(w, r)
		return
	}
	rt := parseRoute(r.URL.Path)
	if rt == nil {
		writeHTML(w, http.StatusNotFound, notFoundPage)
		return
	}
	start := s.cfg.Now()
	sw := &statusWriter{ResponseWriter: w}
	s.serve(sw, r, rt)
	s.logRequest(Request{
		Time: start, Service: rt.service, Op: rt.op, Bucket: rt.bucket,
		Method: r.Method, Path: rt.logPath, Status: sw.code(),
	})
}

// serve runs the gateway checks in order (faults, route, slash redirect,
// key, limits, method) and then the operation.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt *route) {
	s.mu.Lock()
	fd := s.faults.decide(rt)
	s.mu.Unlock()
	if fd.delay > 0 {
		t := time.NewTimer(fd.delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	if fd.status != 0 {
		writeHTML(w, fd.status, gatewayPage(fd.status))
		return
	}
	if fd.retryAfter > 0 {
		s.writeThrottled(w, rt, fd.retryAfter)
		return
	}
	if rt.op == OpNotFound {
		writeHTML(w, http.StatusNotFound, notFoundPage)
		return
	}
	if s.cfg.RedirectNoSlash && !rt.slash && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		loc := r.URL.Path + "/"
		if r.URL.RawQuery != "" {
			loc += "?" + r.URL.RawQuery
		}
		w.Header().Set("Location", loc)
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	if !s.keyOK(rt.key) {
		// ASSUMPTION: invented texts; the specs say nothing
		// about an unknown key.
		if rt.service == ServiceReputation {
			writeJSON(w, http.StatusForbidden, urlError{Error: true, Msg: "invalid api key"})
		} else {
			writeJSON(w, http.StatusForbidden, sbError{Error: true, ErrorValue: "invalid api key"})
		}
		return
	}
	if s.limited(w, rt) {
		return
	}
	if !rt.allows(r.Method) {
		if rt.service == ServiceReputation {
			s.urlErr(w, msgInvalidMethod)
		} else {
			// Django REST framework's answer to a wrong method (CAPEv2's error texts).
			w.Header().Set("Allow", rt.allowHeader())
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": fmt.Sprintf("Method %q not allowed.", r.Method)})
		}
		return
	}
	if rt.service == ServiceReputation {
		s.serveReputation(w, r, rt)
	} else {
		s.serveSandbox(w, r, rt)
	}
}

func (s *Server) keyOK(key string) bool {
	if key == "" {
		return false
	}
	return len(s.keyAccept) == 0 || s.keyAccept[key]
}

// limited applies the key's quota and token buckets; it answers and
// returns true when the request is refused.
func (s *Server) limited(w http.ResponseWriter, rt *route) bool {
	l := s.cfg.ReputationLimits
	if rt.service == ServiceSandbox {
		l = s.cfg.SandboxLimits
	}
	if l == (Limits{}) {
		return false
	}
	s.mu.Lock()
	id := rt.service + "\x00" + rt.key
	k := s.limits[id]
	if k == nil {
		k = newKeyLimits(l)
		s.limits[id] = k
	}
	quota, retry := k.admit(l, rt.bucket, s.cfg.Now())
	s.mu.Unlock()
	switch {
	case quota:
		code := http.StatusTooManyRequests
		if s.cfg.QuotaForbidden {
			code = http.StatusForbidden
		}
		// ASSUMPTION: the quota text.
		if rt.service == ServiceReputation {
			writeJSON(w, code, urlError{Error: true, Msg: "quota exceeded"})
		} else {
			writeJSON(w, code, sbError{Error: true, ErrorValue: "quota exceeded"})
		}
		return true
	case retry > 0:
		s.writeThrottled(w, rt, retry)
		return true
	}
	return false
}

// writeThrottled answers 429 with Retry-After in the service's style.
func (s *Server) writeThrottled(w http.ResponseWriter, rt *route, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	if rt.service == ServiceReputation {
		// ASSUMPTION (rate limits are not documented).
		writeJSON(w, http.StatusTooManyRequests, urlError{Error: true, Msg: "rate limit exceeded"})
		return
	}
	switch s.cfg.ThrottleStyle {
	case ThrottleDRF:
		unit := "seconds"
		if retryAfter == 1 {
			unit = "second"
		}
		writeJSON(w, http.StatusTooManyRequests, map[string]string{
			"detail": fmt.Sprintf("Request was throttled. Expected available in %d %s.", retryAfter, unit),
		})
	case ThrottleHTML:
		writeHTML(w, http.StatusTooManyRequests, throttlePage)
	default:
		// CAPE 2020 limit_exceeded view (CAPEv2's rate limits).
		writeJSON(w, http.StatusTooManyRequests, sbError{Error: true, ErrorValue: "Rate limit exceeded for this API"})
	}
}

func (s *Server) logRequest(req Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[req.Service+"\x00"+req.Op]++
	// Keep up to 2×MaxLog entries and drop the older half at once, so
	// logging stays O(1) amortised; Requests shows the newest MaxLog.
	if len(s.reqs) >= 2*s.cfg.MaxLog {
		s.reqs = append(s.reqs[:0], s.reqs[len(s.reqs)-s.cfg.MaxLog:]...)
	}
	s.reqs = append(s.reqs, req)
}

// statusWriter remembers the status code written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// code is the status sent; a handler that wrote nothing (client gone
// during a fault delay) is logged as 499, nginx's "client closed request".
func (w *statusWriter) code() int {
	if w.status == 0 {
		return 499
	}
	return w.status
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeJSON writes v as compact JSON without HTML escaping, as Django's
// JsonResponse and DRF write it.
func writeJSON(w http.ResponseWriter, code int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		writeHTML(w, http.StatusInternalServerError, serverErrorPage)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

func writeHTML(w http.ResponseWriter, code int, page string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	w.WriteHeader(code)
	w.Write([]byte(page))
}

// notFoundPage is Django's default 404 page (DEBUG off).
const notFoundPage = `<!doctype html>
<html lang="en">
<head>
  <title>Not Found</title>
</head>
<body>
  <h1>Not Found</h1><p>The requested resource was not found on this server.</p>
</body>
</html>
`

// serverErrorPage is Django's default 500 page (DEBUG off).
const serverErrorPage = `<!doctype html>
<html lang="en">
<head>
  <title>Server Error (500)</title>
</head>
<body>
  <h1>Server Error (500)</h1><p></p>
</body>
</html>
`

// throttlePage is the legacy CAPE 429 page (2020 handler403 with
// RATELIMIT_ERROR_MSG, CAPEv2's rate limits).
const throttlePage = `<!DOCTYPE html>
<html>
<head><title>429 Too Many Requests</title></head>
<body>
<h1>Too many request without apikey! You have exceed your free request per minute.</h1>
</body>
</html>
`

// gatewayPage is an nginx-style error page for an injected failure.
func gatewayPage(code int) string {
	title := fmt.Sprintf("%d %s", code, http.StatusText(code))
	if code == http.StatusOK {
		title = "Service temporarily unavailable"
	}
	return fmt.Sprintf("<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n<center><h1>%s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n", title, title)
}
