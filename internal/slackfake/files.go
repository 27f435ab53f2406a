package slackfake

import (
	"cmp"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

// addFileLocked hosts f and fills in its ID, type and URLs. File URLs have
// Slack's shape, /files-pri/<team>-<file>/[download/]<name>, on the API host.
func (s *Server) addFileLocked(f File) File {
	if f.ID == "" {
		f.ID = randomID("F", 10)
	}
	if f.Name == "" {
		f.Name = "file"
	}
	if f.Title == "" {
		f.Title = f.Name
	}
	ext := strings.ToLower(strings.TrimPrefix(path.Ext(f.Name), "."))
	if f.Filetype == "" {
		f.Filetype = cmp.Or(ext, "binary")
	}
	if f.Mimetype == "" {
		f.Mimetype = mime.TypeByExtension("." + ext)
		if f.Mimetype == "" && len(f.Content) > 0 {
			f.Mimetype = http.DetectContentType(f.Content)
		}
		f.Mimetype = cmp.Or(f.Mimetype, "application/octet-stream")
		if mt, _, err := mime.ParseMediaType(f.Mimetype); err == nil {
			f.Mimetype = mt
		}
	}
	if f.Created.IsZero() {
		f.Created = time.Now()
	}
	name := url.PathEscape(f.Name)
	prefix := s.base + "/files-pri/" + s.cfg.teamID + "-" + f.ID + "/"
	f.URLPrivate, f.URLPrivateDownload = prefix+name, prefix+"download/"+name
	if f.IsExternal {
		f.URLPrivate, f.URLPrivateDownload = f.ExternalURL, f.ExternalURL
	}
	f.Permalink = s.base + "/files/" + cmp.Or(f.User, s.cfg.botUserID) + "/" + f.ID + "/" + name
	f.Content = slices.Clone(f.Content)
	f.Channels = slices.Clone(f.Channels)
	if f.User != "" {
		s.ensureUserLocked(f.User)
	}
	stored := f
	s.st.files[f.ID] = &stored
	return f
}

// handleFileDownload serves url_private and url_private_download. With the
// bot token in "Authorization: Bearer" it answers the bytes; without it, or
// with another token, it redirects to the sign-in page (/?redir=<path>),
// which answers HTML with status 200 — what files.slack.com does, and what
// slack-go's downloadFile detects (misc.go).
func (s *Server) handleFileDownload(w http.ResponseWriter, r *http.Request) {
	token, source := "", ""
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		token, source = strings.TrimSpace(t), "header"
	}
	call := &Call{
		Method: MethodFileDownload, HTTPMethod: r.Method, Path: r.URL.Path, Time: time.Now(),
		Params: r.URL.Query(), Token: token, TokenSource: source, TokenKind: s.tokenKind(token),
	}
	res, ok := s.applyFault(r, MethodFileDownload, call)
	if !ok {
		return
	}

	s.mu.Lock()
	if !res.set() {
		res = s.fileDownloadLocked(r.URL.Path, call.TokenKind)
	}
	s.recordLocked(call, &res)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, r, res)
}

func (s *Server) fileDownloadLocked(p, kind string) apiResult {
	rest := strings.TrimPrefix(p, "/files-pri/")
	teamFile, _, _ := strings.Cut(rest, "/")
	team, id, _ := strings.Cut(teamFile, "-")
	f := s.st.files[id]
	if f == nil || f.Deleted || f.IsExternal || team != s.cfg.teamID || !s.fileVisibleLocked(f, kind) {
		return apiResult{status: http.StatusNotFound, html: "<html><body><h1>File not found</h1></body></html>", errCode: "file_not_found"}
	}
	if kind != TokenBot {
		code := "not_authed"
		if kind != "" {
			code = "invalid_auth"
		}
		return apiResult{redirect: s.base + "/?redir=" + url.QueryEscape(p), errCode: code}
	}
	res := apiResult{raw: f.Content, contentType: f.Mimetype}
	if strings.Contains(rest, "/download/") {
		res.header = http.Header{"Content-Disposition": {`attachment; filename="` + f.Name + `"`}}
	}
	return res
}

func (s *Server) apiGetUploadURLExternal(c *apiCall) apiResult {
	p := c.params
	length, err := strconv.Atoi(p.Get("length"))
	if p.Get("filename") == "" || err != nil || length <= 0 {
		return errResult("invalid_arguments")
	}
	u := &Upload{
		FileID: randomID("F", 10), Filename: p.Get("filename"), AltText: p.Get("alt_txt"),
		DeclaredLength: length, uploadID: randomHex(16),
	}
	s.st.uploads = append(s.st.uploads, u)
	return okResult(map[string]any{"upload_url": s.base + "/upload/v1/" + u.uploadID, "file_id": u.FileID})
}

// handleUpload receives the bytes POSTed to an upload_url: a multipart body
// with a "file" part (what slack-go sends) or the raw bytes. It answers
// "OK - <size>" as Slack's upload host does.
func (s *Server) handleUpload(w http.ResponseWriter, r *http.Request) {
	token, source := requestToken(r, nil)
	call := &Call{
		Method: MethodFileUpload, HTTPMethod: r.Method, Path: r.URL.Path, Time: time.Now(),
		Token: token, TokenSource: source, TokenKind: s.tokenKind(token),
	}
	res, ok := s.applyFault(r, MethodFileUpload, call)
	if !ok {
		return
	}
	var data []byte
	var readErr error
	if !res.set() {
		data, readErr = readUploadBody(r)
	}

	s.mu.Lock()
	if !res.set() {
		res = s.uploadLocked(strings.TrimPrefix(r.URL.Path, "/upload/v1/"), data, readErr)
	}
	s.recordLocked(call, &res)
	s.notifyLocked()
	s.mu.Unlock()
	writeResult(w, r, res)
}

func readUploadBody(r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(nil, r.Body, maxUploadBody)
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return io.ReadAll(body)
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err != nil {
			if err == io.EOF {
				return nil, errNoFilePart
			}
			return nil, err
		}
		if part.FormName() == "file" || part.FileName() != "" {
			return io.ReadAll(part)
		}
	}
}

func (s *Server) uploadLocked(id string, data []byte, readErr error) apiResult {
	var u *Upload
	for _, x := range s.st.uploads {
		if x.uploadID == id {
			u = x
		}
	}
	switch {
	case u == nil:
		return apiResult{status: http.StatusNotFound, raw: []byte("invalid upload"), contentType: "text/plain", errCode: "upload_not_found"}
	case readErr != nil:
		return apiResult{status: http.StatusBadRequest, raw: []byte(readErr.Error()), contentType: "text/plain", errCode: "bad_upload"}
	}
	u.Content, u.Uploaded, u.UploadedAt = data, true, time.Now()
	u.ContentType = http.DetectContentType(data)
	return apiResult{raw: []byte("OK - " + strconv.Itoa(len(data))), contentType: "text/plain; charset=utf-8"}
}

func (s *Server) apiCompleteUploadExternal(c *apiCall) apiResult {
	p := c.params
	var files []struct {
		ID    string `json:"id"`
		Title string `json:"title"`
	}
	if json.Unmarshal([]byte(p.Get("files")), &files) != nil || len(files) == 0 {
		return errResult("invalid_arguments")
	}
	var channels []string
	if id := p.Get("channel_id"); id != "" {
		channels = append(channels, id)
	}
	for id := range strings.SplitSeq(p.Get("channels"), ",") {
		if id = strings.TrimSpace(id); id != "" && !slices.Contains(channels, id) {
			channels = append(channels, id)
		}
	}
	for _, id := range channels {
		if ch, res := s.postableChannelLocked(id); ch == nil {
			return res
		}
	}
	ups := make([]*Upload, len(files))
	for i, f := range files {
		for _, u := range s.st.uploads {
			if u.FileID == f.ID && !u.Completed {
				ups[i] = u
			}
		}
		if ups[i] == nil || !ups[i].Uploaded {
			return errResult("file_not_found")
		}
	}
	var blocks json.RawMessage
	if v := p.Get("blocks"); v != "" && p.Get("initial_comment") == "" {
		blocks = json.RawMessage(v)
		if code, msgs := validateBlocks(blocks); code != "" {
			return errResultMessages(code, msgs)
		}
	}

	now := time.Now()
	ids := make([]string, len(files))
	out := make([]any, len(files))
	for i, u := range ups {
		u.Title = cmp.Or(files[i].Title, u.Filename)
		u.Completed, u.CompletedAt, u.InitialComment = true, now, p.Get("initial_comment")
		s.addFileLocked(File{ID: u.FileID, Name: u.Filename, Title: u.Title, User: s.cfg.botUserID, Content: u.Content, Channels: channels})
		ids[i] = u.FileID
		out[i] = map[string]any{"id": u.FileID, "title": u.Title}
	}
	for _, ch := range channels {
		m := &Message{
			Channel: ch, TS: s.nextTSLocked(), ThreadTS: p.Get("thread_ts"),
			User: s.cfg.botUserID, BotID: s.cfg.botID, AppID: s.cfg.appID, Bot: true, Via: c.method,
			Text: p.Get("initial_comment"), Blocks: blocks, Files: ids, Params: cloneValues(p), PostedAt: now,
			Reactions: map[string][]string{},
		}
		m.Versions = []MessageVersion{{At: now, Via: c.method, Text: m.Text, Blocks: m.Blocks}}
		s.st.addMessage(m)
		for _, u := range ups {
			if u.Channel == "" {
				u.Channel, u.ThreadTS, u.MessageTS = ch, m.ThreadTS, m.TS
			}
		}
		s.echoMessageLocked(m, "file_share")
		for _, id := range ids {
			s.echoFileSharedLocked(id, ch)
		}
	}
	return okResult(map[string]any{"files": out})
}
