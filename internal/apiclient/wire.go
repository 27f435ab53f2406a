package apiclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ID is an identifier the services send as a JSON string ("1042") or, in
// CAPE-derived deployments, as a number (1042). It always holds the decimal
// or opaque string form.
type ID string

// UnmarshalJSON accepts a string, an integer or a float with no fraction.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*id = ""
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*id = ID(strings.TrimSpace(s))
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("id: want string or number, got %.40s", b)
	}
	if i, err := n.Int64(); err == nil {
		*id = ID(strconv.FormatInt(i, 10))
		return nil
	}
	f, err := n.Float64()
	if err != nil || f != float64(int64(f)) {
		return fmt.Errorf("id: not an integer: %s", n)
	}
	*id = ID(strconv.FormatInt(int64(f), 10))
	return nil
}

// String returns the id.
func (id ID) String() string { return string(id) }

// Flag is the services' `error` member: a boolean in the specs, an empty list
// meaning false in newer CAPE, and occasionally a string. A non-empty list,
// a non-empty string other than "false"/"0", or a non-zero number is true.
type Flag bool

// UnmarshalJSON implements the tolerant reading described on Flag.
func (f *Flag) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		*f = false
		return nil
	}
	switch b[0] {
	case 't':
		*f = string(b) == "true"
	case 'f', 'n':
		*f = false
	case '[':
		var v []json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*f = len(v) > 0
	case '{':
		var v map[string]json.RawMessage
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*f = len(v) > 0
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.ToLower(strings.TrimSpace(s))
		*f = s != "" && s != "false" && s != "0" && s != "no"
	default:
		var n float64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("error flag: %.40s", b)
		}
		*f = n != 0
	}
	return nil
}

// Text is a message member that is normally a string but may arrive as a
// list of strings or another JSON value; it keeps a readable text form.
type Text string

// UnmarshalJSON keeps strings as they are, joins lists with "; ", and keeps
// any other value as its compact JSON.
func (t *Text) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		*t = ""
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*t = Text(s)
		return nil
	case '[':
		var parts []Text
		if err := json.Unmarshal(b, &parts); err == nil {
			ss := make([]string, 0, len(parts))
			for _, p := range parts {
				if p != "" {
					ss = append(ss, string(p))
				}
			}
			*t = Text(strings.Join(ss, "; "))
			return nil
		}
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return err
	}
	*t = Text(buf.String())
	return nil
}

// Number is a score or count the services send as a JSON number, or
// sometimes as a numeric string.
type Number float64

// UnmarshalJSON accepts a number, a numeric string, or null (zero).
func (n *Number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		*n = 0
		return nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		s = strings.TrimSpace(s)
		if s == "" {
			*n = 0
			return nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("number: %q", s)
		}
		*n = Number(f)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("number: %.40s", b)
	}
	*n = Number(f)
	return nil
}

// NaiveTime is a server timestamp of the form "YYYY-MM-DD HH:MM:SS" with no
// zone (the sandbox's added_on, started_on, completed_on). It is kept as the
// server wrote it: the zone is not documented (CAPE 2021 used server local
// time), so callers must show it, never compute ages from it. Empty means
// null / not reached yet.
type NaiveTime string

// UnmarshalJSON accepts a string or null.
func (t *NaiveTime) UnmarshalJSON(b []byte) error {
	var tx Text
	if err := tx.UnmarshalJSON(b); err != nil {
		return err
	}
	*t = NaiveTime(strings.TrimSpace(string(tx)))
	return nil
}

// Set reports whether the timestamp is present.
func (t NaiveTime) Set() bool { return t != "" }

// Parse reads the timestamp in loc (the zone the operator says the server
// uses). It is for display only.
func (t NaiveTime) Parse(loc *time.Location) (time.Time, error) {
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04:05.999999", time.RFC3339} {
		if ts, err := time.ParseInLocation(layout, string(t), loc); err == nil {
			return ts, nil
		}
	}
	return time.Time{}, fmt.Errorf("timestamp %q: unknown form", string(t))
}

// Envelope holds the members both services use to report failure. The URL
// service puts its text in `msg`, the sandbox in `error_value`, and the
// sandbox's web framework (Django REST framework) in `detail`.
type Envelope struct {
	Error      Flag `json:"error"`
	Msg        Text `json:"msg"`
	ErrorValue Text `json:"error_value"`
	// Detail is only a failure text when it is a string; the URL service's
	// detail operation uses the same member for its (object) payload.
	Detail json.RawMessage `json:"detail"`
}

// Message returns the service's failure text, whichever member carries it.
func (e *Envelope) Message() string {
	switch {
	case e.Msg != "":
		return string(e.Msg)
	case e.ErrorValue != "":
		return string(e.ErrorValue)
	}
	if d := bytes.TrimSpace(e.Detail); len(d) > 0 && d[0] == '"' {
		var s string
		if json.Unmarshal(d, &s) == nil {
			return s
		}
	}
	return ""
}
