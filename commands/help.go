package commands

import (
	"fmt"
	"strings"

	"github.com/verdictbot/verdictbot/notify"
)

// The registry's help, in every form it is shown: /scan help and the App
// Home (Slack mrkdwn), the shell and the CLI (terminal text), docs/usage.md
// (a Markdown table: make docs writes it, internal/docgen's tests compare
// it). All are rendered from HelpEntries.

// HelpEntry is one command as the help shows it.
type HelpEntry struct {
	Name        string // the subcommand ("" for the bare form)
	Usage       string // "/scan status <task_id>", as typed
	Description string
	Example     string // one full invocation, with real values
	Who         string // anyone, admins, or anyone looks / admins change
}

// helpTitle heads every form of the help.
const helpTitle = "scan links, look up analyses, manage verdictbot"

// placeholderNote explains the notation; Slack users type `<url>` back
// literally when the help does not say so.
const placeholderNote = "A word in <angle brackets> stands for a value: type the value itself (`/scan status 4711`, not `/scan status <task_id>`); [brackets] mark what may be left out; a|b means one of them."

// HelpEntries lists the commands, the bare form first, then by name.
func (r *Registry) HelpEntries() []HelpEntry {
	var out []HelpEntry
	for _, n := range r.Names() {
		c := r.commands[n]
		e := HelpEntry{Name: c.Name, Usage: r.UsageOf(c), Description: c.Description, Who: whoOf(c.Admin)}
		if len(c.Examples) > 0 {
			e.Example = c.Examples[0]
		}
		out = append(out, e)
	}
	return out
}

func whoOf(a AdminRule) string {
	switch a {
	case AdminAlways:
		return "admins"
	case AdminToChange:
		return "anyone looks, admins change"
	}
	return "anyone"
}

// code is our own text (a usage, an example) as an escaped mrkdwn code
// span: &, < and > are escaped there too, or "<task_id>" would be shown
// as a link labelled "task_id". Text from outside (a word someone typed,
// a service's field) goes through notify.Code instead, which also keeps
// its backticks from ending the span.
func code(s string) string { return "`" + notify.Escape(s) + "`" }

// Help is the answer to /scan help: Slack mrkdwn, escaped, one line per
// command with its example.
func (r *Registry) Help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%s* — %s\n", r.Slash, helpTitle)
	b.WriteString(r.HomeHelp())
	return b.String()
}

// HomeHelp is the command list for the App Home's "how to use it" (Slack
// mrkdwn for one section block, under 3,000 characters): every command
// with what it does, who may use it and one example, and how to read the
// notation.
func (r *Registry) HomeHelp() string {
	var b strings.Builder
	for _, e := range r.HelpEntries() {
		fmt.Fprintf(&b, "• %s — %s", code(e.Usage), notify.Escape(e.Description))
		if e.Who != "anyone" {
			fmt.Fprintf(&b, " _(%s)_", e.Who)
		}
		b.WriteString("\n")
		if e.Example != "" && e.Example != e.Usage {
			fmt.Fprintf(&b, "      e.g. %s\n", code(e.Example))
		}
	}
	b.WriteString(mrkdwnNote())
	b.WriteString("\n")
	return b.String()
}

// mrkdwnNote is placeholderNote with its code spans escaped.
func mrkdwnNote() string {
	parts := strings.Split(placeholderNote, "`")
	for i := range parts {
		parts[i] = notify.Escape(parts[i])
	}
	return strings.Join(parts, "`")
}

// TerminalHelp is the same help as plain text for a terminal (the shell's
// help, the CLI): each usage, with what it does and its example under it.
func (r *Registry) TerminalHelp() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s\n\n", r.Slash, helpTitle)
	for _, e := range r.HelpEntries() {
		fmt.Fprintf(&b, "  %s\n      %s", e.Usage, e.Description)
		if e.Who != "anyone" {
			fmt.Fprintf(&b, " (%s)", e.Who)
		}
		b.WriteString("\n")
		if e.Example != "" && e.Example != e.Usage {
			fmt.Fprintf(&b, "      e.g. %s\n", e.Example)
		}
	}
	b.WriteString("\n" + strings.ReplaceAll(placeholderNote, "`", "") + "\n")
	return b.String()
}

// MarkdownTable is the command table of docs/usage.md (GitHub Markdown;
// pipes inside code spans escaped, as tables require).
func (r *Registry) MarkdownTable() string {
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	var b strings.Builder
	b.WriteString("| command | what it does | who | example |\n|---|---|---|---|\n")
	for _, e := range r.HelpEntries() {
		ex := ""
		if e.Example != "" {
			ex = "`" + cell(e.Example) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", cell(e.Usage), cell(e.Description), e.Who, ex)
	}
	return b.String()
}
