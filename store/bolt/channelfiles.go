package bolt

import "github.com/verdictbot/verdictbot/store"

// bChannelFiles holds each channel's file-scanning switch ("/scan channel
// files on|off"), apart from its mode: channel → "on" or "off".
const bChannelFiles = "channel_files"

func init() { buckets = append(buckets, bChannelFiles) }

// ChannelFiles returns a channel's file-scanning switch: "on", "off", or ""
// when the channel has none (VERDICTBOT_SCAN_FILES applies).
func (db *DB) ChannelFiles(channel string) (string, error) {
	var v string
	err := db.be.view(func(t txn) error {
		v = string(t.get(bChannelFiles, channel))
		return nil
	})
	return v, err
}

// SetChannelFiles sets a channel's file-scanning switch ("on" or "off");
// "" removes it.
func (db *DB) SetChannelFiles(channel, v string, out ...*store.Outgoing) error {
	return db.update(func(t txn) error {
		if err := setOrDel(t, bChannelFiles, channel, v); err != nil {
			return err
		}
		return enqueueAll(t, out)
	})
}
