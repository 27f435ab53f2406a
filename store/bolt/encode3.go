package bolt

import (
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	kflate "github.com/klauspost/compress/flate"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/store"
	"github.com/verdictbot/verdictbot/verdict"
)

// Schema 3 stores each target once, under a numeric id:
//
//	ids      target (URL or sha256) → id (8 bytes, big endian)
//	targets  id → the target and its whole verdict history, in the binary
//	         encoding below (the URL is written once, in this record)
//	due      next check time (8) + id (8) → nil
//	tasks    task id (packed, see taskKey) → \x00 + id, or the target
//	         itself while it has no id yet (an analysis in flight)
//	cards    channel/source ts → the card record's JSON, deflated with a
//	         preset dictionary of the card model's keys (cardMagic first)
//	         once the card is final; plain JSON while it is in flight
//
// Ids come from the sequence in meta "target_seq" and are never reused.

const bIDs = "ids"

func init() { buckets = append(buckets, bIDs) }

// ---- ids ----

func idKey(id uint64) string { return seqKey(id) }

// idsKey is the ids bucket's key for target: 8 bytes of its sha256. Its
// value is the ids of the targets with that hash (one, but for a
// collision); each record holds its own target, which tells them apart.
func idsKey(target string) string {
	h := sha256.Sum256([]byte(target))
	return string(h[:8])
}

// targetID returns the id of target, or "" when it has none.
func targetID(t txn, target string) string {
	v := t.get(bIDs, idsKey(target))
	for ; len(v) >= 8; v = v[8:] {
		if raw := t.get(bTargets, string(v[:8])); raw != nil && recordTarget(raw) == target {
			return string(v[:8])
		}
	}
	return ""
}

// recordTarget returns the target of an encoded record without decoding
// the rest.
func recordTarget(raw []byte) string {
	r := &rbuf{b: raw}
	r.uvarint()
	return r.str()
}

// newTargetID allocates the next id and maps target to it.
func newTargetID(t txn, target string) (string, error) {
	var n uint64
	if v := t.get(bMeta, "target_seq"); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	n++
	id := idKey(n)
	if err := t.put(bMeta, "target_seq", []byte(id)); err != nil {
		return "", err
	}
	k := idsKey(target)
	return id, t.put(bIDs, k, append(t.get(bIDs, k), id...))
}

// dropTargetID removes id from target's ids entry.
func dropTargetID(t txn, target, id string) error {
	k := idsKey(target)
	v := t.get(bIDs, k)
	var keep []byte
	for ; len(v) >= 8; v = v[8:] {
		if string(v[:8]) != id {
			keep = append(keep, v[:8]...)
		}
	}
	if len(keep) == 0 {
		return t.del(bIDs, k)
	}
	return t.put(bIDs, k, keep)
}

// targetRecord is a target with its history, as schema 3 stores it. Its
// cards are in target_cards (schema 4, targetcards.go): Target.Cards is
// set only by readers that list them, and by decodeTarget for a record of
// format 1, which held them.
type targetRecord struct {
	store.Target
	History []store.Verdict
}

// getTarget reads the record of target (by URL); ok is false when absent.
func getTarget(t txn, target string) (id string, rec targetRecord, ok bool, err error) {
	id = targetID(t, target)
	if id == "" {
		return "", rec, false, nil
	}
	raw := t.get(bTargets, id)
	if raw == nil {
		return id, rec, false, nil
	}
	rec, err = decodeTarget(raw)
	return id, rec, err == nil, err
}

// addVerdict inserts v into the history, oldest first (after verdicts of
// the same time).
func (r *targetRecord) addVerdict(v store.Verdict) {
	i := sort.Search(len(r.History), func(i int) bool { return r.History[i].At.After(v.At) })
	r.History = slices.Insert(r.History, i, v)
}

// ---- task index ----

// taskKey packs a task id: a 32-character lowercase hex id (the URL
// service's) as \x01 + its 16 bytes, anything else as itself (decimal
// sandbox ids and others never start with \x01).
func taskKey(taskID string) string {
	if b, ok := packHex(taskID); ok {
		return "\x01" + string(b)
	}
	return taskID
}

func packHex(s string) ([]byte, bool) {
	if len(s) != 32 {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// taskValue is the task index's value for a target: its id if it has one.
func taskValue(t txn, target string) []byte {
	if id := targetID(t, target); id != "" {
		return []byte("\x00" + id)
	}
	return []byte(target)
}

// taskTarget resolves a task index value to the target's id (if any) and
// name ("" when the id's record is gone).
func taskTarget(t txn, v []byte) (id, target string, err error) {
	if len(v) == 9 && v[0] == 0 {
		id = string(v[1:])
		raw := t.get(bTargets, id)
		if raw == nil {
			return id, "", nil
		}
		rec, err := decodeTarget(raw)
		return id, rec.Target.Target, err
	}
	return "", string(v), nil
}

// ---- binary encoding of target records ----

// targetFormat 2 (schema 4) has no cards: format 1 held them after the
// next check time.
const targetFormat = 2

// Times after the first are written relative to base (the target's first
// seen time), in a few bytes instead of eight or nine.
type wbuf struct {
	b    []byte
	base int64
}

func (w *wbuf) uvarint(n uint64) { w.b = binary.AppendUvarint(w.b, n) }
func (w *wbuf) str(s string)     { w.uvarint(uint64(len(s))); w.b = append(w.b, s...) }
func (w *wbuf) time(t time.Time) {
	if t.IsZero() {
		w.b = binary.AppendVarint(w.b, math.MinInt64)
		return
	}
	w.b = binary.AppendVarint(w.b, t.UnixNano()-w.base)
}

// enum writes s as its index in list plus one, or 0 and s.
func (w *wbuf) enum(s string, list []string) {
	if i := slices.Index(list, s); i >= 0 {
		w.uvarint(uint64(i + 1))
		return
	}
	w.uvarint(0)
	w.str(s)
}

var (
	kinds      = []string{"url", "file"}
	sources    = []string{"scan", "recheck"}
	categories = []string{"", string(verdict.CatPhishing), string(verdict.CatAdvertising), string(verdict.CatMalicious), string(verdict.CatIllegal)}
)

// float writes f as k<<1|1 when f is exactly k/10000 (scores such as
// 0.123: two bytes), else as its shortest decimal text, length<<1 first.
func (w *wbuf) float(f float64) {
	if f >= 0 && f < 1e12 {
		if k := math.Round(f * 1e4); k/1e4 == f {
			w.uvarint(uint64(k)<<1 | 1)
			return
		}
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	w.uvarint(uint64(len(s)) << 1)
	w.b = append(w.b, s...)
}
func (w *wbuf) task(s string) {
	if b, ok := packHex(s); ok {
		w.uvarint(1)
		w.b = append(w.b, b...)
		return
	}
	w.uvarint(uint64(len(s)) + 2)
	w.b = append(w.b, s...)
}
func (w *wbuf) scores(s verdict.Scores) {
	cats := make([]string, 0, len(s))
	for c := range s {
		cats = append(cats, string(c))
	}
	sort.Strings(cats)
	w.uvarint(uint64(len(cats)))
	for _, c := range cats {
		if i := slices.Index(verdict.Categories, verdict.Category(c)); i >= 0 {
			w.uvarint(uint64(i + 1))
		} else {
			w.uvarint(0)
			w.str(c)
		}
		w.float(s[verdict.Category(c)])
	}
}

var errShort = errors.New("record ends early")

type rbuf struct {
	b    []byte
	base int64
	err  error
}

func (r *rbuf) enum(list []string) string {
	i := r.uvarint()
	switch {
	case r.err != nil:
		return ""
	case i == 0:
		return r.str()
	case i <= uint64(len(list)):
		return list[i-1]
	}
	r.err = fmt.Errorf("bad code %d", i)
	return ""
}

func (r *rbuf) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	n, k := binary.Uvarint(r.b)
	if k <= 0 {
		r.err = errShort
		return 0
	}
	r.b = r.b[k:]
	return n
}
func (r *rbuf) bytes(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = errShort
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *rbuf) str() string { return string(r.bytes(r.uvarint())) }
func (r *rbuf) time() time.Time {
	if r.err != nil {
		return time.Time{}
	}
	n, k := binary.Varint(r.b)
	if k <= 0 {
		r.err = errShort
		return time.Time{}
	}
	r.b = r.b[k:]
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n+r.base).UTC()
}
func (r *rbuf) float() float64 {
	n := r.uvarint()
	if n&1 == 1 {
		return float64(n>>1) / 1e4
	}
	s := string(r.bytes(n >> 1))
	if r.err != nil {
		return 0
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		r.err = err
	}
	return f
}
func (r *rbuf) task() string {
	n := r.uvarint()
	switch {
	case r.err != nil:
		return ""
	case n == 1:
		return hex.EncodeToString(r.bytes(16))
	case n < 2:
		r.err = fmt.Errorf("bad task id length %d", n)
		return ""
	}
	return string(r.bytes(n - 2))
}
func (r *rbuf) scores() verdict.Scores {
	n := r.uvarint()
	if n == 0 || r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errShort
		return nil
	}
	s := make(verdict.Scores, n)
	for range n {
		var c verdict.Category
		switch i := r.uvarint(); {
		case i == 0:
			c = verdict.Category(r.str())
		case i <= uint64(len(verdict.Categories)):
			c = verdict.Categories[i-1]
		default:
			r.err = fmt.Errorf("bad category %d", i)
			return nil
		}
		s[c] = r.float()
	}
	return s
}

func encodeTarget(rec *targetRecord) []byte {
	w := &wbuf{b: make([]byte, 0, 128+64*len(rec.History))}
	tg := &rec.Target
	w.uvarint(targetFormat)
	w.str(tg.Target)
	w.enum(tg.Kind, kinds)
	w.time(tg.FirstSeen)
	if !tg.FirstSeen.IsZero() {
		w.base = tg.FirstSeen.UnixNano()
	}
	w.time(tg.Checked)
	w.uvarint(uint64(tg.Level))
	w.enum(string(tg.Category), categories)
	w.task(tg.TaskID)
	w.uvarint(uint64(tg.Rechecks))
	w.time(tg.NextCheck)
	w.uvarint(uint64(len(rec.History)))
	for _, v := range rec.History {
		w.enum(v.Kind, kinds)
		w.task(v.TaskID)
		w.uvarint(uint64(v.Level))
		w.enum(string(v.Category), categories)
		w.scores(v.Scores)
		w.float(v.MalScore)
		w.str(v.Family)
		w.time(v.At)
		w.enum(v.Source, sources)
	}
	return w.b
}

func decodeTarget(b []byte) (targetRecord, error) {
	r := &rbuf{b: b}
	var rec targetRecord
	format := r.uvarint()
	if r.err == nil && format != 1 && format != targetFormat {
		return rec, fmt.Errorf("store: target record of unknown format %d", format)
	}
	tg := &rec.Target
	tg.Target = r.str()
	tg.Kind = r.enum(kinds)
	tg.FirstSeen = r.time()
	if !tg.FirstSeen.IsZero() {
		r.base = tg.FirstSeen.UnixNano()
	}
	tg.Checked = r.time()
	tg.Level = verdict.Level(r.uvarint())
	tg.Category = verdict.Category(r.enum(categories))
	tg.TaskID = r.task()
	tg.Rechecks = int(r.uvarint())
	tg.NextCheck = r.time()
	if format == targetFormat {
		// no cards: they are in target_cards
	} else if n := r.uvarint(); n > 0 && n <= uint64(len(r.b)) {
		tg.Cards = make([]card.Ref, n)
		for i := range tg.Cards {
			tg.Cards[i] = card.Ref{Channel: r.str(), SourceTS: r.str()}
		}
	} else if n > 0 {
		r.err = errShort
	}
	if n := r.uvarint(); n > 0 && n <= uint64(len(r.b)) {
		rec.History = make([]store.Verdict, n)
		for i := range rec.History {
			v := &rec.History[i]
			v.Target = tg.Target
			v.Kind = r.enum(kinds)
			v.TaskID = r.task()
			v.Level = verdict.Level(r.uvarint())
			v.Category = verdict.Category(r.enum(categories))
			v.Scores = r.scores()
			v.MalScore = r.float()
			v.Family = r.str()
			v.At = r.time()
			v.Source = r.enum(sources)
		}
	} else if n > 0 {
		r.err = errShort
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = errors.New("trailing bytes")
	}
	if r.err != nil {
		return targetRecord{}, fmt.Errorf("store: corrupt target record: %w", r.err)
	}
	return rec, nil
}

// ---- cards: JSON deflated with a preset dictionary ----

// cardMagic starts a deflated card record (JSON starts with '{').
const cardMagic = 0x01

// cardDict is the preset dictionary: what every card record repeats.
// Changing it makes the stored cards unreadable: never edit it, add a new
// magic byte and dictionary instead.
var cardDict = []byte(`"scores":{"advertising":0,"illegal":0,"malicious":0,"phishing":0},"service":"sandbox","service":"reputation","task_id":"","cached":true,"checked_at":"2026-01-01T00:00:00Z","reports":null,"actions":true},{"kind":"file","target":"https://","level":2,"category":"phishing","malicious","advertising","illegal","file":{"name":"","type":"","size":,"md5":"","sha1":"","sha256":"","mal_score":,"family":"","added_on":"","started_on":"","done_on":"","screenshots":},"status":"running","problem":"","detail":"","query_not_sent":true,{"user":"U","option":"fp","at":"","outcome":""}],"skipped":null,"notes":null},"mode":"quiet","mode":"verbose","gen":1,"post_started":true,"deleted":true,"updated":"2026-01-01T00:00:00Z"}{"card":{"channel":"C0","thread_ts":"1","source_ts":"1","card_ts":"1","poster":"U0","requested_by":"U0","final":true,"lines":[{"kind":"url","target":"https://`)

// cardLevel is the deflate level of card records: klauspost/compress's
// level 6 writes records as small as compress/flate's best (159 against
// 162 bytes for a one-link card, 521 against 524 for ten links) in half
// the time, and its Reset does not clear 640 KB of hash tables as
// compress/flate's does (levels 2–9) before every record. Its output is
// plain deflate: compress/flate reads it, and the records written before.
const cardLevel = 6

var cardWriters = sync.Pool{New: func() any {
	w, err := kflate.NewWriterDict(io.Discard, cardLevel, cardDict)
	if err != nil {
		panic(err)
	}
	return w
}}

// cardReaders reuse inflaters (and their 32 KB window): a new one per
// record read cost more than the rest of the read.
var cardReaders = sync.Pool{New: func() any { return flate.NewReaderDict(bytes.NewReader(nil), cardDict) }}

// cardBufs hold a card record's JSON while it is decoded.
var cardBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// encodeCard encodes a card record for the cards bucket: deflated once the
// card is final, plain JSON while anything on it is still being analysed.
// A card in flight is rewritten two or three times within seconds (begun,
// posted, settled) and read back between them; deflating each of those
// versions, and inflating them again, was a tenth of the bot's CPU per link
// (issue 23), for records that live seconds. What stays is the final one,
// deflated as in schema 3; decodeCard reads both.
func encodeCard(rec *store.CardRecord) []byte {
	js := enc(rec)
	if !rec.Card.Final {
		return js
	}
	return deflateCard(js)
}

// deflateCard deflates a card record's JSON with the preset dictionary,
// after cardMagic.
func deflateCard(js []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(js)/3 + 16)
	buf.WriteByte(cardMagic)
	w := cardWriters.Get().(*kflate.Writer)
	w.Reset(&buf)
	w.Write(js)
	w.Close()
	w.Reset(nil) // keep no reference to buf in the pool (nil: without feeding the dictionary again)
	cardWriters.Put(w)
	return buf.Bytes()
}

// decodeCard decodes a stored card record: deflated (schema 3) or plain
// JSON (schema 2, before the migration re-encodes it).
func decodeCard(v []byte) (*store.CardRecord, error) {
	if len(v) > 0 && v[0] == cardMagic {
		r := cardReaders.Get().(io.ReadCloser)
		defer cardReaders.Put(r)
		if err := r.(flate.Resetter).Reset(bytes.NewReader(v[1:]), cardDict); err != nil {
			return nil, fmt.Errorf("store: corrupt card record: %w", err)
		}
		buf := cardBufs.Get().(*bytes.Buffer)
		defer cardBufs.Put(buf)
		buf.Reset()
		if _, err := buf.ReadFrom(r); err != nil {
			return nil, fmt.Errorf("store: corrupt card record: %w", err)
		}
		v = buf.Bytes() // dec copies what it keeps
	}
	var rec store.CardRecord
	if err := dec(v, &rec); err != nil {
		return nil, err
	}
	return &rec, nil
}
