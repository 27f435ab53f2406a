package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The webhook's request headers.
const (
	// SignatureHeader carries the body's signatures under
	// VERDICTBOT_EVENTS_SECRET, comma-separated as Stripe's
	// Stripe-Signature does: "v1=<hex>,sha256=<hex>". v1 is HMAC-SHA256
	// over "v1:<timestamp>:<body>" (Slack's v0 scheme), with the
	// timestamp of TimestampHeader, so a receiver can refuse a replayed
	// request; sha256 is HMAC-SHA256 of the body alone, the signature of
	// the releases before v1, kept for the receivers built on it (it does
	// not protect against replays). A receiver ignores the schemes it does
	// not know.
	SignatureHeader = "X-Verdictbot-Signature"
	// LegacySignatureHeader carries the sha256 signature alone,
	// "sha256=<hex>", as GitHub's X-Hub-Signature-256 does, for inputs
	// that check one signature per header by a fixed prefix (Filebeat's
	// http_endpoint hmac: it cannot read a list, nor sign a timestamp).
	// It does not protect against replays.
	LegacySignatureHeader = "X-Verdictbot-Signature-256"
	// TimestampHeader is when the request was signed, in Unix seconds
	// (each attempt is signed anew).
	TimestampHeader = "X-Verdictbot-Timestamp"
	// SequenceHeader carries the event's sequence number (also in the body,
	// metadata.sequence), so a receiver can spot a resent event.
	SequenceHeader = "X-Verdictbot-Sequence"
	// TermHeader carries the term of the sender's lead (its fencing token)
	// when replicas share PostgreSQL: it grows at each new leader, so a
	// receiver that has seen a greater term knows the request comes from a
	// replica that lost the lead (which the sender prevents; this is for
	// receivers that check).
	TermHeader = "X-Verdictbot-Term"
)

// DefaultReplayWindow is the replay window a receiver should allow around
// its clock for TimestampHeader (Slack and Stripe use 5 minutes).
const DefaultReplayWindow = 5 * time.Minute

// Sign returns SignatureHeader's value for body signed at ts (Unix
// seconds): "v1=<hex>,sha256=<hex>".
func Sign(secret []byte, ts int64, body []byte) string {
	return "v1=" + signV1(secret, strconv.FormatInt(ts, 10), body) + ",sha256=" + signSHA256(secret, body)
}

// SignLegacy returns LegacySignatureHeader's value for body:
// "sha256=<hex>".
func SignLegacy(secret, body []byte) string { return "sha256=" + signSHA256(secret, body) }

func signV1(secret []byte, ts string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("v1:" + ts + ":"))
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

func signSHA256(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hex.EncodeToString(m.Sum(nil))
}

// signatures returns the values of scheme in a SignatureHeader value
// ("a=x, b=y": spaces around the parts are allowed).
func signatures(header, scheme string) []string {
	var out []string
	for part := range strings.SplitSeq(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == scheme {
			out = append(out, v)
		}
	}
	return out
}

// Verify is the check of a receiver built before the timestamp: whether
// header (SignatureHeader, "sha256=<hex>" as it was, or "v1=…,sha256=<hex>"
// as it is now; or LegacySignatureHeader) carries a valid sha256 signature
// of body, compared in constant time. It does not protect against a
// replayed request: use VerifyTimestamped.
func Verify(secret, body []byte, header string) bool {
	want := []byte(signSHA256(secret, body))
	for _, sig := range signatures(header, "sha256") {
		if hmac.Equal([]byte(sig), want) {
			return true
		}
	}
	return false
}

// The reasons VerifyTimestamped refuses a request.
var (
	ErrNoSignature  = errors.New("no v1 signature in " + SignatureHeader)
	ErrBadTimestamp = errors.New(TimestampHeader + " is missing or not Unix seconds")
	ErrStale        = errors.New(TimestampHeader + " is outside the replay window")
	ErrBadSignature = errors.New("the v1 signature does not match the body and timestamp")
)

// VerifyTimestamped is a receiver's check with replay protection: the
// timestamp (TimestampHeader) is within window of now (either way, for
// clock skew), and header (SignatureHeader) carries a v1 signature of
// "v1:<timestamp>:<body>", compared in constant time. nil when both hold.
func VerifyTimestamped(secret, body []byte, header, timestamp string, now time.Time, window time.Duration) error {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestamp), 10, 64)
	if err != nil || ts <= 0 {
		return ErrBadTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > window || d < -window {
		return fmt.Errorf("%w (%s apart)", ErrStale, d.Round(time.Second))
	}
	sigs := signatures(header, "v1")
	if len(sigs) == 0 {
		return ErrNoSignature
	}
	want := []byte(signV1(secret, strconv.FormatInt(ts, 10), body))
	for _, sig := range sigs {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrBadSignature
}

// Resequence returns an event's body (as queued) with metadata.sequence
// set to seq, every other member kept: a dead letter sent again gets the
// sequence number of its new place in the queue (its metadata.uid stays).
func Resequence(body []byte, seq uint64) ([]byte, error) {
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(body, &ev); err != nil || ev == nil {
		return nil, fmt.Errorf("not an event (a JSON object): %v", err)
	}
	md := map[string]json.RawMessage{}
	if raw, ok := ev["metadata"]; ok {
		if err := json.Unmarshal(raw, &md); err != nil || md == nil {
			return nil, fmt.Errorf("the event's metadata is not an object: %v", err)
		}
	}
	md["sequence"] = json.RawMessage(strconv.FormatUint(seq, 10))
	b, err := json.Marshal(md)
	if err != nil {
		return nil, err
	}
	ev["metadata"] = b
	return json.Marshal(ev)
}
