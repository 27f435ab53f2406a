package quarantine

import (
	"strings"
	"testing"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/internal/slackfake"
	"github.com/verdictbot/verdictbot/verdict"
)

// postFiles posts alice's message in C0SEC sharing a malicious
// invoice.exe and a clean notes.pdf, and returns its ts, the files and a
// card book holding its final file card. line, if set, edits the
// malicious file's line before the card is made.
func postFiles(t *testing.T, fake *slackfake.Server, q *Quarantine, line func(l *card.Line, bad, good slackfake.File)) (string, slackfake.File, slackfake.File, *oneCard) {
	t.Helper()
	bad := fake.AddFile(slackfake.File{Name: "invoice.exe", User: "U0ALICE", Content: []byte("MZ bad")})
	good := fake.AddFile(slackfake.File{Name: "notes.pdf", User: "U0ALICE", Content: []byte("%PDF-1.4 notes")})
	d, err := fake.DeliverMessage(slackfake.MessageEvent{Channel: "C0SEC", User: "U0ALICE", Text: "two files", SubType: "file_share",
		Files: []string{bad.ID, good.ID}})
	if err != nil {
		t.Fatal(err)
	}
	c := card.Card{Channel: "C0SEC", ThreadTS: d.TS, SourceTS: d.TS + "/files", CardTS: "1795000000.000901", Final: true,
		Lines: []card.Line{
			{Kind: card.KindFile, Target: "invoice.exe", Level: verdict.Malicious, TaskID: "7", File: &card.FileInfo{ID: bad.ID, Name: "invoice.exe"}},
			{Kind: card.KindFile, Target: "notes.pdf", Level: verdict.Clean, TaskID: "8", File: &card.FileInfo{ID: good.ID, Name: "notes.pdf"}},
		}}
	if line != nil {
		line(&c.Lines[0], bad, good)
	}
	book := &oneCard{c: c}
	q.Cards = book
	return d.TS, bad, good, book
}

func fileDeleted(t *testing.T, fake *slackfake.Server, id string) bool {
	t.Helper()
	deleted := false
	fake.Inspect(func(st *slackfake.State) {
		if f, ok := st.File(id); ok {
			deleted = f.Deleted
		}
	})
	return deleted
}

// TestFileQuarantineRemovesTheMessageNotTheFile: by default a malicious
// file removes the message that shared it (chat.delete, admin token) and
// deletes no file; the card says so and names the file; a release re-posts
// the text and says which files are not posted again.
func TestFileQuarantineRemovesTheMessageNotTheFile(t *testing.T) {
	q, fake, db, _ := quarantineAgainstFake(t)
	q.IsAdmin = func(u string) bool { return u == "U0ADMIN" }
	ts, bad, good, book := postFiles(t, fake, q, nil)
	q.Act(t.Context(), book.get())
	if m, _ := fake.Message("C0SEC", ts); !m.Deleted {
		t.Fatal("the message that shared the malicious file was not removed")
	}
	if n := len(fake.Calls("files.delete")); n != 0 || fileDeleted(t, fake, bad.ID) || fileDeleted(t, fake, good.ID) {
		t.Fatalf("%d files.delete calls; a file was deleted workspace-wide", n)
	}
	st := book.get().Quarantine
	if st == nil || st.State != card.QuarantineRemoved || st.Files || len(st.Names) != 1 || st.Names[0] != "invoice.exe" {
		t.Fatalf("card: %+v", st)
	}
	rec, err := db.Quarantined("C0SEC", ts)
	if err != nil || rec.FilesDeleted() || len(rec.Files) != 2 || !rec.Files[0].Found || rec.Files[1].Found {
		t.Fatalf("record: %+v %v", rec, err)
	}
	answer := q.Release(t.Context(), "C0SEC", ts+"/files", "U0ADMIN")
	if !strings.Contains(answer, "its files were not") {
		t.Fatalf("release: %q", answer)
	}
	var repost *slackfake.Message
	for _, m := range fake.Messages("C0SEC", "") {
		if m.Bot && strings.Contains(m.Text, "Released from quarantine") {
			repost = &m
		}
	}
	if repost == nil || !strings.Contains(repost.Text, "two files") || !strings.Contains(repost.Text, "Not posted again: the files `invoice.exe`, `notes.pdf`") {
		t.Fatalf("re-post: %+v", repost)
	}
	if st := book.get().Quarantine; st.State != card.QuarantineReleased {
		t.Fatalf("card after the release: %+v", st)
	}
}

// TestFileQuarantineDeleteModeDeletesOnlyTheBadFile: with
// VERDICTBOT_QUARANTINE_FILES=delete only the file found malicious is
// deleted (files.delete, admin token); the clean one and the message stay;
// the card says which file was deleted, and there is no release.
func TestFileQuarantineDeleteModeDeletesOnlyTheBadFile(t *testing.T) {
	q, fake, db, _ := quarantineAgainstFake(t)
	q.FilesMode = FilesDelete
	q.IsAdmin = func(u string) bool { return u == "U0ADMIN" }
	ts, bad, good, book := postFiles(t, fake, q, nil)
	q.Act(t.Context(), book.get())
	calls := fake.Calls("files.delete")
	if len(calls) != 1 || calls[0].Params.Get("file") != bad.ID || calls[0].Token != testAdminToken {
		t.Fatalf("files.delete calls: %+v", calls)
	}
	if !fileDeleted(t, fake, bad.ID) || fileDeleted(t, fake, good.ID) {
		t.Fatal("not exactly the malicious file was deleted")
	}
	if m, _ := fake.Message("C0SEC", ts); m.Deleted || len(fake.Calls("chat.delete")) != 0 {
		t.Fatal("the message was removed; only its malicious file should be")
	}
	st := book.get().Quarantine
	if st == nil || st.State != card.QuarantineRemoved || !st.Files || len(st.Names) != 1 || st.Names[0] != "invoice.exe" {
		t.Fatalf("card: %+v", st)
	}
	if rec, err := db.Quarantined("C0SEC", ts); err != nil || !rec.FilesDeleted() || len(rec.Files) != 1 || rec.Files[0].ID != bad.ID {
		t.Fatalf("record: %+v %v", rec, err)
	}
	if answer := q.Release(t.Context(), "C0SEC", ts+"/files", "U0ADMIN"); !strings.Contains(answer, "cannot be released") {
		t.Fatalf("release of a deleted file: %q", answer)
	}
	// The job running again (a restart) finds the file gone (a tombstone
	// in the message) and shows the tombstone, not a failure.
	var failures []string
	q.OnFailure = func(r string) { failures = append(failures, r) }
	book.mu.Lock()
	book.c.Quarantine = nil
	book.mu.Unlock()
	q.Act(t.Context(), book.get())
	if st := book.get().Quarantine; st == nil || st.State != card.QuarantineRemoved || !st.Files || len(failures) != 0 || len(fake.Calls("files.delete")) != 1 {
		t.Fatalf("after the job ran again: %+v, failures %v, %d files.delete", st, failures, len(fake.Calls("files.delete")))
	}
}

// TestFileQuarantineNeverFallsBackToAllFiles: when the card's malicious
// line names no file of the message (another file's id; a name two of its
// files share; a name none has), nothing is removed or deleted, in either
// mode, and the card says why.
func TestFileQuarantineNeverFallsBackToAllFiles(t *testing.T) {
	cases := []struct {
		name string
		line func(l *card.Line, bad, good slackfake.File)
	}{
		{"an id not in the message", func(l *card.Line, _, _ slackfake.File) { l.File.ID = "F0ELSEWHERE" }},
		{"a name, no id, none has", func(l *card.Line, _, _ slackfake.File) {
			l.File.ID, l.File.Name, l.Target = "", "other.exe", "other.exe"
		}},
		{"the clean file's name, another id", func(l *card.Line, _, good slackfake.File) { l.File.ID, l.File.Name = "F0ELSEWHERE", good.Name }},
	}
	for _, mode := range []string{FilesMessage, FilesDelete} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				q, fake, _, _ := quarantineAgainstFake(t)
				q.FilesMode = mode
				var failures []string
				q.OnFailure = func(r string) { failures = append(failures, r) }
				ts, bad, good, book := postFiles(t, fake, q, tc.line)
				q.Act(t.Context(), book.get())
				if n, m := len(fake.Calls("files.delete")), len(fake.Calls("chat.delete")); n != 0 || m != 0 {
					t.Fatalf("%d files.delete and %d chat.delete calls", n, m)
				}
				if fileDeleted(t, fake, bad.ID) || fileDeleted(t, fake, good.ID) {
					t.Fatal("a file was deleted")
				}
				if msg, _ := fake.Message("C0SEC", ts); msg.Deleted {
					t.Fatal("the message was removed")
				}
				st := book.get().Quarantine
				if st == nil || st.State != card.QuarantineFailed || !strings.Contains(st.Problem, "no longer in this message") || len(failures) != 1 {
					t.Fatalf("card %+v, failures %v", st, failures)
				}
			})
		}
	}
}

// TestFileQuarantineLegacyLineMatchesAUniqueName: a line stored before
// file ids were kept matches by name, only when one file of the message
// has that name.
func TestFileQuarantineLegacyLineMatchesAUniqueName(t *testing.T) {
	q, fake, _, _ := quarantineAgainstFake(t)
	q.FilesMode = FilesDelete
	_, bad, good, book := postFiles(t, fake, q, func(l *card.Line, _, _ slackfake.File) { l.File.ID = "" })
	q.Act(t.Context(), book.get())
	if !fileDeleted(t, fake, bad.ID) || fileDeleted(t, fake, good.ID) {
		t.Fatal("the legacy line did not delete exactly its file")
	}
}
