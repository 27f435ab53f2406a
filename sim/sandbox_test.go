package sim_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/bzip2"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image/jpeg"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/verdictbot/verdictbot/sim"
)

const eicar = `X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*`

func sbErr(text string) string { return `{"error":true,"error_value":"` + text + `"}` }

func TestSandboxCreateFile(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	r := h.upload(file{"file", `C:\Users\x\invoice.exe`, []byte("MZ payload")})
	host := strings.TrimPrefix(h.base, "http://")
	wantBody(t, "create", r, 200, `{"error":false,"data":"Task ID 1000 has been submitted","task_ids":["1000"],"url":["http://`+host+`/submit/status/1000/"]}`)

	r = h.upload(file{"file", "a.bin", []byte("one")}, file{"comment", "", []byte("hi")}, file{"file", "b.bin", []byte("two")})
	wantBody(t, "create two", r, 200, `{"error":false,"data":"Task IDs 1001, 1002 have been submitted","task_ids":["1001","1002"],"url":["http://`+host+`/submit/status/1001/","http://`+host+`/submit/status/1002/"]}`)

	// Same bytes again: a new task, the same sample.
	if id := h.submit("MZ payload"); id != "1003" {
		t.Errorf("resubmit id = %s", id)
	}
	sum := sha256.Sum256([]byte("MZ payload"))
	if got := h.srv.SandboxTasksFor(strings.ToUpper(hex.EncodeToString(sum[:]))); !slices.Equal(got, []string{"1000", "1003"}) {
		t.Errorf("SandboxTasksFor = %v", got)
	}
	if task, ok := h.srv.SandboxTask("1000"); !ok || task.Target != "invoice.exe" {
		t.Errorf("SandboxTask(1000) = %+v, %v; want target invoice.exe", task, ok)
	}
}

func TestSandboxCreateFileCAPECompat(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{CAPECompat: true, BaseURL: "http://example.tld/", FirstTaskID: 1042})
	r := h.upload(file{"file", "a.exe", []byte("x")})
	wantBody(t, "create", r, 200, `{"error":false,"data":{"task_ids":[1042],"message":"Task ID 1042 has been submitted"},"errors":[],"url":["http://example.tld/submit/status/1042/"]}`)
	wantBody(t, "status", h.get(neo("tasks/status/1042/")), 200, `{"error":false,"data":"pending"}`)
	r = h.get(neo("tasks/view/1042/"))
	if !strings.HasPrefix(r.String(), `{"error":false,"data":{"id":1042,`) {
		t.Errorf("view id is not an integer: %s", r)
	}
}

func TestSandboxCreateFileErrors(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{MaxFileSize: 1000})
	post := func(ct string, body io.Reader) reply { return h.do("POST", neo("tasks/create/file/"), ct, body) }
	wantBody(t, "no body", post("", nil), 200, sbErr("No file was submitted"))
	wantBody(t, "json body", post("application/json", strings.NewReader(`{"file":"x"}`)), 200, sbErr("No file was submitted"))
	wantBody(t, "other field", h.upload(file{"sample", "a.exe", []byte("x")}), 200, sbErr("No file was submitted"))
	wantBody(t, "file without filename", h.upload(file{"file", "", []byte("x")}), 200, sbErr("No file was submitted"))
	wantBody(t, "empty", h.upload(file{"file", "a.exe", nil}), 200, sbErr("You submitted an empty file"))
	wantBody(t, "too big", h.upload(file{"file", "a.exe", bytes.Repeat([]byte("a"), 1001)}), 200, sbErr("File size exceeds API limit"))
	wantBody(t, "second too big", h.upload(file{"file", "a.exe", []byte("ok")}, file{"file", "b.exe", make([]byte, 5000)}), 200, sbErr("File size exceeds API limit"))
	if r := h.upload(file{"file", "a.exe", bytes.Repeat([]byte("a"), 1000)}); !strings.Contains(r.String(), `"task_ids":["1000"]`) {
		t.Errorf("file of exactly the limit: %s (no task may be made by a failed request)", r)
	}
	wantBody(t, "GET", h.get(neo("tasks/create/file/")), 405, `{"detail":"Method \"GET\" not allowed."}`)
	if allow := h.get(neo("tasks/create/file/")).header.Get("Allow"); allow != "POST" {
		t.Errorf("Allow = %q", allow)
	}
}

func TestSandboxFileView(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	content := []byte("MZ\x90\x00 a windows program")
	h.submit(string(content))
	h.submit(string(content)) // dedup: the record keeps the first task id
	md := md5.Sum(content)
	s1 := sha1.Sum(content)
	s256 := sha256.Sum256(content)
	s512 := sha512.Sum512(content)
	want := fmt.Sprintf(`{"error":false,"data":{"id":"1000","md5":"%x","sha1":"%x","sha256":"%x","sha512":"%x","crc32":"%08X","ssdeep":null,"file_type":"PE32 executable (GUI) Intel 80386, for MS Windows","file_size":%d}}`,
		md, s1, s256, s512, crc32.ChecksumIEEE(content), len(content))
	for _, p := range []string{
		"files/view/md5/" + hex.EncodeToString(md[:]) + "/",
		"files/view/sha1/" + strings.ToUpper(hex.EncodeToString(s1[:])) + "/",
		"files/view/sha256/" + hex.EncodeToString(s256[:]),
	} {
		wantBody(t, p, h.get(neo(p)), 200, want)
	}
	wantBody(t, "unknown", h.get(neo("files/view/md5/"+strings.Repeat("0", 32)+"/")), 200, sbErr("Sample not found in database"))

	for content, typ := range map[string]string{"%PDF-1.4 x": "PDF document, version 1.7", "hello": "data", "M": "data"} {
		h.submit(content)
		sum := sha256.Sum256([]byte(content))
		if r := h.get(neo("files/view/sha256/" + hex.EncodeToString(sum[:]) + "/")); !strings.Contains(r.String(), `"file_type":"`+typ+`"`) {
			t.Errorf("%q: %s, want file_type %q", content, r, typ)
		}
	}
}

func TestSandboxTaskSearchAndView(t *testing.T) {
	t.Parallel()
	ict := time.FixedZone("ICT", 7*3600)
	h := setup(t, sim.Config{Location: ict})
	wantBody(t, "unknown hash", h.get(neo("tasks/search/sha256/"+strings.Repeat("a", 64)+"/")), 200, `{"data":[],"error":false}`)

	a := h.submit("sample A")
	h.clock.Advance(time.Minute)
	b := h.submit("sample A")
	h.submit("sample B")
	h.sbStatus(a) // pending, seen
	h.clock.Advance(time.Second)
	h.sbStatus(a) // running from t0+61s
	sum := md5.Sum([]byte("sample A"))
	wantBody(t, "search", h.get(neo("tasks/search/md5/"+hex.EncodeToString(sum[:])+"/")), 200,
		`{"data":[`+
			`{"id":"`+b+`","target":"sample.exe","added_on":"2026-03-14 16:27:53","started_on":null,"completed_on":null,"status":"pending","category":"file"},`+
			`{"id":"`+a+`","target":"sample.exe","added_on":"2026-03-14 16:26:53","started_on":"2026-03-14 16:27:54","completed_on":null,"status":"running","category":"file"}`+
			`],"error":false}`)

	h.sbStatus(a) // completed
	wantBody(t, "view", h.get(neo("tasks/view/"+a+"/")), 200,
		`{"error":false,"data":{"id":"`+a+`","added_on":"2026-03-14 16:26:53","started_on":"2026-03-14 16:27:54","completed_on":"2026-03-14 16:27:54","status":"completed","target":"sample.exe","category":"file","errors":[]}}`)
	wantBody(t, "view unknown", h.get(neo("tasks/view/999/")), 200, sbErr("Task not found in database"))
	wantBody(t, "view huge id", h.get(neo("tasks/view/99999999999999999999999/")), 200, sbErr("Task not found in database"))
	wantBody(t, "status unknown", h.get(neo("tasks/status/999/")), 200, sbErr("Task does not exist"))
}

func TestSandboxFastProgression(t *testing.T) {
	t.Parallel()
	tests := []struct {
		content string
		chaos   bool
		want    []string
	}{
		{"plain", false, []string{"pending", "running", "completed", "reporting", "reported", "reported"}},
		{"x SIM:FAIL_ANALYSIS x", false, []string{"pending", "running", "failed_analysis", "failed_analysis"}},
		{"SIM:FAIL_PROCESSING", false, []string{"pending", "running", "completed", "failed_processing", "failed_processing"}},
		{"SIM:FAIL_REPORTING\n", false, []string{"pending", "running", "completed", "reporting", "failed_reporting", "failed_reporting"}},
		{"plain", true, []string{"pending", "running", "pending", "running", "completed", "reporting", "reported"}},
	}
	for _, tc := range tests {
		h := setup(t, sim.Config{Chaos: tc.chaos})
		id := h.submit(tc.content)
		var got []string
		for range tc.want {
			got = append(got, h.sbStatus(id))
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q chaos=%v: %v, want %v", tc.content, tc.chaos, got, tc.want)
		}
	}
}

func TestSandboxRealisticProgression(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{Profile: sim.RealisticProfile()})
	id := h.submit("plain")
	fast := h.submit("SIM:DURATION=90s")
	for _, s := range []struct {
		at   time.Duration
		want string
	}{
		{0, "pending"}, {9 * time.Second, "pending"}, {10 * time.Second, "running"},
		{209 * time.Second, "running"}, {210 * time.Second, "completed"},
		{211 * time.Second, "reporting"}, {270 * time.Second, "reporting"}, {271 * time.Second, "reported"},
	} {
		h.clock.Set(t0.Add(s.at))
		if got := h.sbStatus(id); got != s.want {
			t.Errorf("at %v: %s, want %s", s.at, got, s.want)
		}
	}
	h.clock.Set(t0.Add(89 * time.Second))
	if got := h.sbStatus(fast); got != "reporting" {
		t.Errorf("SIM:DURATION=90s at 89s: %s", got)
	}
	h.clock.Set(t0.Add(90 * time.Second))
	if got := h.sbStatus(fast); got != "reported" {
		t.Errorf("SIM:DURATION=90s at 90s: %s", got)
	}
	// Timestamps come from the plan, not from when they were polled.
	h.clock.Set(t0.Add(time.Hour))
	want := `"added_on":"2026-03-14 09:26:53","started_on":"2026-03-14 09:27:03","completed_on":"2026-03-14 09:30:23"`
	if r := h.get(neo("tasks/view/" + id + "/")); !strings.Contains(r.String(), want) {
		t.Errorf("view: %s\nwant %s", r, want)
	}
}

func TestSandboxSimpleReport(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	rep := func(id string) reply { return h.get(neo("tasks/get/simple_report/" + id + "/")) }

	id := h.submit("prefix " + eicar + " SIM:MALSCORE=3.0")
	wantBody(t, "pending", rep(id), 200, sbErr("Task is still being analyzed"))
	h.finishSandbox(id)
	wantBody(t, "eicar", rep(id), 200, `{"task_id":"`+id+`","malfamily":"EICAR","malscore":10.0,"error":false}`)

	for content, want := range map[string]string{
		"SIM:MALSCORE=6.1 SIM:FAMILY=AgentTesla": `"malfamily":"AgentTesla","malscore":6.1`,
		"SIM:MALSCORE=2.0":                       `"malfamily":"","malscore":2.0`,
		"SIM:MALSCORE=2.14":                      `"malfamily":"","malscore":2.1`,
		"SIM:MALSCORE=42":                        `"malfamily":"","malscore":10.0`,
		"SIM:FAMILY=Emotet":                      `"malfamily":"Emotet","malscore":`,
	} {
		id := h.submit(content)
		h.finishSandbox(id)
		if r := rep(id); !strings.Contains(r.String(), want) {
			t.Errorf("%q: %s, want %s", content, r, want)
		}
	}
	// No marker: the first byte of the SHA-256 gives a clean score.
	for _, content := range []string{"a", "b", "c", "benign text"} {
		id := h.submit(content)
		h.finishSandbox(id)
		sum := sha256.Sum256([]byte(content))
		want := fmt.Sprintf(`{"task_id":"%s","malfamily":"","malscore":%.1f,"error":false}`, id, float64(int(sum[0])*20/256)/10)
		if r := rep(id); r.String() != want {
			t.Errorf("%q: %s, want %s", content, r, want)
		}
	}
	failed := h.submit("SIM:FAIL_PROCESSING")
	h.finishSandbox(failed)
	wantBody(t, "failed", rep(failed), 200, sbErr("Task failed"))
	wantBody(t, "unknown", rep("5"), 200, sbErr("Task does not exist"))

	t.Run("legacy and omit error", func(t *testing.T) {
		h := setup(t, sim.Config{Legacy2021: true, OmitReportError: true, CAPECompat: true})
		failed := h.submit("SIM:FAIL_ANALYSIS")
		h.finishSandbox(failed)
		wantBody(t, "failed 2021", h.get(neo("tasks/get/simple_report/"+failed+"/")), 200, sbErr("Task is still being analyzed"))
		ok := h.submit("SIM:MALSCORE=0")
		h.finishSandbox(ok)
		wantBody(t, "omit error", h.get(neo("tasks/get/simple_report/"+ok+"/")), 200, `{"task_id":1001,"malfamily":"","malscore":0.0}`)
	})
}

func TestSandboxScreenshots(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	id := h.submit("SIM:SHOTS=5")
	shot := func(n string) reply { return h.get(neo("tasks/get/screenshot/" + id + "/" + n + "/")) }
	wantBody(t, "not reported", shot("1"), 200, sbErr("Task is still being analyzed"))
	wantBody(t, "archive not reported", h.get(neo("tasks/get/screenshot/"+id+"/")), 200, sbErr("Task is still being analyzed"))
	h.finishSandbox(id)

	for _, n := range []string{"1", "01", "0003", "5"} {
		r := shot(n)
		num, _ := strconv.Atoi(n)
		name := fmt.Sprintf("%04d.jpg", num)
		if r.code != 200 || r.header.Get("Content-Type") != "image/jpeg" ||
			r.header.Get("Content-Disposition") != "attachment; filename="+name ||
			r.header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
			t.Fatalf("shot %s: %d %v", n, r.code, r.header)
		}
		checkShot(t, name, r.body, num)
	}
	if !bytes.Equal(shot("1").body, shot("0001").body) {
		t.Error("/1/ and /0001/ differ")
	}
	wantBody(t, "shot 0", shot("0"), 200, sbErr("Screenshot does not exist"))
	wantBody(t, "shot 6", shot("6"), 200, sbErr("Screenshot does not exist"))
	wantBody(t, "unknown task", h.get(neo("tasks/get/screenshot/7/1/")), 200, sbErr("Task does not exist"))
	wantBody(t, "unknown task archive", h.get(neo("tasks/get/screenshot/7/")), 200, sbErr("Task does not exist"))

	r := h.get(neo("tasks/get/screenshot/" + id + "/"))
	if r.code != 200 || r.header.Get("Content-Type") != "application/octet-stream;" ||
		r.header.Get("Content-Disposition") != "attachment; filename="+id+"_screenshots.tar.bz2" ||
		r.header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
		t.Fatalf("archive: %d %v", r.code, r.header)
	}
	names := readTarBz2(t, r.body)
	if want := []string{"0001.jpg", "0002.jpg", "0003.jpg", "0004.jpg", "0005.jpg"}; !slices.Equal(names, want) {
		t.Errorf("archive members %v, want %v", names, want)
	}

	none := h.submit("SIM:SHOTS=0")
	h.finishSandbox(none)
	want := sbErr("No screenshots created for task " + none)
	wantBody(t, "zero shots archive", h.get(neo("tasks/get/screenshot/"+none+"/")), 200, want)
	wantBody(t, "zero shots single", h.get(neo("tasks/get/screenshot/"+none+"/1/")), 200, want)

	def := h.submit("no marker")
	h.finishSandbox(def)
	if got := readTarBz2(t, h.get(neo("tasks/get/screenshot/"+def+"/")).body); len(got) != 3 {
		t.Errorf("default shots: %v", got)
	}
	failed := h.submit("SIM:FAIL_REPORTING")
	h.finishSandbox(failed)
	wantBody(t, "failed", h.get(neo("tasks/get/screenshot/"+failed+"/")), 200, sbErr("Task failed"))
}

// checkShot decodes a screenshot and checks its size and colour.
func checkShot(t *testing.T, name string, b []byte, n int) {
	t.Helper()
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if img.Bounds().Dx() != sim.ShotWidth || img.Bounds().Dy() != sim.ShotHeight {
		t.Errorf("%s: size %v", name, img.Bounds())
	}
	want := sim.ShotColor(n)
	r, g, bl, _ := img.At(10, 10).RGBA()
	diff := func(a uint32, b uint8) int { return max(int(a>>8)-int(b), int(b)-int(a>>8)) }
	if diff(r, want.R) > 8 || diff(g, want.G) > 8 || diff(bl, want.B) > 8 {
		t.Errorf("%s: colour %d,%d,%d, want about %v", name, r>>8, g>>8, bl>>8, want)
	}
}

// readTarBz2 lists a tar.bz2 archive with the standard library's reader and
// checks every member is the JPEG its name says.
func readTarBz2(t *testing.T, b []byte) []string {
	t.Helper()
	tr := tar.NewReader(bzip2.NewReader(bytes.NewReader(b)))
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatalf("tar: %v", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("tar member %s: %v", hdr.Name, err)
		}
		var n int
		fmt.Sscanf(hdr.Name, "%04d.jpg", &n)
		checkShot(t, hdr.Name, body, n)
		names = append(names, hdr.Name)
	}
}

func TestSandboxScreenshotSwitches(t *testing.T) {
	t.Parallel()
	t.Run("shuffle", func(t *testing.T) {
		h := setup(t, sim.Config{ShuffleShots: true, Shots: 6})
		id := h.submit("x")
		h.finishSandbox(id)
		a := readTarBz2(t, h.get(neo("tasks/get/screenshot/"+id+"/")).body)
		b := readTarBz2(t, h.get(neo("tasks/get/screenshot/"+id+"/")).body)
		if len(a) != 6 || slices.IsSorted(a) || !slices.Equal(a, b) {
			t.Errorf("shuffled members %v then %v: want 6, unsorted, stable", a, b)
		}
	})
	t.Run("zip", func(t *testing.T) {
		h := setup(t, sim.Config{ArchiveZip: true})
		id := h.submit("x")
		h.finishSandbox(id)
		r := h.get(neo("tasks/get/screenshot/" + id + "/"))
		if r.header.Get("Content-Type") != "application/zip" || r.header.Get("Content-Disposition") != "attachment; filename="+id+"_screenshots.zip" {
			t.Fatalf("zip headers %v", r.header)
		}
		zr, err := zip.NewReader(bytes.NewReader(r.body), int64(len(r.body)))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for i, f := range zr.File {
			names = append(names, f.Name)
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			rc.Close()
			checkShot(t, f.Name, b, i+1)
		}
		if want := []string{"shots/0001.jpg", "shots/0002.jpg", "shots/0003.jpg"}; !slices.Equal(names, want) {
			t.Errorf("zip members %v", names)
		}
	})
	t.Run("shots dir missing", func(t *testing.T) {
		h := setup(t, sim.Config{ShotsDirMissing: true})
		id := h.submit("x")
		wantBody(t, "not reported", h.get(neo("tasks/get/screenshot/"+id+"/")), 200, sbErr("Task is still being analyzed"))
		h.finishSandbox(id)
		for _, p := range []string{"tasks/get/screenshot/" + id + "/", "tasks/get/screenshot/" + id + "/1/"} {
			r := h.get(neo(p))
			if r.code != 500 || !strings.Contains(r.String(), "Server Error (500)") {
				t.Errorf("%s: %d %s", p, r.code, r)
			}
		}
	})
}

func TestSandboxHTTP500Marker(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	id := h.submit("SIM:HTTP500=2")
	for i := range 2 {
		if r := h.get(neo("tasks/status/" + id + "/")); r.code != 500 || !strings.Contains(r.String(), "<h1>Server Error (500)</h1>") {
			t.Errorf("poll %d: %d %s", i, r.code, r)
		}
	}
	// The failed polls did not move the task.
	if st := h.sbStatus(id); st != "pending" {
		t.Errorf("after the 500s: %s", st)
	}
	one := h.submit("SIM:HTTP500")
	if r := h.get(neo("tasks/view/" + one + "/")); r.code != 500 {
		t.Errorf("view: %d", r.code)
	}
	if st := h.sbStatus(one); st != "pending" {
		t.Errorf("second request: %s", st)
	}
}

func TestSandboxRouteShapes(t *testing.T) {
	t.Parallel()
	h := setup(t, sim.Config{})
	h.submit("x")
	ok := []string{
		"tasks/status/1000/", "tasks/status/1000", "tasks/view/1000/", "tasks/get/simple_report/1000/",
		"tasks/get/screenshot/1000/", "tasks/get/screenshot/1000/9999/",
		"files/view/md5/" + strings.Repeat("A", 32) + "/", "files/view/sha1/" + strings.Repeat("b", 40) + "/",
		"tasks/search/sha256/" + strings.Repeat("c", 64),
	}
	for _, p := range ok {
		if r := h.get(neo(p)); r.code != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("GET %s: %d %s", p, r.code, r)
		}
	}
	notFound := []string{
		"", "tasks/status/", "tasks/status/abc/", "tasks/status/-1/", "tasks/status/1000/x/",
		"tasks/view/1e3/", "tasks/get/screenshot/1000/10000/", "tasks/get/screenshot/1000/a/",
		"files/view/md5/" + strings.Repeat("a", 31) + "/", "files/view/md5/" + strings.Repeat("g", 32) + "/",
		"files/view/sha512/" + strings.Repeat("a", 128) + "/", "tasks/search/sha1/" + strings.Repeat("a", 64) + "/",
		"tasks/create/url/", "tasks/get/report/1000/",
	}
	for _, p := range notFound {
		r := h.get(neo(p))
		if r.code != 404 || !strings.Contains(r.String(), "<title>Not Found</title>") {
			t.Errorf("GET %s: %d %s", p, r.code, r)
		}
	}
	wantBody(t, "POST status", h.do("POST", neo("tasks/status/1000/"), "", nil), 405, `{"detail":"Method \"POST\" not allowed."}`)
	wantBody(t, "DELETE view", h.do("DELETE", neo("tasks/view/1000/"), "", nil), 405, `{"detail":"Method \"DELETE\" not allowed."}`)
	if r := h.do("HEAD", neo("tasks/view/1000/"), "", nil); r.code != 200 {
		t.Errorf("HEAD: %d", r.code)
	}
	// Invented text (an assumption: the spec says nothing about unknown keys).
	h2 := setup(t, sim.Config{Keys: []string{"good"}})
	wantBody(t, "unknown key", h2.get("/apineo/bad/tasks/status/1000/"), 403, `{"error":true,"error_value":"invalid api key"}`)
}

func TestMarkersAcrossReads(t *testing.T) {
	t.Parallel()
	// Markers straddling the scanner's read boundaries are still found:
	// pad so they cross the 32 KiB copy buffer, and send the body slowly.
	pad := strings.Repeat("z", 32*1024-8)
	content := pad + "SIM:FAMILY=Straddle " + strings.Repeat("y", 40000) + eicar + " SIM:MALSCORE=7.5"
	h := setup(t, sim.Config{})
	ct, body := multipartBody(t, file{"file", "big.bin", []byte(content)})
	r := h.do("POST", neo("tasks/create/file/"), ct, io.NopCloser(&slowReader{b: body.Bytes(), n: 1000}))
	var out struct {
		TaskIDs []string `json:"task_ids"`
	}
	json.Unmarshal(r.body, &out)
	if len(out.TaskIDs) != 1 {
		t.Fatalf("create: %s", r)
	}
	task, _ := h.srv.SandboxTask(out.TaskIDs[0])
	if task.MalFamily != "EICAR" || task.MalScore != 10 {
		t.Errorf("EICAR across reads not found: %+v", task)
	}
	id := h.submit(pad + "SIM:FAMILY=Straddle SIM:MALSCORE=7.5")
	if task, _ := h.srv.SandboxTask(id); task.MalFamily != "Straddle" || task.MalScore != 7.5 {
		t.Errorf("markers: %+v", task)
	}
	id = h.submit("ends with SIM:SHOTS=7")
	if task, _ := h.srv.SandboxTask(id); task.Shots != 7 {
		t.Errorf("marker at end of file: %+v", task)
	}
}

// slowReader returns at most n bytes per Read.
type slowReader struct {
	b []byte
	n int
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), r.n)], r.b)
	r.b = r.b[k:]
	return k, nil
}

var _ http.Handler = (*sim.Server)(nil)
