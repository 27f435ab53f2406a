package slackfake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the fake's HTTP endpoints.
const (
	maxAPIBody    = 16 << 20
	maxUploadBody = 256 << 20
	// Slack truncates message text over 40,000 characters (docs.slack.dev
	// chat.postMessage "Truncating content").
	maxTextRunes = 40000
	ticketTTL    = time.Minute
)

// Token kinds recorded in Call.TokenKind.
const (
	TokenBot     = "bot"
	TokenApp     = "app"
	TokenUser    = "user"
	TokenInvalid = "invalid"
)

// apiResult is the answer to one HTTP request.
type apiResult struct {
	status      int
	header      http.Header
	body        map[string]any // a JSON answer
	errCode     string
	html        string
	raw         []byte
	contentType string
	redirect    string
}

func (r apiResult) set() bool {
	return r.body != nil || r.html != "" || r.raw != nil || r.redirect != ""
}

func okResult(fields map[string]any) apiResult {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["ok"] = true
	return apiResult{body: fields}
}

func errResult(code string) apiResult {
	return apiResult{body: map[string]any{"ok": false, "error": code}, errCode: code}
}

// errResultMessages is an error with response_metadata.messages, as Slack
// answers invalid_blocks.
func errResultMessages(code string, messages []string) apiResult {
	r := errResult(code)
	r.body["response_metadata"] = map[string]any{"messages": messages}
	return r
}

// apiCall is one parsed Web API request.
type apiCall struct {
	method string
	params url.Values
	at     time.Time
	token  string
	source string
	kind   string
}

type methodSpec struct {
	token      string // TokenBot or TokenApp
	user       bool   // a user token (WithUserToken) is accepted too
	headerOnly bool   // the token must come in the Authorization header
	// team is what the method wants of team_id with an org-level token
	// (WithOrg): teamOptional, teamRequired, or teamOrEnterprise.
	team   teamArg
	handle func(*Server, *apiCall) apiResult
}

// teamArg is a method's team_id with an org-level token.
type teamArg int

const (
	// teamOptional: team_id may be given; if given it must be granted.
	teamOptional teamArg = iota
	// teamRequired: one of the methods Slack lists as requiring team_id
	// with an org-wide app's token (api.slack.com/enterprise/apps/
	// changes-apis; each method's team_id argument "required if org token
	// is used").
	teamRequired
	// teamOrEnterprise: required too, and the enterprise id is accepted
	// (bots.info: "encoded team id or enterprise id where the bot exists").
	teamOrEnterprise
)

// methods are the Web API methods the fake implements. Every other method
// answers unknown_method.
var methods = map[string]methodSpec{
	"apps.connections.open":        {token: TokenApp, headerOnly: true, handle: (*Server).apiConnectionsOpen},
	"auth.test":                    {token: TokenBot, user: true, handle: (*Server).apiAuthTest},
	"auth.teams.list":              {token: TokenBot, user: true, handle: (*Server).apiAuthTeamsList},
	"bots.info":                    {token: TokenBot, team: teamOrEnterprise, handle: (*Server).apiBotsInfo},
	"chat.postMessage":             {token: TokenBot, handle: (*Server).apiPostMessage},
	"chat.update":                  {token: TokenBot, handle: (*Server).apiUpdate},
	"chat.postEphemeral":           {token: TokenBot, handle: (*Server).apiPostEphemeral},
	"chat.delete":                  {token: TokenBot, user: true, handle: (*Server).apiDelete},
	"chat.getPermalink":            {token: TokenBot, handle: (*Server).apiPermalink},
	"reactions.add":                {token: TokenBot, handle: (*Server).apiReactionsAdd},
	"reactions.remove":             {token: TokenBot, handle: (*Server).apiReactionsRemove},
	"conversations.info":           {token: TokenBot, handle: (*Server).apiConversationsInfo},
	"conversations.history":        {token: TokenBot, handle: (*Server).apiConversationsHistory},
	"conversations.replies":        {token: TokenBot, handle: (*Server).apiConversationsReplies},
	"conversations.join":           {token: TokenBot, handle: (*Server).apiConversationsJoin},
	"users.info":                   {token: TokenBot, user: true, handle: (*Server).apiUsersInfo},
	"team.info":                    {token: TokenBot, handle: (*Server).apiTeamInfo},
	"usergroups.users.list":        {token: TokenBot, team: teamRequired, handle: (*Server).apiUsergroupsUsersList},
	"usergroups.list":              {token: TokenBot, team: teamRequired, handle: (*Server).apiUsergroupsList},
	"files.delete":                 {token: TokenBot, user: true, handle: (*Server).apiFilesDelete},
	"files.info":                   {token: TokenBot, handle: (*Server).apiFilesInfo},
	"views.publish":                {token: TokenBot, handle: (*Server).apiViewsPublish},
	"users.conversations":          {token: TokenBot, team: teamRequired, handle: (*Server).apiUsersConversations},
	"conversations.members":        {token: TokenBot, handle: (*Server).apiConversationsMembers},
	"files.getUploadURLExternal":   {token: TokenBot, handle: (*Server).apiGetUploadURLExternal},
	"files.completeUploadExternal": {token: TokenBot, handle: (*Server).apiCompleteUploadExternal},
}

// handleAPI serves <base>/api/<method>.
func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, body, perr := readParams(r)
	token, source := requestToken(r, params)
	params.Del("token")
	c := &apiCall{method: method, params: params, at: time.Now(), token: token, source: source, kind: s.tokenKind(token)}
	call := &Call{
		Method: method, HTTPMethod: r.Method, Path: r.URL.Path, Time: c.at,
		Params: cloneValues(params), JSON: body,
		Token: token, TokenSource: source, TokenKind: c.kind,
	}

	spec, known := methods[method]
	var res apiResult
	switch {
	case !known:
		res = errResult("unknown_method")
	case errors.Is(perr, errInvalidJSON):
		res = errResult("invalid_json")
	case perr != nil:
		res = errResult("invalid_form_data")
	default:
		res = authorize(spec, c)
	}
	if !res.set() {
		var ok bool
		if res, ok = s.applyFault(r, method, call); !ok {
			return
		}
	}

	s.mu.Lock()
	if !res.set() {
		var admitted bool
		if res, admitted = s.admitLocked(c); admitted {
			if res = s.orgAccessLocked(spec, c); !res.set() {
				res = spec.handle(s, c)
			}
		}
	}
	s.recordLocked(call, &res)
	s.notifyLocked()
	s.mu.Unlock()
	if scopes, ok := s.tokenScopes(c); ok {
		// Slack names a valid token's scopes on every Web API answer.
		res.header = res.header.Clone()
		if res.header == nil {
			res.header = http.Header{}
		}
		res.header.Set("X-OAuth-Scopes", strings.Join(scopes, ","))
	}
	writeResult(w, r, res)
}

// tokenScopes returns the scopes of the call's token, and false for a
// missing or invalid token (Slack's answer then names none).
func (s *Server) tokenScopes(c *apiCall) ([]string, bool) {
	switch c.kind {
	case TokenBot:
		return s.cfg.botScopes, true
	case TokenApp:
		return AppTokenScopes, true
	case TokenUser:
		return s.cfg.userTokens[c.token].Scopes, true
	}
	return nil, false
}

// applyFault consumes a fault for method: it waits its delay and returns its
// answer, if any. It returns false when the request or the server ended
// during the delay.
func (s *Server) applyFault(r *http.Request, method string, call *Call) (apiResult, bool) {
	s.mu.Lock()
	f, has := s.takeFaultLocked(method)
	s.mu.Unlock()
	if !has {
		return apiResult{}, true
	}
	if !s.sleep(r.Context(), f.Delay) {
		return apiResult{}, false
	}
	res, answered := faultAnswer(f)
	call.Fault = answered
	return res, true
}

// recordLocked stores the call with the answer given, marshalling a JSON
// answer once into res.raw so the same bytes are recorded and written.
func (s *Server) recordLocked(call *Call, res *apiResult) {
	if res.body != nil && res.raw == nil {
		b, err := json.Marshal(res.body)
		if err != nil {
			b = []byte(`{"ok":false,"error":"fake_internal_error"}`)
		}
		res.raw, res.contentType = b, "application/json; charset=utf-8"
	}
	call.Status = cmp.Or(res.status, http.StatusOK)
	if res.redirect != "" {
		call.Status = http.StatusFound
	}
	call.Error = res.errCode
	if res.body != nil {
		call.Response = res.raw
	}
	s.st.calls = append(s.st.calls, call)
}

func writeResult(w http.ResponseWriter, r *http.Request, res apiResult) {
	for k, v := range res.header {
		w.Header()[k] = v
	}
	switch {
	case res.redirect != "":
		http.Redirect(w, r, res.redirect, http.StatusFound)
	case res.html != "":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(cmp.Or(res.status, http.StatusOK))
		_, _ = io.WriteString(w, res.html)
	default:
		if res.contentType != "" {
			w.Header().Set("Content-Type", res.contentType)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(res.raw)))
		w.WriteHeader(cmp.Or(res.status, http.StatusOK))
		_, _ = w.Write(res.raw)
	}
}

// readParams collects query and body parameters. A JSON body's top-level
// fields become parameters too (strings unquoted, other values as JSON).
func readParams(r *http.Request) (url.Values, json.RawMessage, error) {
	params := r.URL.Query()
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		b, err := io.ReadAll(io.LimitReader(r.Body, maxAPIBody))
		if err != nil {
			return params, nil, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			return params, nil, nil
		}
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(b, &fields); err != nil {
			return params, b, fmt.Errorf("%w: %v", errInvalidJSON, err)
		}
		for k, v := range fields {
			var str string
			if json.Unmarshal(v, &str) == nil {
				params.Set(k, str)
			} else {
				params.Set(k, string(v))
			}
		}
		return params, b, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			return params, nil, err
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = append(params[k], v...)
		}
	default:
		if r.Method != http.MethodGet {
			r.Body = http.MaxBytesReader(nil, r.Body, maxAPIBody)
			if err := r.ParseForm(); err != nil {
				return params, nil, err
			}
			for k, v := range r.PostForm {
				params[k] = append(params[k], v...)
			}
		}
	}
	return params, nil, nil
}

// requestToken returns the token from "Authorization: Bearer" or, failing
// that, the token parameter (slack-go sends it as a form field for most
// methods, in the header for GET and JSON methods).
func requestToken(r *http.Request, params url.Values) (token, source string) {
	if h := r.Header.Get("Authorization"); h != "" {
		if t, ok := strings.CutPrefix(h, "Bearer "); ok {
			return strings.TrimSpace(t), "header"
		}
	}
	if t := params.Get("token"); t != "" {
		return t, "form"
	}
	return "", ""
}

func (s *Server) tokenKind(token string) string {
	switch token {
	case "":
		return ""
	case s.cfg.botToken:
		return TokenBot
	case s.cfg.appToken:
		return TokenApp
	}
	if _, ok := s.cfg.userTokens[token]; ok {
		return TokenUser
	}
	return TokenInvalid
}

// authorize answers Slack's auth errors, or returns an unset result.
func authorize(spec methodSpec, c *apiCall) apiResult {
	if spec.headerOnly && c.source != "header" {
		// apps.connections.open wants the app token in the header; a
		// form token is not accepted (docs.slack.dev apps.connections.open).
		return errResult("not_authed")
	}
	switch c.kind {
	case "":
		return errResult("not_authed")
	case TokenInvalid:
		return errResult("invalid_auth")
	case spec.token:
		return apiResult{}
	case TokenUser:
		if spec.user {
			return apiResult{}
		}
	}
	return errResult("not_allowed_token_type")
}

func boolParam(p url.Values, key string) (value, present bool) {
	v, ok := p[key]
	if !ok || len(v) == 0 {
		return false, false
	}
	b, err := strconv.ParseBool(v[0])
	if err != nil {
		return v[0] == "1", true
	}
	return b, true
}

func (s *Server) apiConnectionsOpen(c *apiCall) apiResult {
	now := time.Now()
	for t, exp := range s.tickets {
		if now.After(exp) {
			delete(s.tickets, t)
		}
	}
	ticket := randomHex(16)
	s.tickets[ticket] = now.Add(ticketTTL)
	u := "ws" + strings.TrimPrefix(s.base, "http") + "/link/?ticket=" + ticket + "&app_id=" + url.QueryEscape(s.cfg.appID)
	return okResult(map[string]any{"url": u})
}

// apiAuthTest answers like Slack for a bot token. Slack's auth.test carries
// no app ID (nor does slack-go's AuthTestResponse): get it from hello's
// connection_info.app_id, an event's api_app_id, or bots.info.
//
// With an Org (WithOrg) the bot token is an org-level token and auth.test
// answers for the org-wide install: team the org's name, team_id and
// enterprise_id the enterprise id, is_enterprise_install true, url the
// org's https://<domain>.enterprise.slack.com/ (an org-wide install has no
// workspace of its own: oauth.v2.access gives "team": null and the
// enterprise, api.slack.com/enterprise/apps/reference; the enterprise id
// in team_id is what org installs are seen to answer, e.g.
// github.com/lobu-ai/lobu pull 3047). A user token answers for its user's
// home workspace, with enterprise_id and is_enterprise_install false.
func (s *Server) apiAuthTest(c *apiCall) apiResult {
	if c.kind == TokenUser {
		ut := s.cfg.userTokens[c.token]
		name := ut.User
		u := s.st.users[ut.User]
		if u != nil {
			name = u.Name
		}
		fields := map[string]any{
			"url": s.base + "/", "team": s.cfg.teamName, "user": name,
			"team_id": s.cfg.teamID, "user_id": ut.User, "is_enterprise_install": false,
		}
		if s.grid() {
			w, _ := s.workspace(s.homeTeamLocked(u))
			fields["url"] = "https://" + w.Domain + ".enterprise.slack.com/"
			fields["team"], fields["team_id"], fields["enterprise_id"] = w.Name, w.ID, s.cfg.org.ID
		}
		return okResult(fields) // X-OAuth-Scopes: handleAPI
	}
	fields := map[string]any{
		"url":                   s.base + "/",
		"team":                  s.cfg.teamName,
		"user":                  s.cfg.botName,
		"team_id":               s.cfg.teamID,
		"user_id":               s.cfg.botUserID,
		"bot_id":                s.cfg.botID,
		"is_enterprise_install": false,
	}
	if o := s.cfg.org; o != nil {
		fields["url"] = "https://" + o.Domain + ".enterprise.slack.com/"
		fields["team"], fields["team_id"], fields["enterprise_id"] = o.Name, o.ID, o.ID
		fields["is_enterprise_install"] = true
	}
	return okResult(fields) // X-OAuth-Scopes: handleAPI
}

func (s *Server) apiBotsInfo(c *apiCall) apiResult {
	if b := c.params.Get("bot"); b != "" && b != s.cfg.botID {
		return errResult("bot_not_found")
	}
	return okResult(map[string]any{"bot": map[string]any{
		"id": s.cfg.botID, "deleted": false, "name": s.cfg.botName, "updated": 1700000000,
		"app_id": s.cfg.appID, "user_id": s.cfg.botUserID, "icons": map[string]any{},
	}})
}

// postableChannelLocked returns the channel, or the error posting to it gives.
func (s *Server) postableChannelLocked(id string) (*Channel, apiResult) {
	ch := s.st.channels[id]
	if ch == nil && (strings.HasPrefix(id, "U") || strings.HasPrefix(id, "W")) {
		// chat.postMessage with a user id as channel posts in the app's
		// DM with that user, its Messages tab (docs.slack.dev,
		// chat.postMessage: "channel … Can be … a user ID").
		if _, known := s.st.users[id]; known {
			ch = s.imWithLocked(id)
		}
	}
	switch {
	case ch == nil:
		return nil, errResult("channel_not_found")
	case ch.Archived:
		return nil, errResult("is_archived")
	case ch.NotMember:
		return nil, errResult("not_in_channel")
	}
	return ch, apiResult{}
}

// content is the text/blocks/attachments of a post or update.
type content struct {
	text                       string
	blocks, attachments        json.RawMessage
	hasText, hasBlocks, hasAtt bool
	truncated                  bool
}

func (c content) empty() bool {
	return c.text == "" && isEmptyJSONArray(c.blocks) && isEmptyJSONArray(c.attachments)
}

func isEmptyJSONArray(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || bytes.Equal(t, []byte("[]")) || bytes.Equal(t, []byte("null"))
}

// readContent reads and checks text, blocks and attachments.
func readContent(p url.Values) (content, apiResult) {
	var c content
	if v, ok := p["text"]; ok && len(v) > 0 {
		c.text, c.hasText = v[0], true
		if utf8.RuneCountInString(c.text) > maxTextRunes {
			c.text, c.truncated = string([]rune(c.text)[:maxTextRunes]), true
		}
	}
	if v, ok := p["blocks"]; ok && len(v) > 0 {
		c.blocks, c.hasBlocks = json.RawMessage(v[0]), true
		if code, msgs := validateBlocks(c.blocks); code != "" {
			return c, errResultMessages(code, msgs)
		}
	}
	if v, ok := p["attachments"]; ok && len(v) > 0 {
		c.attachments, c.hasAtt = json.RawMessage(v[0]), true
		var a []json.RawMessage
		if json.Unmarshal(c.attachments, &a) != nil {
			return c, errResult("invalid_attachments")
		}
	}
	return c, apiResult{}
}

func (s *Server) apiPostMessage(c *apiCall) apiResult {
	p := c.params
	ch, res := s.postableChannelLocked(p.Get("channel"))
	if ch == nil {
		return res
	}
	body, res := readContent(p)
	if res.set() {
		return res
	}
	if body.empty() {
		return errResult("no_text")
	}
	now := time.Now()
	if last, ok := s.lastPost[ch.ID]; ok && now.Sub(last) < time.Second {
		if s.cfg.enforcePacing {
			r := errResult("ratelimited")
			r.status, r.header = http.StatusTooManyRequests, http.Header{"Retry-After": {"1"}}
			return r
		}
		s.st.pace = append(s.st.pace, PaceViolation{Channel: ch.ID, At: now, Gap: now.Sub(last)})
	}
	s.lastPost[ch.ID] = now

	m := &Message{
		Channel: ch.ID, TS: s.nextTSLocked(), ThreadTS: p.Get("thread_ts"),
		User: s.cfg.botUserID, BotID: s.cfg.botID, AppID: s.cfg.appID, Bot: true, Via: c.method,
		Text: body.text, Blocks: body.blocks, Attachments: body.attachments, Truncated: body.truncated,
		Params: cloneValues(p), PostedAt: now, Reactions: map[string][]string{},
	}
	if v, ok := boolParam(p, "unfurl_links"); ok {
		m.UnfurlLinks = &v
	}
	if v, ok := boolParam(p, "unfurl_media"); ok {
		m.UnfurlMedia = &v
	}
	m.ReplyBroadcast, _ = boolParam(p, "reply_broadcast")
	m.Versions = []MessageVersion{{At: now, Via: c.method, Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments}}
	s.st.addMessage(m)
	echoType := ""
	if m.ReplyBroadcast && m.IsReply() {
		echoType = "thread_broadcast"
	}
	s.echoMessageLocked(m, echoType)
	return okResult(map[string]any{"channel": ch.ID, "ts": m.TS, "message": s.messageJSON(m)})
}

func (s *Server) apiUpdate(c *apiCall) apiResult {
	p := c.params
	if s.st.channels[p.Get("channel")] == nil {
		return errResult("channel_not_found")
	}
	m := s.st.message(p.Get("channel"), p.Get("ts"))
	switch {
	case m == nil || m.Deleted:
		return errResult("message_not_found")
	case !m.Bot:
		return errResult("cant_update_message")
	}
	body, res := readContent(p)
	if res.set() {
		return res
	}
	if !body.hasText && !body.hasBlocks && !body.hasAtt {
		return errResult("no_text")
	}
	prev := m.clone()
	s.updateMessageLocked(m, body, c.method)
	s.echoChangedLocked(&prev, m)
	return okResult(map[string]any{"channel": m.Channel, "ts": m.TS, "text": m.Text, "message": s.messageJSON(m)})
}

// updateMessageLocked replaces the parts of m that body carries (chat.update
// keeps what it is not given; blocks=[] clears the blocks).
func (s *Server) updateMessageLocked(m *Message, body content, via string) {
	if body.hasText {
		m.Text, m.Truncated = body.text, body.truncated
	}
	if body.hasBlocks {
		m.Blocks = body.blocks
	}
	if body.hasAtt {
		m.Attachments = body.attachments
	}
	m.EditedTS = s.nextTSLocked()
	m.Versions = append(m.Versions, MessageVersion{At: time.Now(), Via: via, Text: m.Text, Blocks: m.Blocks, Attachments: m.Attachments})
}

func (s *Server) apiPostEphemeral(c *apiCall) apiResult {
	p := c.params
	ch, res := s.postableChannelLocked(p.Get("channel"))
	if ch == nil {
		return res
	}
	if s.st.users[p.Get("user")] == nil {
		return errResult("user_not_in_channel")
	}
	body, res := readContent(p)
	if res.set() {
		return res
	}
	if body.empty() {
		return errResult("no_text")
	}
	e := &Ephemeral{
		Channel: ch.ID, User: p.Get("user"), TS: s.nextTSLocked(), ThreadTS: p.Get("thread_ts"), Via: c.method,
		Text: body.text, Blocks: body.blocks, Attachments: body.attachments, Params: cloneValues(p), At: time.Now(),
	}
	s.st.ephemerals = append(s.st.ephemerals, e)
	return okResult(map[string]any{"message_ts": e.TS})
}

func (s *Server) apiDelete(c *apiCall) apiResult {
	p := c.params
	if s.st.channels[p.Get("channel")] == nil {
		return errResult("channel_not_found")
	}
	if res := s.userScopeLocked(c, "chat:write"); res.set() {
		return res
	}
	m := s.st.message(p.Get("channel"), p.Get("ts"))
	switch {
	case m == nil || m.Deleted:
		return errResult("message_not_found")
	case !s.mayDeleteLocked(c, m.Bot, m.User, m.Team):
		return errResult("cant_delete_message")
	}
	m.Deleted = true
	s.echoDeletedLocked(m)
	return okResult(map[string]any{"channel": m.Channel, "ts": m.TS})
}

// userScopeLocked answers missing_scope to a user token without scope.
func (s *Server) userScopeLocked(c *apiCall, scope string) apiResult {
	if c.kind != TokenUser {
		return apiResult{}
	}
	if !slices.Contains(s.cfg.userTokens[c.token].Scopes, scope) {
		r := errResult("missing_scope")
		r.body["needed"] = scope
		return r
	}
	return apiResult{}
}

// mayDeleteLocked is Slack's deletion rule (docs.slack.dev chat.delete,
// files.delete): a bot token deletes only what the app posted; a user
// token deletes the user's own content, and a workspace admin's or
// owner's deletes other members' too — but not content from another
// organisation in a Slack Connect channel (team set and not this one).
// With an Org (WithOrg) the admin's token is an Org Admin's or Owner's:
// it deletes in every workspace of the org, granted to the app or not.
func (s *Server) mayDeleteLocked(c *apiCall, byBot bool, author, team string) bool {
	if c.kind != TokenUser {
		return byBot
	}
	ut := s.cfg.userTokens[c.token]
	if !byBot && author == ut.User {
		return true
	}
	if team != "" && !s.isOrgTeam(team) {
		return false
	}
	u := s.st.users[ut.User]
	return u != nil && (u.IsAdmin || u.IsOwner)
}

// apiFilesDelete deletes a file under the same rules as chat.delete: the
// file is then gone (files.info answers file_deleted).
func (s *Server) apiFilesDelete(c *apiCall) apiResult {
	if res := s.userScopeLocked(c, "files:write"); res.set() {
		return res
	}
	f := s.st.files[c.params.Get("file")]
	switch {
	case f == nil || f.Deleted:
		return errResult("file_not_found")
	case !s.mayDeleteLocked(c, f.User == s.cfg.botUserID, f.User, f.Team):
		return errResult("cant_delete_file")
	}
	f.Deleted = true
	return okResult(nil)
}

func (s *Server) apiPermalink(c *apiCall) apiResult {
	p := c.params
	if s.st.channels[p.Get("channel")] == nil {
		return errResult("channel_not_found")
	}
	m := s.st.message(p.Get("channel"), p.Get("message_ts"))
	if m == nil || m.Deleted {
		return errResult("message_not_found")
	}
	return okResult(map[string]any{"channel": m.Channel, "permalink": s.permalink(m)})
}

// permalink has Slack's shape: /archives/<channel>/p<ts without the dot>,
// with thread_ts and cid for a reply.
func (s *Server) permalink(m *Message) string {
	u := s.base + "/archives/" + m.Channel + "/p" + strings.Replace(m.TS, ".", "", 1)
	if m.IsReply() {
		u += "?thread_ts=" + m.ThreadTS + "&cid=" + m.Channel
	}
	return u
}

// reactionTarget finds the message a reactions.* call names.
func (s *Server) reactionTarget(p url.Values) (*Message, string, apiResult) {
	name := p.Get("name")
	if name == "" || strings.HasPrefix(name, ":") || strings.HasSuffix(name, ":") {
		return nil, "", errResult("invalid_name")
	}
	if p.Get("channel") == "" || p.Get("timestamp") == "" {
		return nil, "", errResult("no_item_specified")
	}
	if s.st.channels[p.Get("channel")] == nil {
		return nil, "", errResult("channel_not_found")
	}
	m := s.st.message(p.Get("channel"), p.Get("timestamp"))
	if m == nil || m.Deleted {
		return nil, "", errResult("message_not_found")
	}
	return m, name, apiResult{}
}

func (s *Server) apiReactionsAdd(c *apiCall) apiResult {
	m, name, res := s.reactionTarget(c.params)
	if m == nil {
		return res
	}
	if slices.Contains(m.Reactions[name], s.cfg.botUserID) {
		return errResult("already_reacted")
	}
	if m.Reactions == nil {
		m.Reactions = map[string][]string{}
	}
	m.Reactions[name] = append(m.Reactions[name], s.cfg.botUserID)
	return okResult(nil)
}

func (s *Server) apiReactionsRemove(c *apiCall) apiResult {
	m, name, res := s.reactionTarget(c.params)
	if m == nil {
		return res
	}
	users := m.Reactions[name]
	i := slices.Index(users, s.cfg.botUserID)
	if i < 0 {
		return errResult("no_reaction")
	}
	users = slices.Delete(slices.Clone(users), i, i+1)
	if len(users) == 0 {
		delete(m.Reactions, name)
	} else {
		m.Reactions[name] = users
	}
	return okResult(nil)
}

func (s *Server) apiConversationsInfo(c *apiCall) apiResult {
	ch := s.st.channels[c.params.Get("channel")]
	if ch == nil || ((ch.Private || ch.MPIM || ch.IM) && ch.NotMember) {
		// A private conversation the bot is not in (someone else's DM,
		// group DM or private channel) does not exist for its token.
		return errResult("channel_not_found")
	}
	withMembers, _ := boolParam(c.params, "include_num_members")
	return okResult(map[string]any{"channel": s.channelJSON(ch, withMembers)})
}

// apiTeamInfo is team.info (docs.slack.dev/reference/methods/team.info):
// the workspace named by team (default: the install's), with its id, name,
// domain and email_domain; a workspace the app cannot see is
// team_not_found.
func (s *Server) apiTeamInfo(c *apiCall) apiResult {
	id := cmp.Or(c.params.Get("team"), s.cfg.teamID)
	w, ok := s.workspace(id)
	if !ok {
		return errResult("team_not_found")
	}
	return okResult(map[string]any{"team": map[string]any{"id": w.ID, "name": cmp.Or(w.Name, w.ID), "domain": w.Domain,
		"email_domain": w.EmailDomain}})
}

func (s *Server) apiUsersInfo(c *apiCall) apiResult {
	u := s.st.users[c.params.Get("user")]
	if u == nil {
		return errResult("user_not_found")
	}
	return okResult(map[string]any{"user": s.userJSON(u)})
}

// apiUsergroupsUsersList lists a user group's members. With an org token
// the group must be in the team_id workspace: another workspace's group is
// no_such_subteam there.
func (s *Server) apiUsergroupsUsersList(c *apiCall) apiResult {
	g := s.st.usergroups[c.params.Get("usergroup")]
	if team := s.orgTeamParam(c); g == nil || team != "" && cmp.Or(g.team, s.cfg.teamID) != team {
		return errResult("no_such_subteam")
	}
	if inc, _ := boolParam(c.params, "include_disabled"); g.disabled && !inc {
		return errResult("no_such_subteam")
	}
	return okResult(map[string]any{"users": append([]string{}, g.members...)})
}

// apiUsergroupsList lists the workspace's user groups (docs.slack.dev
// usergroups.list: id, team_id, is_usergroup, name, handle, user_count;
// disabled groups only with include_disabled), sorted by id. With an org
// token, the groups of the team_id workspace.
func (s *Server) apiUsergroupsList(c *apiCall) apiResult {
	inc, _ := boolParam(c.params, "include_disabled")
	team := s.orgTeamParam(c)
	ids := make([]string, 0, len(s.st.usergroups))
	for id, g := range s.st.usergroups {
		if (!g.disabled || inc) && (team == "" || cmp.Or(g.team, s.cfg.teamID) == team) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	groups := make([]any, 0, len(ids))
	for _, id := range ids {
		g := s.st.usergroups[id]
		groups = append(groups, map[string]any{"id": g.id, "team_id": cmp.Or(g.team, s.cfg.teamID), "is_usergroup": true,
			"name": g.handle, "handle": g.handle, "user_count": len(g.members), "date_delete": 0})
	}
	return okResult(map[string]any{"usergroups": groups})
}

func (s *Server) apiFilesInfo(c *apiCall) apiResult {
	f := s.st.files[c.params.Get("file")]
	switch {
	case f == nil || !s.fileVisibleLocked(f, c.kind):
		return errResult("file_not_found")
	case f.Deleted:
		return errResult("file_deleted")
	}
	return okResult(map[string]any{
		"file":              s.fileJSON(f),
		"comments":          []any{},
		"paging":            map[string]any{"count": 100, "total": 0, "page": 1, "pages": 0},
		"response_metadata": map[string]any{"next_cursor": ""},
	})
}

// handleRoot serves Slack's sign-in page, where a file URL requested without
// a valid token is redirected (/?redir=<file path>), with status 200.
func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, signInPage, s.cfg.teamName, s.cfg.teamName)
}

const signInPage = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in | Slack</title></head>
<body><h1>Sign in to %s</h1><p>%s.slack.com</p>
<form action="/signin" method="post"><input type="email" name="email"><button>Sign in with email</button></form>
</body></html>
`

var (
	errNoFilePart  = errors.New("no file part in the multipart body")
	errInvalidJSON = errors.New("invalid JSON body")
)
