package sandbox

// Integration tests against the simulator (package sim) over real HTTP:
// every operation, every error text, and Wait through FastProfile.

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image/jpeg"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/internal/apiclient"
	"github.com/verdictbot/verdictbot/internal/testutil"
	"github.com/verdictbot/verdictbot/sim"
	"github.com/verdictbot/verdictbot/sim/simtest"
)

const simKey = "sim-S3CRET key"

// startSim serves a simulator for cfg (with simKey accepted) and returns it
// with a client that has fast retries and no client-side budgets.
func startSim(t *testing.T, cfg sim.Config, opts ...Option) (*sim.Server, *Client) {
	srv, c, _ := startSimBase(t, cfg, opts...)
	return srv, c
}

func startSimBase(t *testing.T, cfg sim.Config, opts ...Option) (*sim.Server, *Client, string) {
	t.Helper()
	cfg.Keys = append(cfg.Keys, simKey)
	srv, base := simtest.Start(t, cfg)
	c, err := New(base, simKey, append([]Option{
		WithRetries(2, time.Millisecond, 5*time.Millisecond),
		WithRateLimits(Limit{}, Limit{}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return srv, c, base
}

// instant is a Wait sleep that does not sleep: FastProfile moves a task one
// status per poll, whatever the time.
func instant(ctx context.Context, _ time.Duration) error { return ctx.Err() }

func hexSum(h interface{ Sum([]byte) []byte }) string { return hex.EncodeToString(h.Sum(nil)) }

func TestSimEveryOperation(t *testing.T) {
	t.Parallel()
	srv, c := startSim(t, sim.Config{ShuffleShots: true})
	ctx := t.Context()
	sample := []byte("MZ\x90\x00 a test sample SIM:MALSCORE=7.5 SIM:FAMILY=Emotet SIM:SHOTS=4")

	sub, err := c.CreateFile(ctx, `C:\Temp\invoice.exe`, bytes.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(sub.TaskIDs) != 1 || sub.Message != "Task ID "+sub.TaskIDs[0]+" has been submitted" ||
		len(sub.URLs) != 1 || !strings.HasSuffix(sub.URLs[0], "/submit/status/"+sub.TaskIDs[0]+"/") {
		t.Fatalf("submission %+v", sub)
	}
	id := sub.TaskIDs[0]
	if n := srv.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 1 {
		t.Fatalf("%d create requests", n)
	}

	md, s1, s256 := md5.Sum(sample), sha1.Sum(sample), sha256.Sum256(sample)
	for _, h := range []string{hex.EncodeToString(md[:]), strings.ToUpper(hex.EncodeToString(s1[:])), hex.EncodeToString(s256[:])} {
		f, err := c.FileView(ctx, h)
		if err != nil {
			t.Fatalf("FileView(%s): %v", h, err)
		}
		if f.SHA256 != hex.EncodeToString(s256[:]) || f.MD5 != hex.EncodeToString(md[:]) || f.FileSize != int64(len(sample)) ||
			!strings.HasPrefix(f.FileType, "PE32") || len(f.CRC32) != 8 || f.SHA512 == "" || f.ID != id {
			t.Errorf("FileView(%s) = %+v", h, f)
		}
	}
	tasks, err := c.SearchTasks(ctx, hex.EncodeToString(s256[:]))
	if err != nil || len(tasks) != 1 || tasks[0].ID != id || tasks[0].Target != "invoice.exe" || !tasks[0].AddedOn.Set() {
		t.Fatalf("SearchTasks = %+v, %v", tasks, err)
	}
	info, err := c.TaskInfo(ctx, id)
	if err != nil || info.ID != id || !info.AddedOn.Set() || info.StartedOn.Set() || info.CompletedOn.Set() {
		t.Fatalf("TaskInfo before = %+v, %v", info, err)
	}
	if _, err := c.SimpleReport(ctx, id); !errors.Is(err, ErrStillAnalyzing) {
		t.Fatalf("SimpleReport before = %v", err)
	}
	if _, err := c.Screenshots(ctx, id, 0); !errors.Is(err, ErrStillAnalyzing) {
		t.Fatalf("Screenshots before = %v", err)
	}

	var seen []Status
	st, err := c.Wait(ctx, id, WaitOptions{Sleep: instant, OnStatus: func(s Status, changed bool) {
		if changed {
			seen = append(seen, s)
		}
	}})
	if err != nil || st != StatusReported {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	if want := []Status{"pending", "running", "completed", "reporting", "reported"}; !slices.Equal(seen, want) {
		t.Errorf("statuses %v, want %v", seen, want)
	}
	if st, err := c.Status(ctx, id); err != nil || st != StatusReported {
		t.Errorf("Status after = %q, %v", st, err)
	}
	info, err = c.TaskInfo(ctx, id)
	if err != nil || !info.StartedOn.Set() || !info.CompletedOn.Set() || info.Status != StatusReported {
		t.Errorf("TaskInfo after = %+v, %v", info, err)
	}

	rep, err := c.SimpleReport(ctx, id)
	if err != nil || rep.TaskID != id || rep.MalScore != 7.5 || rep.MalFamily != "Emotet" || rep.Level() != BandMalicious {
		t.Fatalf("SimpleReport = %+v, %v", rep, err)
	}

	images, err := c.Screenshots(ctx, id, 0)
	if err != nil || len(images) != 4 {
		t.Fatalf("Screenshots = %d, %v", len(images), err)
	}
	for i, im := range images {
		checkSimShot(t, im, i+1)
	}
	if capped, err := c.Screenshots(ctx, id, 2); err != nil || len(capped) != 2 || capped[1].Name != "0002.jpg" {
		t.Errorf("Screenshots(max 2) = %v, %v", names(capped), err)
	}
	one, err := c.Screenshot(ctx, id, 3)
	if err != nil {
		t.Fatal(err)
	}
	checkSimShot(t, *one, 3)
	if _, err := c.Screenshot(ctx, id, 5); !errors.Is(err, ErrScreenshotNotFound) {
		t.Errorf("Screenshot(5) = %v", err)
	}
	byNumber, err := c.ScreenshotsByNumber(ctx, id, 0)
	if err != nil || strings.Join(names(byNumber), ",") != "0001.jpg,0002.jpg,0003.jpg,0004.jpg" {
		t.Errorf("ScreenshotsByNumber = %v, %v", names(byNumber), err)
	}
}

// checkSimShot checks that im is the simulator's screenshot n: its name and
// its solid colour (sim.ShotColor).
func checkSimShot(t *testing.T, im Image, n int) {
	t.Helper()
	if im.Name != sim.ShotName(n) || im.ContentType != "image/jpeg" {
		t.Errorf("shot %d: %q %q", n, im.Name, im.ContentType)
		return
	}
	img, err := jpeg.Decode(bytes.NewReader(im.Data))
	if err != nil {
		t.Errorf("shot %d: %v", n, err)
		return
	}
	r, g, b, _ := img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2).RGBA()
	want := sim.ShotColor(n)
	near := func(got uint32, want uint8) bool { d := int(got>>8) - int(want); return d > -12 && d < 12 }
	if !near(r, want.R) || !near(g, want.G) || !near(b, want.B) {
		t.Errorf("shot %d has colour %d,%d,%d, want %v: out of order", n, r>>8, g>>8, b>>8, want)
	}
}

// TestSimErrorTexts triggers every error text the simulator sends and
// checks the sentinel, the message and that the key stays hidden.
func TestSimErrorTexts(t *testing.T) {
	t.Parallel()
	srv, c, base := startSimBase(t, sim.Config{MaxFileSize: 1000})
	ctx := t.Context()
	mk := func(content string) string {
		sub, err := c.CreateFile(ctx, "s.bin", strings.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		return sub.TaskIDs[0]
	}
	failed := mk("SIM:FAIL_PROCESSING")
	noShots := mk("SIM:SHOTS=0")
	pending := mk("still pending")
	_, werr := c.Wait(ctx, failed, WaitOptions{Sleep: instant})
	if _, err := c.Wait(ctx, noShots, WaitOptions{Sleep: instant}); err != nil {
		t.Fatal(err)
	}
	var tf *TaskFailedError
	if !errors.As(werr, &tf) || tf.Status != StatusFailedProcessing || !errors.Is(werr, ErrTaskFailed) {
		t.Fatalf("Wait(failed) = %v", werr)
	}

	emptyMultipart := func() (io.Reader, error) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.SetBoundary("xyz")
		mw.WriteField("other", "v")
		mw.Close()
		return &b, nil
	}
	cases := []struct {
		name string
		want error
		text string
		call func() error
	}{
		{"no file", ErrNoFile, "No file was submitted", func() error {
			return c.do(ctx, apiclient.Request{Op: OpCreateFile, Budget: BudgetRun, Method: http.MethodPost,
				Path: []string{"tasks", "create", "file"}, Body: emptyMultipart, ContentType: "multipart/form-data; boundary=xyz", Submission: true}, nil)
		}},
		{"empty file", ErrEmptyFile, "You submitted an empty file", func() error {
			_, err := c.CreateFile(ctx, "e.bin", io.MultiReader())
			return err
		}},
		{"too large", ErrFileTooLarge, "File size exceeds API limit", func() error {
			_, err := c.CreateFile(ctx, "big.bin", bytes.NewReader(make([]byte, 1001)))
			return err
		}},
		{"sample not found", ErrSampleNotFound, "Sample not found in database", func() error {
			_, err := c.FileView(ctx, strings.Repeat("ab", 32))
			return err
		}},
		{"task not found", ErrTaskNotFound, "Task not found in database", func() error {
			_, err := c.TaskInfo(ctx, "999999")
			return err
		}},
		{"task does not exist (status)", ErrTaskDoesNotExist, "Task does not exist", func() error {
			_, err := c.Status(ctx, "999999")
			return err
		}},
		{"task does not exist (report)", ErrTaskDoesNotExist, "Task does not exist", func() error {
			_, err := c.SimpleReport(ctx, "999999")
			return err
		}},
		{"task does not exist (screenshots)", ErrTaskDoesNotExist, "Task does not exist", func() error {
			_, err := c.Screenshots(ctx, "999999", 0)
			return err
		}},
		{"still analyzing", ErrStillAnalyzing, "Task is still being analyzed", func() error {
			_, err := c.SimpleReport(ctx, pending)
			return err
		}},
		{"task failed", ErrTaskFailed, "Task failed", func() error {
			_, err := c.SimpleReport(ctx, failed)
			return err
		}},
		{"no screenshots", ErrNoScreenshots, "No screenshots created for task " + noShots, func() error {
			_, err := c.Screenshot(ctx, noShots, 1)
			return err
		}},
		{"screenshot does not exist", ErrScreenshotNotFound, "Screenshot does not exist", func() error {
			_, err := c.Screenshot(ctx, mkReported(t, c, "three shots"), 9)
			return err
		}},
	}
	for _, tc := range cases {
		err := tc.call()
		var ae *APIError
		if !errors.Is(err, tc.want) || !errors.As(err, &ae) || ae.Message != tc.text || ae.StatusCode != 200 {
			t.Errorf("%s: err = %v, want %q (%v)", tc.name, err, tc.text, tc.want)
		}
		assertNoSecretSim(t, err)
	}
	if images, err := c.Screenshots(ctx, noShots, 0); err != nil || images == nil || len(images) != 0 {
		t.Errorf("Screenshots(no shots) = %v, %v", images, err)
	}
	if tasks, err := c.SearchTasks(ctx, strings.Repeat("cd", 20)); err != nil || tasks == nil || len(tasks) != 0 {
		t.Errorf("SearchTasks(unknown) = %v, %v", tasks, err)
	}
	// An id the service's routes refuse (CAPE: \d+) gets Django's HTML 404.
	_, err := c.Status(ctx, "not-a-number")
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 404 || ReasonOf(err) != ReasonClient {
		t.Errorf("Status(not-a-number) = %v", err)
	}
	assertNoSecretSim(t, err)

	// Unknown key: 403 with the simulator's invented text.
	bad, err := New(base, "wrong-S3CRET-key", WithRetries(-1, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.Status(ctx, failed)
	if !errors.Is(err, ErrInvalidKey) || ReasonOf(err) != ReasonAuth {
		t.Errorf("wrong key: %v", err)
	}
	if strings.Contains(err.Error(), "wrong-S3CRET-key") {
		t.Errorf("key leaked: %v", err)
	}
	// Each upload was sent once: 3 tasks above, 3 refused uploads, 1 more task.
	if n := srv.Count(sim.ServiceSandbox, sim.OpCreateFile); n != 7 {
		t.Errorf("%d create requests, want 7", n)
	}
}

// mkReported uploads content and waits until the task is reported.
func mkReported(t *testing.T, c *Client, content string) string {
	t.Helper()
	sub, err := c.CreateFile(t.Context(), "r.bin", strings.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(t.Context(), sub.TaskIDs[0], WaitOptions{Sleep: instant}); err != nil {
		t.Fatal(err)
	}
	return sub.TaskIDs[0]
}

func assertNoSecretSim(t *testing.T, err error) {
	t.Helper()
	assertNoSecret(t, err) // covers "S3CRET", part of simKey
}

func TestSimLegacyAndCAPEShapes(t *testing.T) {
	t.Parallel()
	_, c := startSim(t, sim.Config{CAPECompat: true, OmitReportError: true, Legacy2021: true, ArchiveZip: true, ShuffleShots: true})
	ctx := t.Context()
	sub, err := c.CreateFile(ctx, "a.pdf", strings.NewReader("%PDF-1.7 SIM:SHOTS=3"))
	if err != nil || len(sub.TaskIDs) != 1 || sub.TaskIDs[0] != "1000" || sub.Message != "Task ID 1000 has been submitted" {
		t.Fatalf("CAPE create: %+v, %v", sub, err)
	}
	id := sub.TaskIDs[0]
	sum := sha256.Sum256([]byte("%PDF-1.7 SIM:SHOTS=3"))
	if f, err := c.FileView(ctx, hex.EncodeToString(sum[:])); err != nil || f.ID != "1000" || !strings.HasPrefix(f.FileType, "PDF") {
		t.Fatalf("FileView = %+v, %v", f, err)
	}
	if _, err := c.Wait(ctx, id, WaitOptions{Sleep: instant}); err != nil {
		t.Fatal(err)
	}
	rep, err := c.SimpleReport(ctx, id)
	if err != nil || rep.TaskID != id || rep.MalScore >= 2 || rep.Level() != BandClean {
		t.Fatalf("SimpleReport = %+v, %v", rep, err)
	}
	images, err := c.Screenshots(ctx, id, 0)
	if err != nil || len(images) != 3 {
		t.Fatalf("zip Screenshots = %v, %v", names(images), err)
	}
	for i, im := range images {
		checkSimShot(t, im, i+1)
	}
	// Legacy2021: a failed task reads as still being analysed.
	failed, err := c.CreateFile(ctx, "f.bin", strings.NewReader("SIM:FAIL_ANALYSIS"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, failed.TaskIDs[0], WaitOptions{Sleep: instant}); !errors.Is(err, ErrTaskFailed) {
		t.Fatalf("Wait(failed) = %v", err)
	}
	if _, err := c.SimpleReport(ctx, failed.TaskIDs[0]); !errors.Is(err, ErrStillAnalyzing) {
		t.Fatalf("legacy failed report = %v", err)
	}
}

func TestSimScreenshotsDirMissingIsNone(t *testing.T) {
	t.Parallel()
	_, c := startSim(t, sim.Config{ShotsDirMissing: true})
	id := mkReported(t, c, "x")
	images, err := c.Screenshots(t.Context(), id, 0)
	if err != nil || images == nil || len(images) != 0 {
		t.Fatalf("Screenshots = %v, %v", images, err)
	}
}

// TestSimWaitChaosAndTransientFaults: the task goes back from running to
// pending, and every other request fails with a gateway page; Wait gets to
// "reported" anyway.
func TestSimWaitChaosAndTransientFaults(t *testing.T) {
	t.Parallel()
	srv, c := startSim(t, sim.Config{Chaos: true}, WithRetries(-1, 0, 0))
	sub, err := c.CreateFile(t.Context(), "c.bin", strings.NewReader("chaos SIM:HTTP500=2"))
	if err != nil {
		t.Fatal(err)
	}
	srv.SetFaults(sim.Faults{Service: sim.ServiceSandbox, ErrorEvery: 3, ErrorStatus: http.StatusBadGateway})
	var seen []Status
	st, err := c.Wait(t.Context(), sub.TaskIDs[0], WaitOptions{Sleep: instant, OnStatus: func(s Status, changed bool) {
		if changed {
			seen = append(seen, s)
		}
	}})
	if err != nil || st != StatusReported {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	if want := []Status{"pending", "running", "pending", "running", "completed", "reporting", "reported"}; !slices.Equal(seen, want) {
		t.Errorf("statuses %v, want %v", seen, want)
	}
}

// TestSimWaitStuckPendingOnClientClock: the simulator's clock never moves
// (the task stays pending) and its timestamps are 7 hours ahead; the stuck
// deadline is measured on the client's own clock.
func TestSimWaitStuckPendingOnClientClock(t *testing.T) {
	t.Parallel()
	serverClock := testutil.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	_, c := startSim(t, sim.Config{Profile: sim.RealisticProfile(), Now: serverClock.Now, Location: time.FixedZone("ICT", 7*3600)})
	sub, err := c.CreateFile(t.Context(), "p.bin", strings.NewReader("pending forever"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.TaskInfo(t.Context(), sub.TaskIDs[0])
	if err != nil || info.AddedOn != "2026-03-01 19:00:00" {
		t.Fatalf("TaskInfo = %+v, %v (timestamps must be kept as the server wrote them)", info, err)
	}
	clock := newFakeClock()
	start := clock.Now()
	st, err := c.Wait(t.Context(), sub.TaskIDs[0], WaitOptions{Sleep: clock.Sleep, Now: clock.Now, PendingDeadline: 10 * time.Minute})
	if st != StatusPending || !errors.Is(err, ErrStuckPending) {
		t.Fatalf("Wait = %q, %v", st, err)
	}
	if waited := clock.Now().Sub(start); waited < 10*time.Minute || waited > 12*time.Minute {
		t.Errorf("gave up after %s on the client clock", waited)
	}
}

func TestSimRateLimits(t *testing.T) {
	t.Parallel()
	t.Run("throttled once, then served", func(t *testing.T) {
		t.Parallel()
		srv, c := startSim(t, sim.Config{})
		srv.SetFaults(sim.Faults{Throttle: []sim.Throttle{{Service: sim.ServiceSandbox, Bucket: sim.BucketRun, Count: 1, RetryAfter: time.Second}}})
		start := time.Now()
		sub, err := c.CreateFile(t.Context(), "r.bin", bytes.NewReader([]byte("rate limited once")))
		if err != nil || len(sub.TaskIDs) != 1 {
			t.Fatalf("CreateFile = %+v, %v", sub, err)
		}
		if time.Since(start) < 900*time.Millisecond || srv.Count(sim.ServiceSandbox, sim.OpCreateFile) != 2 {
			t.Errorf("Retry-After not honoured: %s, %d requests", time.Since(start), srv.Count(sim.ServiceSandbox, sim.OpCreateFile))
		}
	})
	for name, style := range map[string]sim.ThrottleStyle{"json": sim.ThrottleJSON, "drf": sim.ThrottleDRF, "html": sim.ThrottleHTML} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, c := startSim(t, sim.Config{ThrottleStyle: style, SandboxLimits: sim.Limits{ReportRate: 0.001, ReportBurst: 1}}, WithRetries(-1, 0, 0))
			if _, err := c.Status(t.Context(), "1000"); !errors.Is(err, ErrTaskDoesNotExist) {
				t.Fatalf("first: %v", err)
			}
			_, err := c.Status(t.Context(), "1000")
			var rl *RateLimitError
			if !errors.As(err, &rl) || rl.StatusCode != 429 || rl.RetryAfter <= 0 || ReasonOf(err) != ReasonRateLimited {
				t.Fatalf("second: %v", err)
			}
			assertNoSecretSim(t, err)
		})
	}
	t.Run("quota", func(t *testing.T) {
		t.Parallel()
		_, c := startSim(t, sim.Config{SandboxLimits: sim.Limits{Quota: 1}})
		c.Status(t.Context(), "1000")
		_, err := c.Status(t.Context(), "1000")
		if ReasonOf(err) != ReasonQuota {
			t.Fatalf("quota: %v", err)
		}
	})
}

// TestSimLargeUploadStreams sends 20 MB from a generator through the
// simulator's real multipart parser and checks the recorded hash.
func TestSimLargeUploadStreams(t *testing.T) {
	t.Parallel()
	_, c := startSim(t, sim.Config{})
	const size = 20 << 20
	want := sha256.New()
	io.Copy(want, io.LimitReader(&generator{state: 11}, size))
	sub, err := c.CreateFile(t.Context(), "big.bin", io.LimitReader(&generator{state: 11}, size))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.FileView(t.Context(), hexSum(want))
	if err != nil || f.FileSize != size || f.ID != sub.TaskIDs[0] || f.FileType != "data" {
		t.Fatalf("FileView = %+v, %v", f, err)
	}
}

// TestSimBrokenScreenshotsCostFewRequests: with the simulator's shot
// storage corrupt (the archive cut short, every numbered shot not a JPEG),
// Screenshots sends a handful of requests and returns no image. Before the
// miss limit it walked every number to 9999: 10,001 requests, 33 minutes at
// the default 5 report requests a second.
func TestSimBrokenScreenshotsCostFewRequests(t *testing.T) {
	t.Parallel()
	for _, zipped := range []bool{false, true} {
		srv, c := startSim(t, sim.Config{ArchiveZip: zipped})
		id := mkReported(t, c, "SIM:SHOTS=5")
		srv.SetFaults(sim.Faults{ShotsCorrupt: true})
		srv.ResetRequests()
		images, err := c.Screenshots(t.Context(), id, 3)
		archive, numbered := srv.Count(sim.ServiceSandbox, sim.OpScreenshotArchive), srv.Count(sim.ServiceSandbox, sim.OpScreenshot)
		t.Logf("zip %v: %d images, err %v; %d archive + %d numbered requests", zipped, len(images), err, archive, numbered)
		if len(images) != 0 || !errors.Is(err, ErrScreenshotsUnusable) || archive != 1 || numbered > 4 {
			t.Fatalf("zip %v: %d images, %v after %d archive and %d numbered requests", zipped, len(images), err, archive, numbered)
		}
		// Repaired: the same task's shots are read again.
		srv.SetFaults(sim.Faults{})
		if images, err := c.Screenshots(t.Context(), id, 3); err != nil || len(images) != 3 {
			t.Fatalf("after repair: %d images, %v", len(images), err)
		}
	}
}
