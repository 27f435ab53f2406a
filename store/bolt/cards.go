package store

import (
	"errors"
	"time"

	"github.com/verdictbot/verdictbot/card"
)

// CardRef names a card by the message it answers.
type CardRef struct {
	Channel  string `json:"channel"`
	SourceTS string `json:"source_ts"`
}

// Key is the card's key in the store.
func (r CardRef) Key() string { return r.Channel + "/" + r.SourceTS }

// CardRecord is a card and its state.
type CardRecord struct {
	Card card.Card `json:"card"`
	// Mode is the channel mode the card was made under.
	Mode string `json:"mode"`
	// Gen counts rescans of the message (edits); older analyses' results
	// are ignored.
	Gen int `json:"gen"`
	// PostStarted is set just before chat.postMessage and cleared once its
	// ts is saved: after a crash in between, the thread is searched for
	// the card rather than posting a second one.
	PostStarted bool `json:"post_started,omitempty"`
	// Deleted is set when the source message was deleted.
	Deleted bool      `json:"deleted,omitempty"`
	Updated time.Time `json:"updated"`
}

// Ref returns the record's CardRef.
func (r *CardRecord) Ref() CardRef {
	return CardRef{Channel: r.Card.Channel, SourceTS: r.Card.SourceTS}
}

// PutCard saves a card (and indexes it by its ts once posted).
func (db *DB) PutCard(rec *CardRecord) error {
	rec.Updated = db.now()
	return db.update(func(t txn) error { return putCard(t, rec) })
}

func putCard(t txn, rec *CardRecord) error {
	key := rec.Ref().Key()
	if err := t.put(bCards, key, encodeCard(rec)); err != nil {
		return err
	}
	if rec.Card.CardTS != "" {
		return t.put(bCardTS, rec.Card.Channel+"/"+rec.Card.CardTS, []byte(key))
	}
	return nil
}

// Card returns the card answering (channel, sourceTS), or ErrNotFound.
func (db *DB) Card(ref CardRef) (*CardRecord, error) {
	var rec *CardRecord
	err := db.be.view(func(t txn) error {
		var err error
		rec, err = getCard(t, ref.Key())
		return err
	})
	return rec, err
}

func getCard(t txn, key string) (*CardRecord, error) {
	v := t.get(bCards, key)
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeCard(v)
}

// CardByTS returns the card posted at (channel, cardTS), or ErrNotFound.
func (db *DB) CardByTS(channel, cardTS string) (*CardRecord, error) {
	var rec *CardRecord
	err := db.be.view(func(t txn) error {
		key := t.get(bCardTS, channel+"/"+cardTS)
		if key == nil {
			return ErrNotFound
		}
		var err error
		rec, err = getCard(t, string(key))
		return err
	})
	return rec, err
}

// UpdateCard applies fn to the stored card in one transaction and saves
// it; fn's error aborts without saving. It returns the saved record.
func (db *DB) UpdateCard(ref CardRef, fn func(rec *CardRecord) error) (*CardRecord, error) {
	return db.updateCard(db.update, ref, fn, nil)
}

// UpdateCardShared is UpdateCard for the writes every link makes (its
// verdict on the card): concurrent calls may share one transaction and its
// fsync, and each returns once its write is durable. fn may be called more
// than once, each time with the stored record read afresh: it must change
// nothing but rec.
func (db *DB) UpdateCardShared(ref CardRef, fn func(rec *CardRecord) error) (*CardRecord, error) {
	return db.updateCard(db.be.batch, ref, fn, nil)
}

// SettleCard is UpdateCard for the write that shows a verdict on a card:
// when target is recorded, ref joins its cards (AddCard) in the same
// transaction, so a recheck of target that finds the verdict finds the
// card too, and a link's verdict costs one commit instead of two. A
// target not recorded (an analysis that failed) is left out, without an
// error; target "" links nothing. On the embedded store concurrent calls
// may share one commit (as UpdateCardShared): fn may run more than once,
// each time with the stored record read afresh, and must change nothing
// but rec.
func (db *DB) SettleCard(ref CardRef, target string, fn func(rec *CardRecord) error) (*CardRecord, error) {
	var link func(t txn) error
	if target != "" {
		link = func(t txn) error {
			if err := addCard(t, target, ref); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
			return nil
		}
	}
	return db.updateCard(db.be.batch, ref, fn, link)
}

// updateCard applies fn to the card ref and saves it with write; also, if
// set, then runs in the same transaction.
func (db *DB) updateCard(write func(func(t txn) error) error, ref CardRef, fn func(rec *CardRecord) error, also func(t txn) error) (*CardRecord, error) {
	var out *CardRecord
	err := write(func(t txn) error {
		out = nil
		rec, err := getCard(t, ref.Key())
		if err != nil {
			return err
		}
		if err := fn(rec); err != nil {
			return err
		}
		rec.Updated = db.now()
		if err := putCard(t, rec); err != nil {
			return err
		}
		if also != nil {
			if err := also(t); err != nil {
				return err
			}
		}
		out = rec
		return nil
	})
	return out, err
}

// UnfinishedCards returns the cards still being analysed or whose post was
// interrupted.
func (db *DB) UnfinishedCards() ([]*CardRecord, error) {
	var out []*CardRecord
	var derr error
	err := db.be.view(func(t txn) error {
		t.scan(bCards, "", "", func(_ string, v []byte) bool {
			var rec *CardRecord
			if rec, derr = decodeCard(v); derr != nil {
				return false
			}
			if !rec.Card.Final || rec.PostStarted {
				out = append(out, rec)
			}
			return true
		})
		return derr
	})
	return out, err
}

// UpsertCard applies fn to the card answering ref, or to a new empty record
// when there is none (exists tells which), and saves it in one transaction.
func (db *DB) UpsertCard(ref CardRef, fn func(rec *CardRecord, exists bool) error) (*CardRecord, error) {
	return db.upsertCard(db.update, ref, fn)
}

// UpsertCardShared is UpsertCard for the writes every link makes (its
// card's start): concurrent calls may share one transaction and its fsync,
// and each returns once its write is durable. fn may be called more than
// once, each time with the stored record read afresh: it must change
// nothing but rec.
func (db *DB) UpsertCardShared(ref CardRef, fn func(rec *CardRecord, exists bool) error) (*CardRecord, error) {
	return db.upsertCard(db.be.batch, ref, fn)
}

func (db *DB) upsertCard(write func(func(t txn) error) error, ref CardRef, fn func(rec *CardRecord, exists bool) error) (*CardRecord, error) {
	var out *CardRecord
	err := write(func(t txn) error {
		out = nil
		rec, err := getCard(t, ref.Key())
		exists := err == nil
		if errors.Is(err, ErrNotFound) {
			rec, err = &CardRecord{}, nil
		}
		if err != nil {
			return err
		}
		if err := fn(rec, exists); err != nil {
			return err
		}
		rec.Updated = db.now()
		out = rec
		return putCard(t, rec)
	})
	return out, err
}
