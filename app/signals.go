package app

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/verdictbot/verdictbot/card"
	"github.com/verdictbot/verdictbot/config"
	"github.com/verdictbot/verdictbot/grid"
	"github.com/verdictbot/verdictbot/links"
	"github.com/verdictbot/verdictbot/signals"
	"github.com/verdictbot/verdictbot/verdict"
)

// Signals are the bot's own signals about a link, read from the message
// before any service is asked (package signals): a label that shows one
// domain and opens another (at least suspicious), and a lookalike of a
// protected domain (VERDICTBOT_LOOKALIKE's level, or not looked for).
type Signals struct {
	Checker *signals.Checker
	// Lookalike is the level a lookalike makes its link (Pending: off).
	Lookalike verdict.Level
	// OnSignal, if set, counts each signal by kind.
	OnSignal func(kind string)
}

// NewSignals builds the local signals from cfg: the built-in protected
// domains, VERDICTBOT_PROTECTED_DOMAINS and the allowlist (an allowlist
// entry that is not a registrable domain, a public suffix, is left out of
// the protected set with a log line).
func NewSignals(cfg config.Config, log *slog.Logger) (*Signals, error) {
	chk, err := signals.New(cfg.ProtectedDomains, signals.Options{})
	if err != nil {
		return nil, fmt.Errorf("VERDICTBOT_PROTECTED_DOMAINS: %w", err)
	}
	for _, d := range cfg.AllowDomains {
		if err := chk.AddProtected(strings.TrimPrefix(d, ".")); err != nil && log != nil {
			log.Info("an allowlisted domain is not protected from lookalikes", "domain", d, "error", err)
		}
	}
	s := &Signals{Checker: chk}
	switch cfg.Lookalike {
	case "malicious":
		s.Lookalike = verdict.Malicious
	case "off":
		s.Lookalike = verdict.Pending
	default:
		s.Lookalike = verdict.Suspicious
	}
	return s, nil
}

// Of returns the signals of a link as its card line shows them.
func (s *Signals) Of(t links.Target) []card.Signal {
	if s == nil {
		return nil
	}
	var out []card.Signal
	for _, sg := range s.Checker.Check(t) {
		level := verdict.Suspicious
		if sg.Kind == signals.Lookalike {
			if s.Lookalike == verdict.Pending {
				continue
			}
			level = s.Lookalike
		}
		out = append(out, card.Signal{Kind: string(sg.Kind), Reason: sg.Reason, Level: level})
		if s.OnSignal != nil {
			s.OnSignal(string(sg.Kind))
		}
	}
	return out
}

// learnDomains protects the workspaces' own email domains (team.info's
// email_domain; each granted workspace of an org-wide install), best
// effort: an install made before team:read was requested is told to be
// reinstalled, in the log.
func (a *App) learnDomains(ctx context.Context, d *grid.Directory) {
	if a.signals == nil {
		return
	}
	teams := d.Teams()
	if len(teams) == 0 {
		teams = []grid.Team{{}}
	}
	for _, t := range teams {
		var info *slack.TeamInfo
		var err error
		if d.OrgInstall() {
			info, err = a.api.GetOtherTeamInfoContext(ctx, t.ID)
		} else {
			info, err = a.api.GetTeamInfoContext(ctx)
		}
		if err != nil {
			a.log.Warn("the workspace's email domains could not be read (team.info; reinstall the app from manifest.yaml to grant team:read): set VERDICTBOT_PROTECTED_DOMAINS to protect them from lookalikes",
				"team", t.ID, "error", err)
			continue
		}
		var added []string
		for _, dom := range strings.Split(info.EmailDomain, ",") {
			if dom = strings.TrimSpace(dom); dom == "" {
				continue
			}
			if err := a.signals.Checker.AddProtected(dom); err != nil {
				a.log.Info("a workspace email domain is not protected from lookalikes", "domain", dom, "error", err)
				continue
			}
			added = append(added, dom)
		}
		if len(added) > 0 {
			a.log.Info("the workspace's email domains are protected from lookalikes", "team", t.ID, "domains", added)
		}
	}
}

// allowlistRefresh is how often a replica sharing PostgreSQL loads the
// runtime allowlist again (settings.Channels.RefreshAllowlist).
const allowlistRefresh = 15 * time.Second

// protectAllowlisted protects the runtime allowlist's domains from
// lookalikes, each once (the protected set only grows: a domain taken off
// the allowlist stays protected until a restart, which costs nothing).
func (a *App) protectAllowlisted(domains []string) {
	if a.signals == nil {
		return
	}
	a.allowMu.Lock()
	defer a.allowMu.Unlock()
	if a.allowProtected == nil {
		a.allowProtected = map[string]bool{}
	}
	for _, d := range domains {
		if a.allowProtected[d] {
			continue
		}
		a.allowProtected[d] = true
		if err := a.signals.Checker.AddProtected(strings.TrimPrefix(d, ".")); err != nil {
			a.log.Info("an allowlisted domain is not protected from lookalikes", "domain", d, "error", err)
		}
	}
}
