// Package commands holds what analysts drive the bot with: the feedback
// buttons on verdict cards, the /scan slash command, the message shortcut,
// and the access control that guards what changes behaviour. It asks the
// scan pipelines (package scan), never the services' clients.
package commands

import (
	"context"
	"fmt"
	"slices"
)

// ShortcutScanMessage is the callback id of the "Scan this message" message
// shortcut. It is the contract with manifest.yaml: keep them in sync (the
// manifest test checks it).
const ShortcutScanMessage = "scan_message"

// Access decides who may do what. Admins are VERDICTBOT_ADMINS (user ids);
// when ReportersAdminsOnly is set, only admins may report fp/fn.
type Access struct {
	Admins              []string
	ReportersAdminsOnly bool
	// IsGroupAdmin, if set, is consulted for users not in Admins (members
	// of VERDICTBOT_ADMIN_GROUP).
	IsGroupAdmin func(user string) bool
	// Members says which conversations a person is in: what /scan, the
	// duplicate-report answer and the App Home show them (Scope). Without
	// it nobody but the admins sees any record.
	Members *Membership
}

// IsAdmin reports whether user is an admin.
func (a *Access) IsAdmin(user string) bool {
	if a == nil || user == "" {
		return false
	}
	if slices.Contains(a.Admins, user) {
		return true
	}
	return a.IsGroupAdmin != nil && a.IsGroupAdmin(user)
}

// Scope returns what user may see: everything for an admin, else the
// conversations Slack says they are in. When that cannot be learnt the
// error wraps ErrAccessUnknown: answer AccessUnknownText, never the
// records.
func (a *Access) Scope(ctx context.Context, user string) (*Scope, error) {
	if a.IsAdmin(user) {
		return &Scope{user: user, all: true}, nil
	}
	if user == "" {
		return &Scope{}, nil
	}
	if a == nil || a.Members == nil {
		return nil, fmt.Errorf("%w: no membership source", ErrAccessUnknown)
	}
	in, err := a.Members.Of(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAccessUnknown, err)
	}
	return &Scope{user: user, in: in}, nil
}

// CanReport reports whether user may send option ("fp", "fn", "restore").
// Restore undoes analysts' reports, so it is for admins only. It does not
// know the card: Feedback.Report also refuses a false positive from the
// person who brought the link (BroughtBy) unless they are an admin.
func (a *Access) CanReport(user, option string) bool {
	if option == "restore" || (a != nil && a.ReportersAdminsOnly) {
		return a.IsAdmin(user)
	}
	return user != ""
}
