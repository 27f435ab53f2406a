// Package commands holds what analysts drive the bot with: the feedback
// buttons on verdict cards, the /scan slash command, the message shortcut,
// and the access control that guards what changes behaviour.
package commands

import "slices"

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
