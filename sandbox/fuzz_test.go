package sandbox

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

// The fuzz targets feed arbitrary answers to the decoders: they must never
// panic, and what they accept must keep the types' promises. `go test` runs
// the seeds; `make fuzz` explores.

var jsonSeeds = []string{
	`{"error": false, "data": "Task ID 1042 has been submitted", "task_ids": ["1042"], "url": ["http://x/submit/status/1042/"]}`,
	`{"error": false, "data": {"task_ids": [1042, 1043], "message": "Task IDs 1042, 1043 have been submitted"}, "errors": [], "url": ["u"]}`,
	`{"error": [], "data": {"id": 7, "md5": "d41d8cd98f00b204e9800998ecf8427e", "file_size": "99", "ssdeep": null}}`,
	`{"error": false, "data": [{"id": 12, "target": "a.pdf", "added_on": "2024-01-01 00:00:00", "started_on": null}]}`,
	`{"error": false, "data": {"id": "12", "completed_on": ["x"]}}`,
	`{"error": false, "data": "reported"}`,
	`{"error": false, "data": {"status": "pending"}}`,
	`{"task_id": "1042", "malfamily": "", "malscore": 0.0}`,
	`{"task_id": 12, "malfamily": null, "malscore": "NaN", "urls": [{"u": 1}]}`,
	`{"data": {"malscore": 1e308, "malfamily": 5}}`,
	`{"task_ids": [1.5]}`, `{"data": {"file_size": -1}}`, `{"data": null}`, `[]`, `null`, `"x"`, `{`, ``,
}

func FuzzDecodeSubmission(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSubmission(b)
		if err != nil {
			return
		}
		if len(s.TaskIDs) == 0 || slices.Contains(s.TaskIDs, "") {
			t.Fatalf("accepted %q with task ids %q", b, s.TaskIDs)
		}
	})
}

func FuzzDecodeFile(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := decodeFile(b)
		if err == nil && (file == nil || file.FileSize < 0) {
			t.Fatalf("accepted %q as %+v", b, file)
		}
	})
}

func FuzzDecodeTasks(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tasks, err := decodeTasks(b)
		if err == nil && tasks == nil {
			t.Fatalf("nil slice for %q", b)
		}
		task, err := decodeTask(b, "fallback")
		if err == nil && task.ID == "" {
			t.Fatalf("task without id for %q", b)
		}
	})
}

func FuzzDecodeStatus(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := decodeStatus(b)
		if err == nil && st == "" {
			t.Fatalf("empty status accepted from %q", b)
		}
		if st.IsSuccess() && st.IsFailure() {
			t.Fatalf("%q is both success and failure", st)
		}
	})
}

func FuzzDecodeReport(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeReport(b, "fallback")
		if err != nil {
			return
		}
		if r.TaskID == "" || math.IsNaN(r.MalScore) || math.IsInf(r.MalScore, 0) || r.Level() == BandUnknown {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}

// fuzzLimits keep each fuzz input cheap: a mutated bzip2 stream can expand
// a thousandfold.
var fuzzLimits = archiveLimits{image: 1 << 20, total: 2 << 20, archive: 2 << 20, expanded: 4 << 20, members: 100}

func FuzzDecodeScreenshotArchive(f *testing.F) {
	jpegs := shots(f, "", 3)
	f.Add(tarBz2(f, shuffled(jpegs)))
	f.Add(zipArchive(f, shots(f, "shots/", 2), false))
	f.Add(zipArchive(f, shots(f, "shots/", 1), true))
	var plain bytes.Buffer
	writeTar(f, &plain, append(jpegs, member{"x.txt", []byte("hi")}))
	f.Add(plain.Bytes())
	f.Add([]byte("BZh9"))
	f.Add([]byte("PK\x05\x06"))
	f.Add([]byte{0x1f, 0x8b})
	f.Fuzz(func(t *testing.T, b []byte) {
		images, err := readArchive(bytes.NewReader(b), 2, fuzzLimits)
		if err != nil {
			return
		}
		if len(images) > 2 {
			t.Fatalf("%d images, max 2", len(images))
		}
		for i, im := range images {
			if ct, _ := sniffImage(im.Data); ct == "" || ct != im.ContentType || im.Name == "" {
				t.Fatalf("image %d %q is not an image (%q)", i, im.Name, im.ContentType)
			}
			if i > 0 && less(shot{num: shotNumber(im.Name), name: im.Name}, shot{num: shotNumber(images[i-1].Name), name: images[i-1].Name}) {
				t.Fatalf("images out of order: %q before %q", images[i-1].Name, im.Name)
			}
		}
	})
}
