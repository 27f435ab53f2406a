package commands

import (
	"context"
	"strings"
	"testing"
)

func testRegistry() *Registry {
	r := NewRegistry("/scan")
	nop := func(context.Context, *Request) error { return nil }
	r.Register(&Command{Name: "", Usage: "<url> [<url>…]", Description: "scan links now", MinArgs: 1, MaxArgs: 10, Handler: nop, Examples: []string{"/scan https://example.com/login"}})
	r.Register(&Command{Name: "status", Usage: "<task_id>", Description: "state of a task", MinArgs: 1, MaxArgs: 1, Handler: nop})
	r.Register(&Command{Name: "hash", Usage: "<md5|sha1|sha256>", Description: "what the sandbox knows of a file", MinArgs: 1, MaxArgs: 1, Handler: nop})
	r.Register(&Command{Name: "report", Usage: "<task_id> <category> fp|fn|restore", Description: "report a verdict", MinArgs: 3, MaxArgs: 3, Handler: nop})
	r.Register(&Command{Name: "recent", Usage: "[n]", Description: "last verdicts here", MaxArgs: 1, Handler: nop})
	r.Register(&Command{Name: "channel", Usage: "[on|off|quiet|verbose|files on|off]", Description: "this channel's mode and files", MaxArgs: 2, Admin: AdminToChange, Handler: nop})
	r.Register(&Command{Name: "allow", Usage: "add|remove|list [domain]", Description: "runtime allowlist", MinArgs: 1, MaxArgs: 2, Admin: AdminToChange, Handler: nop})
	r.Register(&Command{Name: "help", Description: "this help", MaxArgs: -1, Handler: nop})
	return r
}

func TestParse(t *testing.T) {
	t.Parallel()
	r := testRegistry()
	cases := []struct {
		in       string
		cmd      string // "-" for a reply
		args     []string
		replyHas string
	}{
		{"https://evil.example/login", "", []string{"https://evil.example/login"}, ""},
		{"<https://evil.example/a?x=1&amp;y=2|evil.example/a>  <http://b.test>", "", []string{"https://evil.example/a?x=1&y=2", "http://b.test"}, ""},
		{"example.com/path", "", []string{"example.com/path"}, ""},
		{"STATUS 0123abcd", "status", []string{"0123abcd"}, ""},
		{"  status   1042  ", "status", []string{"1042"}, ""},
		{"hash 44d88612fea8a8f36de82e1278abb02f", "hash", []string{"44d88612fea8a8f36de82e1278abb02f"}, ""},
		{"report t1 phishing fp", "report", []string{"t1", "phishing", "fp"}, ""},
		{"recent", "recent", nil, ""},
		{"recent 5", "recent", []string{"5"}, ""},
		{"channel verbose", "channel", []string{"verbose"}, ""},
		{"channel files off", "channel", []string{"files", "off"}, ""},
		{"Channel FILES on", "channel", []string{"FILES", "on"}, ""},
		{"channel files off now", "-", nil, "Too many arguments"},
		{`allow add "corp.example.com"`, "allow", []string{"add", "corp.example.com"}, ""},
		{"help", "help", nil, ""},
		{"", "-", nil, "/scan status &lt;task_id&gt;"},
		{"stauts 1", "-", nil, "Did you mean `/scan status`?"},
		{"hsh abc", "-", nil, "Did you mean `/scan hash`?"},
		{"rep t1", "-", nil, "Did you mean `/scan report`?"},
		{"frobnicate", "-", nil, "`frobnicate` is not a /scan command."},
		{"status", "-", nil, "Not enough arguments. Usage: `/scan status &lt;task_id&gt;`"},
		{"status 1 2", "-", nil, "Too many arguments"},
		{"report t1 phishing", "-", nil, "Usage: `/scan report &lt;task_id&gt; &lt;category&gt; fp|fn|restore`"},
		// The help's notation typed back: placeholder words, brackets,
		// and Slack's entities for them.
		{"url https://evil.example/login", "", []string{"https://evil.example/login"}, ""},
		{"URL <https://evil.example/login>", "", []string{"https://evil.example/login"}, ""},
		{"<https://evil.example/login>", "", []string{"https://evil.example/login"}, ""},
		{"&lt;https://evil.example/login&gt;", "", []string{"https://evil.example/login"}, ""},
		{"status <1042>", "status", []string{"1042"}, ""},
		{"status &lt;1042&gt;", "status", []string{"1042"}, ""},
		{"status task_id 1042", "status", []string{"1042"}, ""},
		{"hash sha256 44d88612fea8a8f36de82e1278abb02f", "hash", []string{"44d88612fea8a8f36de82e1278abb02f"}, ""},
		{"recent [5]", "recent", []string{"5"}, ""},
		{"allow add [corp.example.com]", "allow", []string{"add", "corp.example.com"}, ""},
		{"<url>", "-", nil, "`&lt;url&gt;` stands for a value: type the value itself in its place. For example `/scan https://example.com/login`."},
		{"url", "-", nil, "`&lt;url&gt;` stands for a value"},
		{"status <task_id>", "-", nil, "`&lt;task_id&gt;` stands for a value"},
		{"<@U1> <b>", "-", nil, "`&lt;@U1&gt;` is not a /scan command."},
		{`allow add "unclosed`, "-", nil, "a quote is not closed"},
		{"<@U123|alice> please", "-", nil, "is not a /scan command"},
	}
	for _, tc := range cases {
		p := r.Parse(tc.in)
		switch {
		case tc.cmd == "-":
			if p.Command != nil || !strings.Contains(p.Reply, tc.replyHas) {
				t.Errorf("Parse(%q) = %v %q; want a reply with %q", tc.in, p.Command, p.Reply, tc.replyHas)
			}
		case p.Command == nil || p.Command.Name != tc.cmd || strings.Join(p.Args, "|") != strings.Join(tc.args, "|"):
			t.Errorf("Parse(%q) = %+v; want %q %q", tc.in, p, tc.cmd, tc.args)
		}
	}
}

func TestHelpIsGeneratedFromTheRegistry(t *testing.T) {
	t.Parallel()
	r := testRegistry()
	help := r.Help()
	shown := slackRenders(help)
	for _, n := range r.Names() {
		c, _ := r.Lookup(n)
		if !strings.Contains(shown, r.UsageOf(c)) || !strings.Contains(shown, c.Description) {
			t.Errorf("help as Slack shows it lacks %q:\n%s", r.UsageOf(c), shown)
		}
	}
	if len(help) > 3000 {
		t.Fatalf("help is %d characters; keep it within one section block", len(help))
	}
}

func TestRegisterRefusesMistakes(t *testing.T) {
	t.Parallel()
	for name, fn := range map[string]func(r *Registry){
		"nil handler": func(r *Registry) { r.Register(&Command{Name: "x"}) },
		"duplicate": func(r *Registry) {
			h := func(context.Context, *Request) error { return nil }
			r.Register(&Command{Name: "x", Handler: h})
			r.Register(&Command{Name: "x", Handler: h})
		},
		"bad name": func(r *Registry) {
			r.Register(&Command{Name: "Two Words", Handler: func(context.Context, *Request) error { return nil }})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			fn(NewRegistry("/scan"))
		}()
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "status 1", "<https://a|b>", `"`, "allow add 'x y'", "report a b c d", "\u00a0status\t1"} {
		f.Add(s)
	}
	r := testRegistry()
	f.Fuzz(func(t *testing.T, s string) {
		p := r.Parse(s)
		if (p.Command == nil) == (p.Reply == "") {
			t.Fatalf("Parse(%q): want exactly one of a command or a reply: %+v", s, p)
		}
	})
}
