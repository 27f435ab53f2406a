package sim

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Sandbox error texts (from CAPE 2021 apiv2), byte-exact.
const (
	errNoFile         = "No file was submitted"
	errEmptyFile      = "You submitted an empty file"
	errFileTooBig     = "File size exceeds API limit"
	errSampleNotFound = "Sample not found in database"
	errTaskNotInDB    = "Task not found in database"
	errTaskNotExist   = "Task does not exist"
	errStillAnalyzed  = "Task is still being analyzed"
	errTaskFailed     = "Task failed"
	errNoShot         = "Screenshot does not exist"
	errNoShotsCreated = "No screenshots created for task %d"
	errAddingTaskToDB = "Error adding task to database"
)

const (
	maxUploadDrain     = 64 << 20 // request bytes read and dropped after an answer is decided
	sandboxCategory    = "file"
	defaultTargetName  = "sample.bin"
	trackingPathFormat = "/submit/status/%d/"
)

// Sandbox task statuses (CAPEv2's task statuses and the simulator's sandbox model): CAPE's, plus the vendor's
// "reporting" between completed and reported.
const (
	StatusRunning          = "running"
	StatusReporting        = "reporting"
	StatusReported         = "reported"
	StatusFailedAnalysis   = "failed_analysis"
	StatusFailedProcessing = "failed_processing"
	StatusFailedReporting  = "failed_reporting"
)

// sbError is the sandbox's error envelope (sandbox spec §7).
type sbError struct {
	Error      bool   `json:"error"`
	ErrorValue string `json:"error_value"`
}

// sbTask is one sandbox analysis task.
type sbTask struct {
	id      int
	sample  *sample
	target  string
	created time.Time
	prog    *progress
	shots   int
	http500 int // SIM:HTTP500 answers left
}

// SandboxTask is a snapshot of a sandbox task for tests.
type SandboxTask struct {
	ID        string
	SHA256    string
	Target    string
	Created   time.Time
	Status    string  // as of now, without counting a poll
	MalScore  float64 // what simple_report returns once reported
	MalFamily string
	Shots     int
}

func (s *Server) sbErr(w http.ResponseWriter, text string) {
	writeJSON(w, http.StatusOK, sbError{Error: true, ErrorValue: text})
}

// wireID is a sandbox id as the wire shows it: a decimal string, or a JSON
// integer with CAPECompat.
func (s *Server) wireID(id int) any {
	if s.cfg.CAPECompat {
		return id
	}
	return strconv.Itoa(id)
}

func (s *Server) serveSandbox(w http.ResponseWriter, r *http.Request, rt *route) {
	switch rt.op {
	case OpCreateFile:
		s.createFile(w, r)
	case OpFileView:
		s.fileView(w, rt.params[0], rt.params[1])
	case OpTaskSearch:
		s.taskSearch(w, rt.params[0], rt.params[1])
	default:
		s.taskOp(w, rt)
	}
}

// upload is one accepted file part of a create request.
type upload struct {
	sample *sample
	target string
}

// createFile is POST tasks/create/file/ (sandbox spec §4 #1).
func (s *Server) createFile(w http.ResponseWriter, r *http.Request) {
	ups, errText := s.readUploads(r)
	// Read what is left, so the client is not cut off mid-upload, before
	// answering: an HTTP/1 body may be gone once the answer is written.
	io.Copy(io.Discard, io.LimitReader(r.Body, maxUploadDrain))
	if errText != "" {
		s.sbErr(w, errText)
		return
	}
	s.mu.Lock()
	ids := make([]int, len(ups))
	for i, up := range ups {
		ids[i] = s.newSandboxTask(up).id
	}
	s.mu.Unlock()

	base := s.cfg.BaseURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	base = strings.TrimSuffix(base, "/")
	var wireIDs []any
	var strIDs []string
	var urls []string
	for _, id := range ids {
		wireIDs = append(wireIDs, s.wireID(id))
		strIDs = append(strIDs, strconv.Itoa(id))
		urls = append(urls, base+fmt.Sprintf(trackingPathFormat, id))
	}
	msg := "Task ID " + strIDs[0] + " has been submitted"
	if len(ids) > 1 {
		msg = "Task IDs " + strings.Join(strIDs, ", ") + " have been submitted"
	}
	if s.cfg.CAPECompat {
		type data struct {
			TaskIDs []any  `json:"task_ids"`
			Message string `json:"message"`
		}
		writeJSON(w, http.StatusOK, struct {
			Error  bool     `json:"error"`
			Data   data     `json:"data"`
			Errors []string `json:"errors"`
			URL    []string `json:"url"`
		}{Data: data{wireIDs, msg}, Errors: []string{}, URL: urls})
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Error   bool     `json:"error"`
		Data    string   `json:"data"`
		TaskIDs []any    `json:"task_ids"`
		URL     []string `json:"url"`
	}{Data: msg, TaskIDs: wireIDs, URL: urls})
}

// readUploads streams each "file" part of a create request through the
// hashers and the marker scanner, never holding more than one read buffer,
// and stops reading a part at MaxFileSize+1 bytes. It returns the accepted
// files or the error text of the first bad one, with CAPE 2021's checks.
func (s *Server) readUploads(r *http.Request) ([]upload, string) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, errNoFile
	}
	var ups []upload
	for {
		part, err := mr.NextPart()
		if err != nil {
			break // io.EOF, or a malformed body: keep what was read
		}
		// Django files a part under request.FILES only with a filename.
		if part.FormName() != "file" || part.FileName() == "" {
			part.Close()
			continue
		}
		sc := newContentScanner()
		n, err := io.Copy(sc, io.LimitReader(part, s.cfg.MaxFileSize+1))
		part.Close()
		switch {
		case err != nil:
			return nil, errAddingTaskToDB
		case n == 0:
			return nil, errEmptyFile
		case n > s.cfg.MaxFileSize:
			return nil, errFileTooBig
		}
		sc.finish()
		ups = append(ups, upload{sample: sc.sample(), target: baseName(part.FileName())})
	}
	if len(ups) == 0 {
		return nil, errNoFile
	}
	return ups, ""
}

// baseName strips any directory, / or \ separated, from an upload's name.
func baseName(name string) string {
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	if name == "" {
		return defaultTargetName
	}
	return name
}

// newSandboxTask records the sample (deduplicated by SHA-256) and makes a
// task for it. Caller holds mu.
func (s *Server) newSandboxTask(up upload) *sbTask {
	now := s.cfg.Now()
	id := s.nextTask
	s.nextTask++
	smp := s.samples[up.sample.sha256]
	if smp == nil {
		smp = up.sample
		smp.firstTask = id
		s.samples[smp.sha256] = smp
		s.byMD5[smp.md5] = smp
		s.bySHA1[smp.sha1] = smp
	}
	f := smp.facts
	t := &sbTask{
		id: id, sample: smp, target: up.target, created: now,
		prog: s.sandboxPlan(f, now), shots: s.cfg.Shots, http500: f.http500,
	}
	if f.hasShots {
		t.shots = f.shots
	}
	s.sbTasks[id] = t
	s.sbByHash[smp.sha256] = append(s.sbByHash[smp.sha256], t)
	return t
}

// sandboxPlan returns the progression of a task for a file with facts f.
func (s *Server) sandboxPlan(f contentFacts, now time.Time) *progress {
	build := func(pend, run, comp, rep time.Duration) []step {
		head := []step{{StatusPending, pend}, {StatusRunning, run}}
		if s.cfg.Chaos {
			// A dead VM sends the task back to the queue once (CAPEv2's task statuses).
			head = append(head, step{StatusPending, pend}, step{StatusRunning, run})
		}
		switch {
		case f.failAnalysis:
			return append(head, step{StatusFailedAnalysis, 0})
		case f.failProcessing:
			return append(head, step{StatusCompleted, comp}, step{StatusFailedProcessing, 0})
		case f.failReporting:
			return append(head, step{StatusCompleted, comp}, step{StatusReporting, rep}, step{StatusFailedReporting, 0})
		}
		return append(head, step{StatusCompleted, comp}, step{StatusReporting, rep}, step{StatusReported, 0})
	}
	p := s.cfg.Profile
	if f.hasDuration {
		r := RealisticProfile()
		tmpl := build(r.SandboxPending, r.SandboxRunning, r.SandboxCompleted, r.SandboxReporting)
		return newProgress(spreadSteps(tmpl, f.duration), false, 1, now)
	}
	steps := build(p.SandboxPending, p.SandboxRunning, p.SandboxCompleted, p.SandboxReporting)
	return newProgress(steps, p.PerPoll, p.PollsPerPhase, now)
}

// report returns the simple_report score and family of a sample (notes
// §4.2 "Summary report"): EICAR first, then the markers, then a clean
// score from the first byte of the SHA-256.
func (smp *sample) report() (float64, string) {
	f := smp.facts
	if f.eicar {
		return 10.0, "EICAR"
	}
	b, _ := strconv.ParseUint(smp.sha256[:2], 16, 8)
	score := float64(b*20/256) / 10
	family := ""
	if f.hasMalscore {
		score = f.malscore
	}
	if f.hasFamily {
		family = f.family
	}
	return score, family
}

// lookupSample finds a sample by one of its hashes (any case).
func (s *Server) lookupSample(alg, h string) *sample {
	h = strings.ToLower(h)
	switch alg {
	case "md5":
		return s.byMD5[h]
	case "sha1":
		return s.bySHA1[h]
	}
	return s.samples[h]
}

// fileView is GET files/view/<alg>/<hash>/ (sandbox spec §4 #2).
func (s *Server) fileView(w http.ResponseWriter, alg, h string) {
	s.mu.Lock()
	smp := s.lookupSample(alg, h)
	s.mu.Unlock()
	if smp == nil {
		s.sbErr(w, errSampleNotFound)
		return
	}
	type record struct {
		ID       any     `json:"id"`
		MD5      string  `json:"md5"`
		SHA1     string  `json:"sha1"`
		SHA256   string  `json:"sha256"`
		SHA512   string  `json:"sha512"`
		CRC32    string  `json:"crc32"`
		SSDeep   *string `json:"ssdeep"`
		FileType string  `json:"file_type"`
		FileSize int64   `json:"file_size"`
	}
	writeJSON(w, http.StatusOK, struct {
		Error bool   `json:"error"`
		Data  record `json:"data"`
	}{Data: record{
		ID: s.wireID(smp.firstTask), MD5: smp.md5, SHA1: smp.sha1, SHA256: smp.sha256,
		SHA512: smp.sha512, CRC32: smp.crc32, FileType: smp.fileType, FileSize: smp.size,
	}})
}

// taskTimes returns a task's status and its three timestamps, nil until
// reached. Caller holds mu.
func (s *Server) taskTimes(t *sbTask, now time.Time) (status string, added string, started, completed *string) {
	status = t.prog.peek(now)
	stamp := func(st string) *string {
		if at, ok := t.prog.enteredAt(now, st); ok {
			v := s.stamp(at)
			return &v
		}
		return nil
	}
	started = stamp(StatusRunning)
	completed = stamp(StatusCompleted)
	if completed == nil {
		completed = stamp(StatusFailedAnalysis)
	}
	return status, s.stamp(t.created), started, completed
}

// taskSearch is GET tasks/search/<alg>/<hash>/ (sandbox spec §4 #3): newest
// first; an unknown hash is an empty list, not an error (CAPEv2's tasks/search).
func (s *Server) taskSearch(w http.ResponseWriter, alg, h string) {
	type entry struct {
		ID          any     `json:"id"`
		Target      string  `json:"target"`
		AddedOn     string  `json:"added_on"`
		StartedOn   *string `json:"started_on"`
		CompletedOn *string `json:"completed_on"`
		Status      string  `json:"status"`
		Category    string  `json:"category"`
	}
	list := []entry{}
	s.mu.Lock()
	now := s.cfg.Now()
	if smp := s.lookupSample(alg, h); smp != nil {
		ts := s.sbByHash[smp.sha256]
		for i := len(ts) - 1; i >= 0; i-- {
			t := ts[i]
			st, added, started, completed := s.taskTimes(t, now)
			list = append(list, entry{s.wireID(t.id), t.target, added, started, completed, st, sandboxCategory})
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, struct {
		Data  []entry `json:"data"`
		Error bool    `json:"error"`
	}{Data: list})
}

// taskOp serves the operations on one task id: view, status, simple
// report, screenshots.
func (s *Server) taskOp(w http.ResponseWriter, rt *route) {
	id, _ := parseTaskID(rt.params[0])
	s.mu.Lock()
	now := s.cfg.Now()
	t := s.sbTasks[id]
	if t != nil && t.http500 > 0 {
		t.http500--
		s.mu.Unlock()
		writeHTML(w, http.StatusInternalServerError, serverErrorPage)
		return
	}
	if t == nil {
		s.mu.Unlock()
		if rt.op == OpTaskView {
			s.sbErr(w, errTaskNotInDB)
		} else {
			s.sbErr(w, errTaskNotExist)
		}
		return
	}
	switch rt.op {
	case OpTaskView:
		st, added, started, completed := s.taskTimes(t, now)
		target := t.target
		s.mu.Unlock()
		type view struct {
			ID          any      `json:"id"`
			AddedOn     string   `json:"added_on"`
			StartedOn   *string  `json:"started_on"`
			CompletedOn *string  `json:"completed_on"`
			Status      string   `json:"status"`
			Target      string   `json:"target"`
			Category    string   `json:"category"`
			Errors      []string `json:"errors"`
		}
		writeJSON(w, http.StatusOK, struct {
			Error bool `json:"error"`
			Data  view `json:"data"`
		}{Data: view{s.wireID(id), added, started, completed, st, target, sandboxCategory, []string{}}})
	case OpStatus:
		st := t.prog.poll(now)
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, struct {
			Error bool   `json:"error"`
			Data  string `json:"data"`
		}{Data: st})
	default:
		st := t.prog.peek(now)
		doneAt, _ := t.prog.enteredAt(now, StatusCompleted)
		shots := t.shots
		score, family := t.sample.report()
		s.mu.Unlock()
		if msg := s.validateTask(st); msg != "" {
			s.sbErr(w, msg)
			return
		}
		switch rt.op {
		case OpSimpleReport:
			s.simpleReport(w, id, score, family)
		case OpScreenshot, OpScreenshotArchive:
			s.screenshot(w, rt, id, shots, doneAt)
		}
	}
}

// validateTask is CAPE's validate_task for a known task (CAPEv2's screenshot views): only
// a reported task has results.
func (s *Server) validateTask(status string) string {
	switch {
	case status == StatusReported:
		return ""
	case strings.HasPrefix(status, "failed_") && !s.cfg.Legacy2021:
		return errTaskFailed
	}
	return errStillAnalyzed
}

// simpleReport is GET tasks/get/simple_report/<id>/ (sandbox spec §4 #6).
func (s *Server) simpleReport(w http.ResponseWriter, id int, score float64, family string) {
	type report struct {
		TaskID    any       `json:"task_id"`
		MalFamily string    `json:"malfamily"`
		MalScore  wireScore `json:"malscore"`
		Error     *bool     `json:"error,omitempty"`
	}
	rep := report{TaskID: s.wireID(id), MalFamily: family, MalScore: wireScore(score)}
	if !s.cfg.OmitReportError {
		rep.Error = new(false)
	}
	writeJSON(w, http.StatusOK, rep)
}

// screenshot is GET tasks/get/screenshot/<id>/[<n>/] (sandbox spec §4 #7,
// CAPEv2's screenshot views).
func (s *Server) screenshot(w http.ResponseWriter, rt *route, id, shots int, doneAt time.Time) {
	if s.cfg.ShotsDirMissing {
		writeHTML(w, http.StatusInternalServerError, serverErrorPage)
		return
	}
	if shots == 0 {
		s.sbErr(w, fmt.Sprintf(errNoShotsCreated, id))
		return
	}
	s.mu.Lock()
	corrupt := s.faults.f.ShotsCorrupt
	s.mu.Unlock()
	if corrupt {
		w = corruptWriter{w}
	}
	if rt.op == OpScreenshot {
		n, _ := strconv.Atoi(rt.params[1]) // \d{1,4}, zero-filled to 4 by ShotName
		if corrupt {
			// The middlebox answers every number alike.
			writeFile(w, "image/jpeg", ShotName(n), shotJPEG(n))
			return
		}
		if n < 1 || n > shots {
			s.sbErr(w, errNoShot)
			return
		}
		writeFile(w, "image/jpeg", ShotName(n), shotJPEG(n))
		return
	}
	order := shotOrder(shots, id, s.cfg.ShuffleShots)
	if s.cfg.ArchiveZip {
		b, err := zipShots(order, doneAt)
		if err != nil {
			writeHTML(w, http.StatusInternalServerError, serverErrorPage)
			return
		}
		writeFile(w, "application/zip", fmt.Sprintf("%d_screenshots.zip", id), b)
		return
	}
	b, err := tarBz2(order, doneAt)
	if err != nil {
		writeHTML(w, http.StatusInternalServerError, serverErrorPage)
		return
	}
	// CAPE 2021 writes the content type with a trailing semicolon.
	writeFile(w, "application/octet-stream;", fmt.Sprintf("%d_screenshots.tar.bz2", id), b)
}

// corruptWriter serves a file damaged as Faults.ShotsCorrupt says: its
// usual headers, an archive cut to half its length, an image whose first
// 16 bytes are zeros.
type corruptWriter struct{ http.ResponseWriter }

func (c corruptWriter) file(contentType, name string, b []byte) []byte {
	if strings.HasPrefix(contentType, "image/") {
		b = bytes.Clone(b)
		clear(b[:min(16, len(b))])
		return b
	}
	return b[:len(b)/2]
}

func writeFile(w http.ResponseWriter, contentType, name string, b []byte) {
	if c, ok := w.(corruptWriter); ok {
		b, w = c.file(contentType, name, b), c.ResponseWriter
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Disposition", "attachment; filename="+name)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
}

// SandboxTasksFor returns the ids of the tasks of the sample with this
// SHA-256 (any case), oldest first.
func (s *Server) SandboxTasksFor(sha256 string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, t := range s.sbByHash[strings.ToLower(sha256)] {
		ids = append(ids, strconv.Itoa(t.id))
	}
	return ids
}

// SandboxTask returns a snapshot of a sandbox task.
func (s *Server) SandboxTask(id string) (SandboxTask, bool) {
	n, ok := parseTaskID(id)
	if !ok {
		return SandboxTask{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.sbTasks[n]
	if t == nil {
		return SandboxTask{}, false
	}
	score, family := t.sample.report()
	return SandboxTask{
		ID: strconv.Itoa(n), SHA256: t.sample.sha256, Target: t.target, Created: t.created,
		Status: t.prog.peek(s.cfg.Now()), MalScore: score, MalFamily: family, Shots: t.shots,
	}, true
}
