// Package slackfake is a fake Slack for end-to-end tests of the bot and
// for `verdictbot shell`.
//
// It speaks the real protocols over real sockets, so the bot under test uses
// its production slack-go clients unchanged:
//
//   - the Web API at <base>/api/ (form or JSON bodies, the token in the
//     Authorization header or in the "token" form field, Slack's
//     {"ok":false,"error":…} bodies and HTTP 429 with Retry-After);
//   - Socket Mode: apps.connections.open hands out a single-use
//     ws://…/link/?ticket=… URL; the WebSocket sends hello, server pings,
//     envelopes (events_api, slash_commands, interactive), records acks,
//     redelivers unacked events and can send disconnect frames or drop the
//     socket;
//   - several Socket Mode connections per app, as N bot replicas sharing one
//     app token open them: at most 10 at once (WithMaxConnections; the next
//     WebSocket gets {"type":"disconnect","reason":"too_many_websockets"}
//     instead of hello); each envelope goes to exactly one open connection,
//     chosen by a DeliveryPolicy (RandomDelivery seeded by default,
//     RoundRobinDelivery, DeliverToConnection, or any func); an event not
//     acked within the ack window (WithAckTimeout, Slack's 3 s by default) is
//     redelivered as a new envelope (retry_attempt+1, retry_reason
//     "timeout") to whichever connection the policy picks, possibly another
//     one, and so are the unacked events of a socket that dropped; slash
//     commands and interactions are delivered once and never retried, as on
//     Slack. Retries follow one another an ack window apart (at most
//     WithMaxRetries, 3 as on Slack), not on Slack's "almost immediately,
//     after 1 minute, after 5 minutes" schedule, so tests stay short;
//   - file hosting (url_private, url_private_download) and the upload URL of
//     the files.getUploadURLExternal flow, on the same host as the Web API:
//     slack-go v0.30+ sends the bot token only to https Slack hosts or to the
//     OptionAPIURL host (misc.go ensureURLMayReceiveToken).
//
// A test starts one with slackfaketest.Start (New and Close elsewhere),
// points the bot at it and drives it:
//
//	fake := slackfaketest.Start(t)
//	api := slack.New(fake.BotToken(),
//		slack.OptionAppLevelToken(fake.AppToken()),
//		slack.OptionAPIURL(fake.APIURL()))
//	// … run the bot with api …
//	fake.WaitConnected(ctx, 1)
//	d, _ := fake.DeliverMessage(slackfake.MessageEvent{Channel: "C1", User: "U1", Text: "see <https://example.com>"})
//	replies, err := fake.WaitMessages(ctx, "C1", d.TS, 1)
//
// With several replicas, a test waits for their sockets and then looks at
// where each envelope went:
//
//	ids, _ := fake.WaitOpenConns(ctx, 3) // open, not closing
//	fake.SetDeliveryPolicy(slackfake.DeliverToConnection(ids[0]))
//	d, _ := fake.DeliverMessage(…)
//	_ = fake.WaitAcked(ctx)
//	envs := fake.EventEnvelopes(d.EventID) // each attempt's ConnID and Acks
//	_ = fake.DropConn(ids[0])              // or DisconnectConn(id, reason)
//	conns := fake.Conns()                  // per connection: Sent, Acks, ClosedAt
//
// Every answer to a valid token names its scopes in X-OAuth-Scopes, as
// Slack's do: the bot token has manifest.yaml's (DefaultBotScopes) unless
// WithBotScopes grants others (reported, not enforced), a user token
// its UserToken.Scopes, the app-level token connections:write.
//
// By default the fake is one workspace and the bot token a workspace
// token. WithOrg makes it an Enterprise Grid organisation with the app
// installed org-wide (the bot token an org-level token), as
// api.slack.com/enterprise/apps describes it: Org lists the workspaces and
// which of them the app is granted; Channel.Teams puts a conversation in
// one workspace or shares it between several (one channel, one history,
// each event delivered once), Channel.ExternalTeam/ExternalEnterprise
// make it a Slack Connect channel, User.Teams/HomeTeam/Enterprise place
// people (Grid ids may start with W). auth.test answers for the org
// (team_id the enterprise id, is_enterprise_install true); auth.teams.list
// lists the granted workspaces; users.conversations, usergroups.list,
// usergroups.users.list and bots.info answer missing_argument without
// team_id, any call naming a workspace not granted answers
// team_access_not_granted, and a conversation with no granted workspace
// is channel_not_found to the bot token, its events withheld
// (State.Withheld). Envelopes carry enterprise_id, the team the event
// comes from, context_team_id and one org-wide authorization; slash
// commands and interactions name the workspace and the org. GrantTeams
// and RevokeTeams change the grant and deliver team_access_granted and
// team_access_revoked:
//
//	fake := slackfaketest.Start(t, slackfake.WithOrg(slackfake.Org{
//		ID: "E1", Name: "Acme", Granted: []string{"T1"},
//		Workspaces: []slackfake.Workspace{{ID: "T1", Name: "Eng"}, {ID: "T2", Name: "Sales"}},
//	}))
//	fake.AddChannel(slackfake.Channel{ID: "C2", Teams: []string{"T2"}})
//	d, _ := fake.DeliverMessage(slackfake.MessageEvent{Channel: "C2", User: "W1", Text: "hi"}) // d.Withheld
//	_, _ = fake.GrantTeams("T2") // team_access_granted; C2's events flow from now on
//
// History: conversations.history pages a conversation newest first and
// conversations.replies a thread parent first, as docs.slack.dev's method
// pages describe them: limit (history 100 by default, at most 999;
// replies 1000), cursor (Slack's base64 "next_ts:…" next_cursor, with
// has_more), oldest, latest and inclusive. History holds top-level
// messages and replies also sent to the channel (thread_broadcast); a
// thread's root carries thread_ts, reply_count, reply_users_count,
// reply_users and latest_reply; messages keep their files, attachments,
// blocks, subtype, bot_id and edited. A conversation the bot is not in
// (Channel.NotMember) is not_in_channel to both, or channel_not_found
// when private. SeedHistory fills a channel's past without delivering
// anything (HistoryMessage: ts from At, ReplyTo the index of a thread's
// root or TopLevel, files, unfurl attachments, bot and edited messages);
// 10,000 messages take about a tenth of a second:
//
//	ts := fake.SeedHistory("C1", []slackfake.HistoryMessage{
//		{User: "U1", Text: "see <https://example.com>", At: t0, ReplyTo: slackfake.TopLevel},
//		{User: "U2", Text: "thanks", At: t0.Add(time.Minute), ReplyTo: 0}, // in msgs[0]'s thread
//	})
//
// Tier limits: WithTierLimits(true) enforces Tier 3 on
// conversations.history and conversations.replies, each per workspace
// (Tier3PerMinute a minute, bursts of Tier3Burst), answering 429 with
// Retry-After past it; alone it limits nothing else, and WithRateLimits'
// RateLimits can set other figures (HistoryPerMinute…). Refused calls are
// recorded and counted (RateLimited). WithRateLimitClock gives the limits
// a test's clock, so a test exhausts a burst and moves time on by the
// Retry-After instead of sleeping it.
//
// People's actions: DeliverReaction delivers reaction_added or
// reaction_removed (item, item_user, event_ts) and records the reaction
// on the message; DeliverMemberJoined delivers member_joined_channel
// (channel_type, team, inviter) and, when the bot is the one who joins,
// makes it a member so it reads the history; the bot joins a public
// channel itself with conversations.join. Both events carry the Grid
// fields with an Org and are not delivered from a conversation the bot
// is not in. DeliverMessageShortcut runs a message shortcut of any
// callback id ("report_message") on any message the fake holds, seeded
// ones included, carrying the whole message; chat.getPermalink answers
// /archives/<channel>/p<ts> with ?thread_ts=…&cid=… for a reply.
//
// Everything the bot does is recorded (State): every Web API call, the
// messages per channel and thread with their current Block Kit JSON and all
// earlier versions, reactions, ephemerals, uploads, response_url posts, every
// envelope and every ack with its latency. Faults (429, error codes, slow
// responses, apps.connections.open failures) are injected per method.
//
// The fake models Slack as its documentation (docs.slack.dev, the Socket
// Mode and Events API pages) and slack-go v0.35.0 describe it; where
// Slack's behaviour is undocumented, the doc comment of the identifier that
// makes the choice says so.
package slackfake
