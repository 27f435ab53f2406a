package slackfake

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Default identities. They pass the bot's token-prefix checks (xoxb-, xapp-).
const (
	DefaultBotToken  = "xoxb-1000000001-2000000002-fakeslackbottoken"
	DefaultAppToken  = "xapp-1-AFAKEAPP01-3000000003-fakeslackapptoken"
	DefaultBotUserID = "UFAKEBOT01"
	DefaultBotID     = "BFAKEBOT01"
	DefaultBotName   = "verdictbot"
	DefaultAppID     = "AFAKEAPP01"
	DefaultTeamID    = "TFAKETEAM1"
	DefaultTeamName  = "fake-workspace"
)

// ErrNotConnected is returned when a slash command, interaction or raw frame
// is delivered while no Socket Mode connection is open. (Events are queued
// instead: Slack retries them; a user's click or command just fails.)
var ErrNotConnected = errors.New("slackfake: no Socket Mode connection is open")

// ErrClosed is returned by waits and deliveries after Close.
var ErrClosed = errors.New("slackfake: server closed")

type config struct {
	botToken, appToken        string
	botScopes                 []string // WithBotScopes
	botUserID, botID, botName string
	appID, teamID, teamName   string
	emailDomain               string
	addr                      string
	pingInterval              time.Duration
	ackTimeout                time.Duration
	maxRetries                int
	connLifetime              time.Duration
	disconnectGrace           time.Duration
	echoOwn                   bool
	enforcePacing             bool
	limits                    *RateLimits
	maxConns                  int
	policy                    DeliveryPolicy
	logf                      func(format string, args ...any)
	userTokens                map[string]UserToken
	tls                       *tls.Config // WithTLS
	host                      string      // WithTLS: the name in the URLs handed out
	org                       *Org        // WithOrg, or nil
	tierLimits                bool        // WithTierLimits
	limitClock                func() time.Time
}

func defaultConfig() config {
	return config{
		botToken:  DefaultBotToken,
		appToken:  DefaultAppToken,
		botScopes: DefaultBotScopes,
		botUserID: DefaultBotUserID,
		botID:     DefaultBotID,
		botName:   DefaultBotName,
		appID:     DefaultAppID,
		teamID:    DefaultTeamID,
		teamName:  DefaultTeamName,
		addr:      "127.0.0.1:0",
		// slack-go drops a socket that saw no ping for 30 s
		// (socketmode.defaultMaxPingInterval); Slack pings every few seconds.
		pingInterval: 5 * time.Second,
		// Events API: "respond within three seconds" (docs.slack.dev/apis/events-api).
		ackTimeout: 3 * time.Second,
		// "up to 3 retries" (docs.slack.dev/apis/events-api "Retries").
		maxRetries:      3,
		disconnectGrace: 2 * time.Second,
		echoOwn:         true,
		maxConns:        DefaultMaxConnections,
	}
}

// Option configures a Server.
type Option func(*config)

// WithBotToken sets the bot token (default DefaultBotToken).
func WithBotToken(token string) Option { return func(c *config) { c.botToken = token } }

// DefaultBotScopes are the bot token's scopes by default: those
// manifest.yaml requests, as an app installed from it has them
// (internal/manifest's tests hold the two lists equal).
var DefaultBotScopes = []string{
	"channels:history", "groups:history", "chat:write", "reactions:write", "reactions:read",
	"files:read", "files:write", "commands", "usergroups:read", "channels:read", "groups:read",
	"im:history", "app_mentions:read", "users:read", "team:read",
}

// AppTokenScopes are the app-level token's scopes: connections:write,
// the one Socket Mode needs.
var AppTokenScopes = []string{"connections:write"}

// WithBotScopes sets the scopes granted to the bot token (default
// DefaultBotScopes), as an install that granted other scopes than
// manifest.yaml's has them: every Web API answer to the bot token names
// them in its X-OAuth-Scopes header, comma-separated, as Slack's answers
// do (Slack's Node SDK reads that header of every answer into
// response_metadata.scopes: slackapi/node-slack-sdk,
// packages/web-api/src/WebClient.ts, WebAPICallResult; slack-go v0.35.0
// exposes auth.test's as AuthTestResponse.Header). They are reported,
// not enforced: a method answers as if every scope it needs were
// granted.
func WithBotScopes(scopes ...string) Option {
	return func(c *config) { c.botScopes = slices.Clone(scopes) }
}

// UserToken is a user token (xoxp-…) the Web API accepts, as a workspace
// member gets when installing the app with user scopes: User is the user it
// acts as (AddUser them, with IsAdmin/IsOwner as needed), Scopes the user
// scopes granted (auth.test's X-OAuth-Scopes; chat.delete needs chat:write,
// files.delete files:write, else missing_scope).
type UserToken struct {
	Token  string
	User   string
	Scopes []string
}

// WithUserToken makes the Web API accept a user token. chat.delete,
// files.delete, auth.test and users.info take it; a method that wants a bot
// token answers not_allowed_token_type to it.
func WithUserToken(t UserToken) Option {
	return func(c *config) {
		if c.userTokens == nil {
			c.userTokens = map[string]UserToken{}
		}
		c.userTokens[t.Token] = t
	}
}

// WithAppToken sets the app-level token (default DefaultAppToken).
func WithAppToken(token string) Option { return func(c *config) { c.appToken = token } }

// WithBotUser sets the bot's user ID, bot ID and name.
func WithBotUser(userID, botID, name string) Option {
	return func(c *config) { c.botUserID, c.botID, c.botName = userID, botID, name }
}

// WithAppID sets the app ID (hello connection_info.app_id, api_app_id).
func WithAppID(id string) Option { return func(c *config) { c.appID = id } }

// WithTeam sets the workspace ID and name.
func WithTeam(id, name string) Option { return func(c *config) { c.teamID, c.teamName = id, name } }

// WithEmailDomain sets the workspace's email_domain (team.info; a
// workspace install: see Workspace.EmailDomain for an org's).
func WithEmailDomain(d string) Option { return func(c *config) { c.emailDomain = d } }

// WithAddr sets the listen address (default "127.0.0.1:0", a free port). The
// URLs the fake hands out (API, WebSocket, files) use this address, with an
// unspecified IP replaced by 127.0.0.1.
func WithAddr(addr string) Option { return func(c *config) { c.addr = addr } }

// WithPingInterval sets how often the fake sends WebSocket pings (default
// 5 s). Zero disables pings, so slack-go drops the socket after its
// OptionPingInterval (30 s by default).
func WithPingInterval(d time.Duration) Option { return func(c *config) { c.pingInterval = d } }

// WithAckTimeout sets how long an events_api envelope may stay unacked
// before it is redelivered (default 3 s, Slack's window).
func WithAckTimeout(d time.Duration) Option { return func(c *config) { c.ackTimeout = d } }

// WithMaxRetries sets how many times an unacked event is redelivered (default 3).
func WithMaxRetries(n int) Option { return func(c *config) { c.maxRetries = n } }

// WithConnectionLifetime makes the fake refresh every connection after d:
// it sends {"type":"disconnect","reason":"refresh_requested"} and closes the
// socket, as Slack does every few hours. Default: never, except that a URL
// with debug_reconnects=true (slack.OptionDebug) lives 360 s as on Slack.
func WithConnectionLifetime(d time.Duration) Option { return func(c *config) { c.connLifetime = d } }

// WithDisconnectGrace sets how long the fake keeps a socket open after a
// disconnect frame if the client does not close it first (default 2 s).
func WithDisconnectGrace(d time.Duration) Option { return func(c *config) { c.disconnectGrace = d } }

// WithEchoOwnMessages controls whether the bot's own Web API actions come back
// as events, as they do on Slack for an app subscribed to message.channels:
// chat.postMessage → message (with bot_id, app_id, bot_profile),
// chat.update → message_changed, chat.delete → message_deleted, an upload →
// message (file_share) and file_shared. Default true.
func WithEchoOwnMessages(on bool) Option { return func(c *config) { c.echoOwn = on } }

// WithPostPacing makes chat.postMessage answer 429 (Retry-After: 1) to a
// post less than a second after the previous one in the same channel.
// Without it such posts succeed and are only recorded as PaceViolations.
func WithPostPacing(enforce bool) Option { return func(c *config) { c.enforcePacing = enforce } }

// WithLogf logs the fake's activity (connections, deliveries) through logf.
func WithLogf(logf func(format string, args ...any)) Option { return func(c *config) { c.logf = logf } }

// WithTLS serves the fake over TLS with cfg, so its URLs are https:// and
// wss:// as Slack's are, and names host (with the listener's port) in every
// URL it hands out (the API URL, the Socket Mode URL, file and response
// URLs) instead of 127.0.0.1. A client reaches that name the way it would
// reach slack.com: through its resolver, or through a proxy that resolves
// it (a proxy is never used for loopback addresses).
func WithTLS(cfg *tls.Config, host string) Option {
	return func(c *config) { c.tls, c.host = cfg, host }
}

// Server is a running fake Slack. All methods are safe for concurrent use.
type Server struct {
	cfg  config
	ln   net.Listener
	http *http.Server
	base string
	done chan struct{}
	wg   sync.WaitGroup

	// fresh are the connections that have not sent a request yet
	// (http.StateNew): Close closes them, since http.Server.Shutdown
	// waits 5 s for such a connection (a client's spare dial, pooled
	// unused) before it counts as idle.
	freshMu sync.Mutex
	fresh   map[net.Conn]struct{}

	mu       sync.Mutex
	closed   bool
	changed  chan struct{}
	st       *State
	faults   []*faultRule
	conns    map[int]*wsConn
	connSeq  int
	policy   DeliveryPolicy
	pending  []*Envelope
	tickets  map[string]time.Time
	timers   map[string]*time.Timer
	targets  map[string]*responseTarget
	lastPost map[string]time.Time
	limits   *limiters       // WithRateLimits, or nil
	granted  map[string]bool // WithOrg: the workspaces the app has access to
	lastTS   int64
	seq      int
}

// New starts a fake Slack listening on 127.0.0.1 (see WithAddr). Call Close
// when done.
func New(opts ...Option) (*Server, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.policy == nil {
		cfg.policy = RandomDelivery(DefaultDeliverySeed)
	}
	if cfg.maxConns < 1 {
		cfg.maxConns = DefaultMaxConnections
	}
	var granted map[string]bool
	if cfg.org != nil {
		if err := cfg.org.normalize(); err != nil {
			return nil, err
		}
		cfg.teamID, cfg.teamName = cfg.org.Workspaces[0].ID, cfg.org.Workspaces[0].Name
		granted = map[string]bool{}
		for _, w := range cfg.org.Workspaces {
			granted[w.ID] = cfg.org.Granted == nil || slices.Contains(cfg.org.Granted, w.ID)
		}
	}
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("slackfake: listen on %s: %w", cfg.addr, err)
	}
	base := "http://" + reachableAddr(ln.Addr())
	if cfg.tls != nil {
		ln = tls.NewListener(ln, cfg.tls)
		base = "https://" + net.JoinHostPort(cfg.host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	s := &Server{
		cfg:      cfg,
		policy:   cfg.policy,
		ln:       ln,
		base:     base,
		done:     make(chan struct{}),
		changed:  make(chan struct{}),
		st:       newState(cfg.ackTimeout),
		conns:    map[int]*wsConn{},
		tickets:  map[string]time.Time{},
		timers:   map[string]*time.Timer{},
		targets:  map[string]*responseTarget{},
		lastPost: map[string]time.Time{},
		granted:  granted,
	}
	if l := cfg.effectiveLimits(); l != nil {
		s.limits = newLimiters(*l)
	}
	s.st.users[cfg.botUserID] = &User{ID: cfg.botUserID, Name: cfg.botName, RealName: cfg.botName, IsBot: true}

	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.handleAPI)
	mux.HandleFunc("/link/", s.handleSocket)
	mux.HandleFunc("/files-pri/", s.handleFileDownload)
	mux.HandleFunc("/upload/", s.handleUpload)
	mux.HandleFunc("/commands/", s.handleResponseURL)
	mux.HandleFunc("/actions/", s.handleResponseURL)
	mux.HandleFunc("/", s.handleRoot)
	s.fresh = map[net.Conn]struct{}{}
	s.http = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ConnState: s.connState}

	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.http.Serve(ln) // returns http.ErrServerClosed on Close
	}()
	return s, nil
}

// Close closes every socket, stops every timer and the HTTP server, and
// waits for the fake's goroutines to end. It is safe to call twice.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	for id, t := range s.timers {
		t.Stop()
		delete(s.timers, id)
	}
	conns := make([]*wsConn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.notifyLocked()
	s.mu.Unlock()

	for _, c := range conns {
		c.close()
	}
	s.freshMu.Lock()
	for c := range s.fresh {
		_ = c.Close()
	}
	s.freshMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.http.Shutdown(ctx)
	if err != nil {
		_ = s.http.Close()
	}
	s.wg.Wait()
	return err
}

// connState keeps Server.fresh.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	s.freshMu.Lock()
	defer s.freshMu.Unlock()
	if st == http.StateNew {
		s.fresh[c] = struct{}{}
	} else {
		delete(s.fresh, c)
	}
}

// URL is the fake's base URL, http://127.0.0.1:port.
func (s *Server) URL() string { return s.base }

// APIURL is the Web API base for slack.OptionAPIURL (and SLACK_API_URL),
// with its trailing slash: http://127.0.0.1:port/api/.
func (s *Server) APIURL() string { return s.base + "/api/" }

// BotToken is the bot token the Web API accepts.
func (s *Server) BotToken() string { return s.cfg.botToken }

// AppToken is the app-level token apps.connections.open accepts.
func (s *Server) AppToken() string { return s.cfg.appToken }

// BotUserID is the bot's user ID (auth.test user_id).
func (s *Server) BotUserID() string { return s.cfg.botUserID }

// BotID is the bot's bot ID (auth.test bot_id, bot_id on its messages).
func (s *Server) BotID() string { return s.cfg.botID }

// AppID is the app's ID (hello connection_info.app_id, api_app_id).
func (s *Server) AppID() string { return s.cfg.appID }

// TeamID is the workspace ID; with an Org, the default workspace (the
// org's first).
func (s *Server) TeamID() string { return s.cfg.teamID }

// AddChannel registers (or replaces) a conversation.
func (s *Server) AddChannel(c Channel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Name == "" {
		c.Name = strings.ToLower(c.ID)
	}
	cc := c
	s.st.channels[c.ID] = &cc
	s.notifyLocked()
}

// AddUser registers (or replaces) a user.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.Name == "" {
		u.Name = strings.ToLower(u.ID)
	}
	uu := u
	s.st.users[u.ID] = &uu
	s.notifyLocked()
}

// AddUserGroup registers (or replaces) a user group for usergroups.users.list,
// in the default workspace.
func (s *Server) AddUserGroup(id, handle string, members ...string) {
	s.AddUserGroupInTeam("", id, handle, members...)
}

// AddUserGroupInTeam registers (or replaces) a user group of the workspace
// team ("" the default one). A user group belongs to one workspace: with
// an org token, usergroups.list and usergroups.users.list see it only with
// that team_id.
func (s *Server) AddUserGroupInTeam(team, id, handle string, members ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.st.usergroups[id] = &usergroup{id: id, handle: handle, team: team, members: append([]string(nil), members...)}
	s.notifyLocked()
}

// AddFile hosts a file, as if a user had uploaded it, and returns it with
// its ID and URLs filled in. Share it in a message with MessageEvent.Files
// or ShareFile.
func (s *Server) AddFile(f File) File {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.addFileLocked(f)
	s.notifyLocked()
	return out
}

// reachableAddr is addr with an unspecified IP (0.0.0.0, ::) replaced by
// 127.0.0.1, so the URLs the fake hands out can be dialled.
func reachableAddr(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return addr.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// notifyLocked wakes every WaitFor. Call it with mu held after a change.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) logf(format string, args ...any) {
	if s.cfg.logf != nil {
		s.cfg.logf("slackfake: "+format, args...)
	}
}

// nextTSLocked returns a new message timestamp, "seconds.micros", strictly
// increasing like Slack's per-channel timestamps.
func (s *Server) nextTSLocked() string {
	us := time.Now().UnixMicro()
	if us <= s.lastTS {
		us = s.lastTS + 1
	}
	s.lastTS = us
	return fmt.Sprintf("%d.%06d", us/1e6, us%1e6)
}

func (s *Server) nextSeqLocked() int {
	s.seq++
	return s.seq
}

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// randomID returns prefix followed by n random upper-case letters and digits,
// the shape of Slack's IDs (C…, F…, Ev…).
func randomID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idAlphabet[int(b[i])%len(idAlphabet)]
	}
	return prefix + string(b)
}

// newUUID returns a random UUID, the shape of Slack's envelope IDs.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}
