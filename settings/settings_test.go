package settings

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/store"
)

// fakeStore is a hand-written Store: one map per setting; err, when set,
// is returned by every read.
type fakeStore struct {
	mode, files, quarantine map[string]string
	allow                   []store.AllowEntry
	err                     error
}

func (s *fakeStore) ChannelMode(ch string) (string, error)       { return s.mode[ch], s.err }
func (s *fakeStore) ChannelFiles(ch string) (string, error)      { return s.files[ch], s.err }
func (s *fakeStore) ChannelQuarantine(ch string) (string, error) { return s.quarantine[ch], s.err }
func (s *fakeStore) AllowList() ([]store.AllowEntry, error)      { return s.allow, s.err }

var _ Store = (*fakeStore)(nil)
var _ Store = store.State(nil)

func TestModeIsTheChannelsOwnElseTheDefault(t *testing.T) {
	t.Parallel()
	st := &fakeStore{mode: map[string]string{"C1": "verbose", "C2": "off"}}
	c := &Channels{Store: st, Defaults: Defaults{Mode: "quiet"}}
	for _, tc := range []struct {
		ch, want  string
		isDefault bool
	}{{"C1", "verbose", false}, {"C2", "off", false}, {"C3", "quiet", true}} {
		m, def, err := c.ModeOf(tc.ch)
		if m != tc.want || def != tc.isDefault || err != nil {
			t.Errorf("ModeOf(%s) = %q, %v, %v; want %q, %v, nil", tc.ch, m, def, err, tc.want, tc.isDefault)
		}
		if got := c.Mode(tc.ch); got != tc.want {
			t.Errorf("Mode(%s) = %q, want %q", tc.ch, got, tc.want)
		}
	}
	st.err = errors.New("disk gone")
	if m, def, err := c.ModeOf("C1"); m != "quiet" || !def || err == nil {
		t.Errorf("ModeOf on a failing store = %q, %v, %v; want the default and the error", m, def, err)
	}
	if got := c.Mode("C1"); got != "quiet" {
		t.Errorf("Mode on a failing store = %q, want the default", got)
	}
}

func TestFilesAreTheChannelsSwitchElseTheDefaultAndOffWhenUnreadable(t *testing.T) {
	t.Parallel()
	for _, def := range []bool{false, true} {
		st := &fakeStore{files: map[string]string{"C1": "on", "C2": "off", "C3": "bogus"}}
		var logs bytes.Buffer
		c := &Channels{Store: st, Defaults: Defaults{Files: def}, Log: slog.New(slog.NewTextHandler(&logs, nil))}
		for _, tc := range []struct {
			ch            string
			on, isDefault bool
		}{{"C1", true, false}, {"C2", false, false}, {"C3", def, true}, {"C4", def, true}} {
			on, isDef, err := c.FilesOf(tc.ch)
			if on != tc.on || isDef != tc.isDefault || err != nil {
				t.Errorf("default %v: FilesOf(%s) = %v, %v, %v; want %v, %v, nil", def, tc.ch, on, isDef, err, tc.on, tc.isDefault)
			}
			if got := c.Files(tc.ch); got != tc.on {
				t.Errorf("default %v: Files(%s) = %v, want %v", def, tc.ch, got, tc.on)
			}
		}
		st.err = errors.New("disk gone")
		if on, isDef, err := c.FilesOf("C1"); on != def || !isDef || err == nil {
			t.Errorf("default %v: FilesOf on a failing store = %v, %v, %v; want the default and the error", def, on, isDef, err)
		}
		if c.Files("C1") {
			t.Errorf("default %v: Files on a failing store = true; want false (nothing leaves by mistake)", def)
		}
		if !strings.Contains(logs.String(), "could not read the channel's file switch; its files are not scanned") {
			t.Errorf("default %v: the unreadable switch was not logged: %s", def, logs.String())
		}
	}
}

func TestQuarantineIsTheChannelsLevelElseTheDefaultElseOff(t *testing.T) {
	t.Parallel()
	st := &fakeStore{quarantine: map[string]string{"C1": "suspicious", "C2": "off"}}
	for _, tc := range []struct {
		def, ch, want string
		isDefault     bool
	}{
		{"malicious", "C1", "suspicious", false},
		{"malicious", "C2", "off", false},
		{"malicious", "C3", "malicious", true},
		{"", "C3", "off", true},
		{"off", "C3", "off", true},
	} {
		c := &Channels{Store: st, Defaults: Defaults{Quarantine: tc.def}}
		v, isDef, err := c.QuarantineOf(tc.ch)
		if v != tc.want || isDef != tc.isDefault || err != nil {
			t.Errorf("default %q: QuarantineOf(%s) = %q, %v, %v; want %q, %v, nil", tc.def, tc.ch, v, isDef, err, tc.want, tc.isDefault)
		}
		if got := c.Quarantine(tc.ch); got != tc.want {
			t.Errorf("default %q: Quarantine(%s) = %q, want %q", tc.def, tc.ch, got, tc.want)
		}
	}
	c := &Channels{Store: &fakeStore{quarantine: map[string]string{"C1": "suspicious"}, err: errors.New("disk gone")},
		Defaults: Defaults{Quarantine: "malicious"}}
	if v, isDef, err := c.QuarantineOf("C1"); v != "malicious" || !isDef || err == nil {
		t.Errorf("QuarantineOf on a failing store = %q, %v, %v; want the default and the error", v, isDef, err)
	}
}

func TestAllowlistMatchesSubdomainsAndKeepsTheLastListWhenUnreadable(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	c := &Channels{Store: st}
	if c.Allowed("example.com") {
		t.Fatal("allowed before any list was loaded")
	}
	st.allow = []store.AllowEntry{{Domain: "example.com", By: "U1"}}
	if c.Allowed("example.com") {
		t.Fatal("allowed before the list was loaded")
	}
	c.LoadAllowlist()
	for host, want := range map[string]bool{"example.com": true, "a.example.com": true, "badexample.com": false, "example.org": false} {
		if got := c.Allowed(host); got != want {
			t.Errorf("Allowed(%s) = %v, want %v", host, got, want)
		}
	}
	st.allow, st.err = nil, errors.New("disk gone")
	c.LoadAllowlist()
	if !c.Allowed("example.com") {
		t.Error("a failed reload dropped the list loaded before")
	}
	st.err = nil
	c.LoadAllowlist()
	if c.Allowed("example.com") {
		t.Error("a domain taken off the list is still allowed after a reload")
	}
}

// lockedStore is a fakeStore whose allowlist changes while it is read.
type lockedStore struct {
	fakeStore
	mu sync.Mutex
}

func (s *lockedStore) AllowList() ([]store.AllowEntry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.allow), nil
}

func (s *lockedStore) set(domains ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allow = nil
	for _, d := range domains {
		s.allow = append(s.allow, store.AllowEntry{Domain: d})
	}
}

// TestRefreshFollowsAnotherReplicasAllowlist: a replica that did not
// make the change follows the shared allowlist within the refresh period,
// both ways (a domain added, then removed), and tells OnAllowlist.
func TestRefreshFollowsAnotherReplicasAllowlist(t *testing.T) {
	t.Parallel()
	st := &lockedStore{}
	var mu sync.Mutex
	var seen [][]string
	c := &Channels{Store: st, OnAllowlist: func(d []string) { mu.Lock(); seen = append(seen, d); mu.Unlock() }}
	c.LoadAllowlist()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.RefreshAllowlist(ctx, 10*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	wait := func(want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for c.Allowed("docs.corp.example") != want {
			if time.Now().After(deadline) {
				t.Fatalf("Allowed = %v after 5 s, want %v", !want, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	st.set("corp.example") // another replica's /scan allow add
	wait(true)
	st.set() // and its remove
	wait(false)
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(seen, func(d []string) bool { return slices.Equal(d, []string{"corp.example"}) }) {
		t.Errorf("OnAllowlist never saw the domain: %v", seen)
	}
}

// failingStore is a lockedStore whose AllowList fails while failing is set.
type failingStore struct {
	lockedStore
	failing atomic.Bool
	reads   atomic.Int32
}

func (s *failingStore) AllowList() ([]store.AllowEntry, error) {
	s.reads.Add(1)
	if s.failing.Load() {
		return nil, errors.New("connection refused")
	}
	return s.lockedStore.AllowList()
}

// TestRefreshSaysOnceThatTheStoreIsDown: a database outage is logged once
// when the refresh starts failing and once when it reads again, not at
// every period, and the list last read stays in force meanwhile.
func TestRefreshSaysOnceThatTheStoreIsDown(t *testing.T) {
	t.Parallel()
	st := &failingStore{}
	st.set("corp.example")
	var logs bytes.Buffer
	var logMu sync.Mutex
	c := &Channels{Store: st, Log: slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, mu: &logMu}, nil))}
	c.LoadAllowlist()
	st.failing.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { c.RefreshAllowlist(ctx, 5*time.Millisecond); close(done) }()
	defer func() { cancel(); <-done }()
	waitReads := func(n int32) {
		t.Helper()
		start := st.reads.Load()
		for deadline := time.Now().Add(5 * time.Second); st.reads.Load() < start+n; time.Sleep(2 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d reads in 5 s", n)
			}
		}
	}
	waitReads(10)
	if !c.Allowed("docs.corp.example") {
		t.Fatal("the list last read was dropped while the store was down")
	}
	st.failing.Store(false)
	waitReads(3)
	logMu.Lock()
	out := logs.String()
	logMu.Unlock()
	if n := strings.Count(out, "could not read the runtime allowlist"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "can be read again"); n != 1 {
		t.Errorf("the recovery was logged %d times, want once:\n%s", n, out)
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
