package commands

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Request is one /scan invocation (or a shortcut), after parsing.
type Request struct {
	Command *Command
	Args    []string
	// Who and where.
	User, Channel string
	// ResponseURL answers the command (valid for 30 minutes).
	ResponseURL string
	// Answer, if set, takes the command's answers instead of the
	// Responder (the App Home shows them in the Home tab).
	Answer func(ctx context.Context, text string) error
	// Via names where the command came from in audit lines: "slash"
	// (the default) or "home".
	Via string
}

// Handler runs a command. Its error, if any, is turned into a private
// answer by the caller (a *UserError's text is shown as is; anything else
// is logged and answered "something went wrong").
type Handler func(ctx context.Context, req *Request) error

// Command is one /scan subcommand. The registry is the single source of the
// parser, the help text and the manifest check.
type Command struct {
	// Name is the subcommand word ("status"); "" is the bare form
	// (/scan <url>…).
	Name string
	// Usage shows the arguments ("<task_id>").
	Usage string
	// Description is one line for the help.
	Description string
	// Examples are full example invocations.
	Examples []string
	// MinArgs and MaxArgs bound the arguments (MaxArgs -1: no bound).
	MinArgs, MaxArgs int
	// Admin says who may run it: AdminNever (anyone), AdminAlways, or
	// AdminToChange (anyone may look, admins may change: the handler
	// checks, e.g. "/scan channel" shows, "/scan channel off" changes).
	Admin   AdminRule
	Handler Handler
}

// AdminRule says which uses of a command are for admins.
type AdminRule int

// Admin rules.
const (
	AdminNever AdminRule = iota
	AdminAlways
	AdminToChange
)

// Registry holds the commands of /scan.
type Registry struct {
	Slash    string // "/scan"
	commands map[string]*Command
	order    []string
}

// NewRegistry returns an empty registry for the slash command.
func NewRegistry(slash string) *Registry {
	return &Registry{Slash: slash, commands: map[string]*Command{}}
}

// Register adds a command. It panics on a nil handler or a duplicate name:
// both are programming errors that must fail at start, not at first use.
func (r *Registry) Register(c *Command) {
	if c.Handler == nil {
		panic(fmt.Sprintf("commands: %s %s has no handler", r.Slash, c.Name))
	}
	if c.Name != strings.ToLower(c.Name) || strings.ContainsAny(c.Name, " \t") {
		panic(fmt.Sprintf("commands: bad name %q", c.Name))
	}
	if _, dup := r.commands[c.Name]; dup {
		panic(fmt.Sprintf("commands: %s %s registered twice", r.Slash, c.Name))
	}
	r.commands[c.Name] = c
	r.order = append(r.order, c.Name)
}

// Lookup returns the command called name.
func (r *Registry) Lookup(name string) (*Command, bool) {
	c, ok := r.commands[name]
	return c, ok
}

// Names returns the subcommand names, sorted ("" for the bare form first).
func (r *Registry) Names() []string {
	names := append([]string(nil), r.order...)
	sort.Strings(names)
	return names
}

// UsageOf is the one-line usage of a command, as typed (not escaped for
// mrkdwn: see notify.Escape).
func (r *Registry) UsageOf(c *Command) string {
	return strings.TrimSpace(r.Slash + " " + strings.TrimSpace(c.Name+" "+c.Usage))
}
