package commands

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/slack-go/slack"
)

// maxAck keeps an ack payload under Slack's 20 KB limit for Socket Mode
// responses (slack-go refuses larger ones; Slack's Socket Mode docs).
const maxAck = 12_000

// Slash runs the /scan command: the ack is computed from the text alone
// (no network call), the work runs afterwards and answers privately
// through the command's response_url.
type Slash struct {
	Registry *Registry
	Access   *Access
	Respond  Responder
	Log      *slog.Logger
}

func (s *Slash) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// ackMessage is the ack payload of a slash command: a private message.
type ackMessage struct {
	ResponseType string `json:"response_type"`
	Text         string `json:"text"`
}

// Ack returns the payload to ack cmd with: the answer itself when parsing
// already decides it (usage, "did you mean", help, refusals for
// admin-only commands), a short "working on it" otherwise.
func (s *Slash) Ack(cmd *slack.SlashCommand) any {
	if cmd.Command != "" && cmd.Command != s.Registry.Slash {
		return ackMessage{"ephemeral", fmt.Sprintf("verdictbot does not know the command %s.", cmd.Command)}
	}
	p := s.Registry.Parse(cmd.Text)
	switch {
	case p.Reply != "":
		return ackMessage{"ephemeral", clip(p.Reply)}
	case p.Command.Name == "help":
		return ackMessage{"ephemeral", clip(s.Registry.Help())}
	case p.Command.Admin == AdminAlways && !s.Access.IsAdmin(cmd.UserID):
		return ackMessage{"ephemeral", fmt.Sprintf("Only admins can use `%s %s`.", s.Registry.Slash, p.Command.Name)}
	case p.Command.Name == "":
		return ackMessage{"ephemeral", fmt.Sprintf("Checking %d link(s)…", len(p.Args))}
	}
	return nil
}

func clip(s string) string {
	if len(s) <= maxAck {
		return s
	}
	cut := s[:maxAck]
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + "\n…"
}

// Handle runs cmd (already acked). Answers the ack gave are not repeated.
func (s *Slash) Handle(ctx context.Context, cmd *slack.SlashCommand) {
	if cmd.Command != "" && cmd.Command != s.Registry.Slash {
		return
	}
	p := s.Registry.Parse(cmd.Text)
	if p.Reply != "" || p.Command.Name == "help" || (p.Command.Admin == AdminAlways && !s.Access.IsAdmin(cmd.UserID)) {
		return // answered in the ack
	}
	req := &Request{Command: p.Command, Args: p.Args, User: cmd.UserID, Channel: cmd.ChannelID, ResponseURL: cmd.ResponseURL}
	s.Run(ctx, req)
}

// Run runs a parsed request and answers its errors. A panic in a handler
// is logged with its stack and answered "something went wrong".
func (s *Slash) Run(ctx context.Context, req *Request) {
	defer func() {
		if v := recover(); v != nil {
			s.log().Error("command panicked", "command", req.Command.Name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			s.answer(ctx, req, "Something went wrong on our side; the operators have the details in the logs.")
		}
	}()
	err := req.Command.Handler(ctx, req)
	if err == nil {
		return
	}
	var ue *UserError
	if errors.As(err, &ue) {
		s.answer(ctx, req, ue.Text)
		return
	}
	s.log().Error("command failed", "command", req.Command.Name, "error", err)
	s.answer(ctx, req, "Something went wrong on our side; the operators have the details in the logs.")
}

func (s *Slash) answer(ctx context.Context, req *Request, text string) {
	respond := func() error {
		if req.Answer != nil {
			return req.Answer(ctx, text)
		}
		return s.Respond(ctx, req, text)
	}
	if err := respond(); err != nil {
		s.log().Warn("could not answer a command", "command", req.Command.Name, "error", err)
	}
}
