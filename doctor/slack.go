package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/slack-go/slack"
)

// slackClient is a Web API client for token against SLACK_API_URL, with
// the proxy from the environment as the bot's (app.slackHTTP) and the
// run's timeout.
func (r *run) slackClient(token string, opts ...slack.Option) *slack.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyFromEnvironment
	base := r.cfg.SlackAPIURL
	if !strings.HasSuffix(base, "/") {
		base += "/"
	}
	return slack.New(token, append([]slack.Option{
		slack.OptionHTTPClient(&http.Client{Transport: tr, Timeout: r.timeout}),
		slack.OptionAPIURL(base),
	}, opts...)...)
}

// install is what auth.test said of the bot token: nil when it did not
// work, and the checks that need it are skipped.
type install struct {
	at  *slack.AuthTestResponse
	bot *slack.Client
}

// orgWide reports whether the bot token is an org-wide install's on
// Enterprise Grid (its team_id is the enterprise id: package grid).
func (in *install) orgWide() bool {
	return in.at.EnterpriseID != "" && in.at.TeamID == in.at.EnterpriseID
}

// slack runs the Slack checks, then the settings that name users,
// groups and channels (which need the bot token).
func (r *run) slack(ctx context.Context) []Result {
	in, out := r.botToken(ctx)
	out = append(out, r.socketMode(ctx, in)...)
	out = append(out, r.adminToken(ctx, in)...)
	out = append(out, r.ids(ctx, in)...)
	return out
}

// Fixes shared by several checks.
const (
	fixBotToken  = "copy the Bot User OAuth Token (xoxb-…) into SLACK_BOT_TOKEN: api.slack.com/apps → the app → OAuth & Permissions (a revoked token is replaced by installing the app again)"
	fixReinstall = "reinstall the app from manifest.yaml: api.slack.com/apps → the app → App Manifest, paste manifest.yaml and save, then Install App → Reinstall to Workspace and approve the scopes " +
		"(update SLACK_BOT_TOKEN if Slack shows a new Bot User OAuth Token)"
	fixSlackNetwork = "check SLACK_API_URL and that this host reaches Slack over https (docs/configuration.md, \"Network: outbound hosts and proxies\": HTTPS_PROXY, NO_PROXY, SSL_CERT_FILE)"
)

// botToken checks SLACK_BOT_TOKEN with auth.test, and its scopes against
// manifest.yaml's. The install is nil when the token did not work.
func (r *run) botToken(ctx context.Context) (*install, []Result) {
	res := Result{Section: secSlack, Name: "bot token"}
	scopesRes := Result{Section: secSlack, Name: "bot scopes", Status: Skip, Detail: "not checked: the bot token did not work"}
	tok := r.cfg.SlackBotToken.Reveal()
	switch {
	case tok == "":
		res.Status, res.Detail, res.Fix = Fail, "SLACK_BOT_TOKEN is not set", fixBotToken
		return nil, []Result{res, scopesRes}
	case !strings.HasPrefix(tok, "xoxb-"):
		res.Status, res.Detail, res.Fix = Fail, "SLACK_BOT_TOKEN does not start with xoxb-: it is not a bot token", fixBotToken
		return nil, []Result{res, scopesRes}
	}
	bot := r.slackClient(tok)
	at, err := within(ctx, r, bot.AuthTestContext)
	if err != nil {
		res.Status, res.Detail, res.Fix = Fail, "auth.test: "+slackProblem(err), slackFix(err, fixBotToken)
		return nil, []Result{res, scopesRes}
	}
	if at.BotID == "" {
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("auth.test: the token is %s's (%s), a user's, not the app's bot", at.User, at.UserID), fixBotToken
		return nil, []Result{res, scopesRes}
	}
	in := &install{at: at, bot: bot}
	res.Status = Pass
	if in.orgWide() {
		res.Detail = fmt.Sprintf("auth.test: bot @%s (%s), installed org-wide in %s (%s)", at.User, at.UserID, at.Team, at.EnterpriseID)
	} else {
		res.Detail = fmt.Sprintf("auth.test: bot @%s (%s) in %s (%s)", at.User, at.UserID, at.Team, at.TeamID)
	}
	return in, []Result{res, r.grantedScopes(scopesRes, at.Header, "bot", r.scopes.bot, fixReinstall)}
}

// grantedScopes compares the X-OAuth-Scopes header of an answer with the
// scopes wanted (manifest.yaml's): a missing one fails with fix, one
// beyond them is a warning.
func (r *run) grantedScopes(res Result, h http.Header, kind string, want []string, fix string) Result {
	raw, ok := h[http.CanonicalHeaderKey("X-OAuth-Scopes")]
	if !ok || len(want) == 0 {
		res.Status, res.Detail = Warn, "not checked: Slack's answer named no scopes (no X-OAuth-Scopes header)"
		res.Fix = "a proxy between this host and Slack may drop the header; compare OAuth & Permissions → Scopes with manifest.yaml by hand"
		if len(want) == 0 {
			res.Detail, res.Fix = "not checked: the manifest built in names no scopes", ""
		}
		return res
	}
	granted := splitScopes(strings.Join(raw, ","))
	var missing, extra []string
	for _, s := range want {
		if !slices.Contains(granted, s) {
			missing = append(missing, s)
		}
	}
	for _, s := range granted {
		if !slices.Contains(want, s) {
			extra = append(extra, s)
		}
	}
	have := len(want) - len(missing)
	switch {
	case len(missing) > 0:
		res.Status, res.Fix = Fail, fix
		res.Detail = fmt.Sprintf("missing %s: Slack granted %d of the %d %s scopes manifest.yaml asks for", strings.Join(missing, ", "), have, len(want), kind)
	case len(extra) > 0:
		res.Status = Warn
		res.Detail = fmt.Sprintf("all %d %s scopes of manifest.yaml, and also %s, which the bot does not use", len(want), kind, strings.Join(extra, ", "))
		res.Fix = "remove them from the app's scopes (OAuth & Permissions, or install from manifest.yaml) and reinstall: the bot needs no more than manifest.yaml's"
	default:
		res.Status, res.Detail, res.Fix = Pass, fmt.Sprintf("all %d %s scopes of manifest.yaml granted, no others", len(want), kind), ""
	}
	return res
}

// splitScopes splits an X-OAuth-Scopes value ("a,b, c").
func splitScopes(v string) []string {
	var out []string
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// socketMode checks SLACK_APP_TOKEN: apps.connections.open, then the
// WebSocket it hands out up to Slack's hello frame, closed at once. An
// envelope Slack would have sent on it in that instant is redelivered to
// the bot's connection when it is not acked (events), as after any
// reconnection. It also checks that both tokens are of the same app.
func (r *run) socketMode(ctx context.Context, in *install) []Result {
	res := Result{Section: secSlack, Name: "Socket Mode"}
	const fixApp = "create an app-level token with the scope connections:write (api.slack.com/apps → the app → Basic Information → App-Level Tokens → Generate) and set it as SLACK_APP_TOKEN; " +
		"Socket Mode must be on (it is in manifest.yaml)"
	tok := r.cfg.SlackAppToken.Reveal()
	switch {
	case tok == "":
		res.Status, res.Detail, res.Fix = Fail, "SLACK_APP_TOKEN is not set", fixApp
		return []Result{res}
	case !strings.HasPrefix(tok, "xapp-"):
		res.Status, res.Detail, res.Fix = Fail, "SLACK_APP_TOKEN does not start with xapp-: it is not an app-level token", fixApp
		return []Result{res}
	}
	api := r.slackClient(r.cfg.SlackBotToken.Reveal(), slack.OptionAppLevelToken(tok))
	wsURL, err := within(ctx, r, func(ctx context.Context) (string, error) {
		_, u, err := api.StartSocketModeContext(ctx)
		return u, err
	})
	if err != nil {
		res.Status, res.Detail, res.Fix = Fail, "apps.connections.open: "+slackProblem(err), slackFix(err, fixApp)
		return []Result{res}
	}
	hello, err := r.hello(ctx, wsURL)
	if err != nil {
		res.Status, res.Detail = Fail, err.Error()
		res.Fix = "allow outbound WebSocket (wss://) connections to Slack from this host, through HTTPS_PROXY if one is needed (docs/configuration.md, \"Network\")"
		var refused *refusedError
		if errors.As(err, &refused) && refused.reason == "too_many_websockets" {
			res.Fix = "the app has Slack's 10 Socket Mode connections open already (docs.slack.dev, Using Socket Mode): stop the replicas or other programs that use this app's SLACK_APP_TOKEN"
		}
		return []Result{res}
	}
	res.Status = Pass
	res.Detail = fmt.Sprintf("apps.connections.open and the WebSocket: Slack said hello (app %s; %s open, this one included)",
		hello.ConnectionInfo.AppID, plural(hello.NumConnections, "connection"))
	if in == nil || hello.ConnectionInfo.AppID == "" {
		return []Result{res}
	}
	// bots.info names the bot token's app: both tokens must be the same
	// app's, or the bot would answer events for another app.
	team := ""
	if in.orgWide() {
		team = in.at.TeamID // the enterprise id, which bots.info accepts (package slackfake, teamOrEnterprise)
	}
	b, err := within(ctx, r, func(ctx context.Context) (*slack.Bot, error) {
		return in.bot.GetBotInfoContext(ctx, slack.GetBotInfoParameters{Bot: in.at.BotID, TeamID: team})
	})
	switch {
	case err != nil:
		res.Detail += "; whether the bot token is of the same app was not checked (bots.info: " + slackProblem(err) + ")"
	case b.AppID != "" && b.AppID != hello.ConnectionInfo.AppID:
		res.Status = Fail
		res.Detail = fmt.Sprintf("SLACK_APP_TOKEN is app %s's, but SLACK_BOT_TOKEN app %s's", hello.ConnectionInfo.AppID, b.AppID)
		res.Fix = "take both tokens from the same app at api.slack.com/apps (Basic Information → App-Level Tokens, and OAuth & Permissions)"
	}
	return []Result{res}
}

// helloFrame is the part of Socket Mode's first frame the check reads
// (docs.slack.dev, Using Socket Mode: hello, or disconnect).
type helloFrame struct {
	Type           string `json:"type"`
	Reason         string `json:"reason"`
	NumConnections int    `json:"num_connections"`
	ConnectionInfo struct {
		AppID string `json:"app_id"`
	} `json:"connection_info"`
}

// refusedError is a disconnect frame where hello was expected.
type refusedError struct{ reason string }

func (e *refusedError) Error() string {
	return "Slack refused the WebSocket: disconnect (" + e.reason + ") instead of hello"
}

// hello opens the Socket Mode WebSocket at wsURL, reads up to its hello
// frame and closes it. Errors name the host only: the URL's ticket opens
// a connection.
func (r *run) hello(ctx context.Context, wsURL string) (helloFrame, error) {
	var h helloFrame
	u, err := url.Parse(wsURL)
	if err != nil || u.Host == "" {
		return h, errors.New("apps.connections.open answered no usable WebSocket URL")
	}
	host := u.Host
	scrub := func(err error) string {
		return strings.NewReplacer(wsURL, u.Scheme+"://"+host+"/…", u.RawQuery, "…").Replace(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	d := websocket.Dialer{Proxy: http.ProxyFromEnvironment, HandshakeTimeout: r.timeout}
	conn, resp, err := d.DialContext(ctx, wsURL, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		if resp != nil {
			return h, fmt.Errorf("the WebSocket to %s failed: HTTP %s", host, resp.Status)
		}
		return h, fmt.Errorf("the WebSocket to %s failed: %s", host, scrub(err))
	}
	defer func() {
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = conn.Close()
	}()
	deadline, _ := ctx.Deadline()
	_ = conn.SetReadDeadline(deadline)
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return h, fmt.Errorf("the WebSocket to %s opened, but no hello came: %s", host, scrub(err))
		}
		h = helloFrame{}
		if json.Unmarshal(data, &h) != nil {
			continue
		}
		switch h.Type {
		case "hello":
			return h, nil
		case "disconnect":
			return h, &refusedError{reason: h.Reason}
		}
	}
}

// adminToken checks SLACK_ADMIN_USER_TOKEN (optional: quarantine's
// removals): whose it is, that they are a workspace admin or owner, and
// its user scopes against manifest.yaml's.
func (r *run) adminToken(ctx context.Context, in *install) []Result {
	res := Result{Section: secSlack, Name: "admin token"}
	scopesRes := Result{Section: secSlack, Name: "admin scopes", Status: Skip, Detail: "not checked: the admin token did not work"}
	const fixAdmin = "as a workspace admin or owner, install the app (api.slack.com/apps → the app → Install App) approving its user scopes, and set the User OAuth Token (xoxp-…) as SLACK_ADMIN_USER_TOKEN"
	tok := r.cfg.SlackAdminUserToken.Reveal()
	switch {
	case tok == "" && r.cfg.Quarantine != "off":
		res.Status, res.Fix = Warn, fixAdmin+", or set VERDICTBOT_QUARANTINE=off"
		res.Detail = fmt.Sprintf("SLACK_ADMIN_USER_TOKEN is not set, but VERDICTBOT_QUARANTINE=%s: quarantine cannot remove messages", r.cfg.Quarantine)
		return []Result{res}
	case tok == "":
		res.Status, res.Detail = Skip, "SLACK_ADMIN_USER_TOKEN not set (optional: only quarantine uses it)"
		return []Result{res}
	case !strings.HasPrefix(tok, "xoxp-"):
		res.Status, res.Detail, res.Fix = Fail, "SLACK_ADMIN_USER_TOKEN does not start with xoxp-: it is not a user token", fixAdmin
		return []Result{res, scopesRes}
	}
	at, err := within(ctx, r, r.slackClient(tok).AuthTestContext)
	switch {
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, "auth.test: "+slackProblem(err), slackFix(err, fixAdmin)
		return []Result{res, scopesRes}
	case at.BotID != "":
		res.Status, res.Detail, res.Fix = Fail, "auth.test: it is a bot token, not an admin's user token", fixAdmin
		return []Result{res, scopesRes}
	}
	scopesRes = r.grantedScopes(scopesRes, at.Header, "user", r.scopes.user,
		"install the app again as that admin, approving its user scopes ("+strings.Join(r.scopes.user, ", ")+"), and set the new User OAuth Token as SLACK_ADMIN_USER_TOKEN")
	if in == nil {
		res.Status, res.Detail = Warn, fmt.Sprintf("auth.test: the token is %s's (%s); whether they are an admin was not checked (users.info needs the bot token)", at.User, at.UserID)
		res.Fix = "fix the bot token, then run verdictbot doctor again"
		return []Result{res, scopesRes}
	}
	// users.info with the bot token (users:read), as quarantine.Check does.
	u, err := within(ctx, r, func(ctx context.Context) (*slack.User, error) { return in.bot.GetUserInfoContext(ctx, at.UserID) })
	switch {
	case err != nil:
		res.Status, res.Detail, res.Fix = Fail, fmt.Sprintf("users.info %s: %s", at.UserID, slackProblem(err)), slackFix(err, fixAdmin)
	case !u.IsAdmin && !u.IsOwner && !u.Enterprise.IsAdmin && !u.Enterprise.IsOwner:
		res.Status, res.Fix = Fail, fixAdmin
		res.Detail = fmt.Sprintf("the token is @%s's (%s), who is not a workspace admin or owner: Slack refuses to let them delete others' messages", u.Name, u.ID)
	default:
		res.Status, res.Detail = Pass, fmt.Sprintf("auth.test: @%s (%s), a workspace %s", u.Name, u.ID, adminWord(u))
	}
	return []Result{res, scopesRes}
}

func adminWord(u *slack.User) string {
	switch {
	case u.IsOwner:
		return "owner"
	case u.IsAdmin:
		return "admin"
	case u.Enterprise.IsOwner:
		return "owner (of the organisation)"
	}
	return "admin (of the organisation)"
}

// slackProblem says what a Web API call's error was, in one line.
func slackProblem(err error) string {
	var se slack.SlackErrorResponse
	var rl *slack.RateLimitedError
	var sc slack.StatusCodeError
	var ue *url.Error
	switch {
	case errors.As(err, &se):
		if se.Needed != "" {
			return fmt.Sprintf("%s (needs %s)", se.Err, se.Needed)
		}
		return se.Err
	case errors.As(err, &rl):
		return fmt.Sprintf("rate limited by Slack (retry after %s)", rl.RetryAfter)
	case errors.As(err, &sc):
		return "HTTP " + sc.Status
	case errors.Is(err, context.DeadlineExceeded):
		return "no answer in time"
	case errors.As(err, &ue):
		host := ue.URL
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Scheme + "://" + u.Host
		}
		if ue.Timeout() {
			return "no answer in time from " + host
		}
		return fmt.Sprintf("cannot reach %s: %v", host, ue.Err)
	}
	return err.Error()
}

// slackFix is the fix for a Web API call's error: tokenFix for the
// errors of a wrong token, the scopes' fix, the network's.
func slackFix(err error, tokenFix string) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch se.Err {
		case "missing_scope":
			return fixReinstall
		case "ratelimited":
			return "wait a minute and run verdictbot doctor again"
		case "team_access_not_granted":
			return "an Org Admin must grant the app that workspace (docs/grid.md, \"Installing on Enterprise Grid\")"
		}
		return tokenFix
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return "wait a minute and run verdictbot doctor again"
	}
	return fixSlackNetwork
}

// plural is "1 connection", "2 connections".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
