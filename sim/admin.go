package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// adminPrefix is the admin API's path prefix, outside both key-bearing
// service prefixes. It is for people running `verdictbot sim`; tests use
// the Server methods directly.
const adminPrefix = "/_sim/"

const adminIndex = `verdictbot simulator admin API

GET    /_sim/requests   request log (JSON array, oldest first)
GET    /_sim/counts     request counts by service and op (JSON)
POST   /_sim/reset      clear the request log and counts
GET    /_sim/faults     current fault set (JSON)
PUT    /_sim/faults     replace the fault set; body, every member optional:
                        {"service":"","delay":"2s","error_every":0,"error_rate":0.1,
                         "seed":1,"error_status":502,
                         "throttle":[{"service":"sandbox","bucket":"run","count":3,"retry_after":"5s"}],
                         "shots_corrupt":false,"shots_delay":"0s"}
DELETE /_sim/faults     clear the fault set
POST   /_sim/flip       {"url":"https://x.test/","scores":{"phishing":0.97}}: the next scan
                        of exactly that URL gets these scores (unit scale)
`

// faultsWire is the JSON form of Faults, with Go duration strings.
type faultsWire struct {
	Service      string         `json:"service"`
	Delay        string         `json:"delay"`
	ErrorEvery   int            `json:"error_every"`
	ErrorRate    float64        `json:"error_rate"`
	Seed         uint64         `json:"seed"`
	ErrorStatus  int            `json:"error_status"`
	Throttle     []throttleWire `json:"throttle"`
	ShotsCorrupt bool           `json:"shots_corrupt"`
	ShotsDelay   string         `json:"shots_delay"`
}

type throttleWire struct {
	Service    string `json:"service"`
	Bucket     string `json:"bucket"`
	Count      int    `json:"count"`
	RetryAfter string `json:"retry_after"`
}

func faultsToWire(f Faults) faultsWire {
	w := faultsWire{
		Service: f.Service, Delay: f.Delay.String(), ErrorEvery: f.ErrorEvery,
		ErrorRate: f.ErrorRate, Seed: f.Seed, ErrorStatus: f.ErrorStatus, Throttle: []throttleWire{},
		ShotsCorrupt: f.ShotsCorrupt, ShotsDelay: f.ShotsDelay.String(),
	}
	for _, t := range f.Throttle {
		w.Throttle = append(w.Throttle, throttleWire{t.Service, t.Bucket, t.Count, t.RetryAfter.String()})
	}
	return w
}

func (w faultsWire) faults() (Faults, error) {
	parse := func(name, v string) (time.Duration, error) {
		if v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		return d, nil
	}
	if w.Service != "" && w.Service != ServiceReputation && w.Service != ServiceSandbox {
		return Faults{}, fmt.Errorf("service: want %q, %q or empty, got %q", ServiceReputation, ServiceSandbox, w.Service)
	}
	delay, err := parse("delay", w.Delay)
	if err != nil {
		return Faults{}, err
	}
	shotsDelay, err := parse("shots_delay", w.ShotsDelay)
	if err != nil {
		return Faults{}, err
	}
	f := Faults{
		Service: w.Service, Delay: delay, ErrorEvery: w.ErrorEvery, ErrorRate: w.ErrorRate,
		Seed: w.Seed, ErrorStatus: w.ErrorStatus, ShotsCorrupt: w.ShotsCorrupt, ShotsDelay: shotsDelay,
	}
	for i, t := range w.Throttle {
		ra, err := parse(fmt.Sprintf("throttle[%d].retry_after", i), t.RetryAfter)
		if err != nil {
			return Faults{}, err
		}
		f.Throttle = append(f.Throttle, Throttle{t.Service, t.Bucket, t.Count, ra})
	}
	return f, nil
}

// serveAdmin serves /_sim/…. Admin requests are not logged or limited.
func (s *Server) serveAdmin(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, adminPrefix), "/")
	bad := func(err error) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	ok := func() { writeJSON(w, http.StatusOK, map[string]bool{"ok": true}) }
	switch {
	case path == "" || r.URL.Path == "/_sim":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, adminIndex)
	case path == "requests" && r.Method == http.MethodGet:
		reqs := s.Requests()
		if reqs == nil {
			reqs = []Request{}
		}
		writeJSON(w, http.StatusOK, reqs)
	case path == "counts" && r.Method == http.MethodGet:
		out := map[string]map[string]int{ServiceReputation: {}, ServiceSandbox: {}}
		s.mu.Lock()
		for k, v := range s.counts {
			svc, op, _ := strings.Cut(k, "\x00")
			out[svc][op] = v
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	case path == "reset" && r.Method == http.MethodPost:
		s.ResetRequests()
		ok()
	case path == "faults" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, faultsToWire(s.Faults()))
	case path == "faults" && (r.Method == http.MethodPut || r.Method == http.MethodPost):
		var fw faultsWire
		if err := decodeStrict(r.Body, &fw); err != nil {
			bad(err)
			return
		}
		f, err := fw.faults()
		if err != nil {
			bad(err)
			return
		}
		s.SetFaults(f)
		ok()
	case path == "faults" && r.Method == http.MethodDelete:
		s.SetFaults(Faults{})
		ok()
	case path == "flip" && r.Method == http.MethodPost:
		var body struct {
			URL    string `json:"url"`
			Scores Scores `json:"scores"`
		}
		if err := decodeStrict(r.Body, &body); err != nil {
			bad(err)
			return
		}
		if strings.TrimSpace(body.URL) == "" {
			bad(fmt.Errorf("url: required"))
			return
		}
		s.FlipOnNextScan(body.URL, body.Scores)
		ok()
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "unknown admin path or method; GET /_sim/ lists them"})
	}
}

// decodeStrict decodes one JSON value, rejecting unknown members.
func decodeStrict(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, maxJSONBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode body: %w", err)
	}
	return nil
}
