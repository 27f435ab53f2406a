package links

import (
	"encoding/json"
	"testing"

	"github.com/slack-go/slack"
)

// benchCorpus is a mix of typical channel messages as Slack delivers them:
// a couple of sentences, one to three links, rich_text blocks; some without
// links, one with an unfurl, one from an integration, one with a private
// link.
var benchCorpus = []string{
	`{"type":"message","user":"U024BE7LH","ts":"1700000000.000100","client_msg_id":"a1",
	  "text":"Hey team, has anyone seen this? <https://www.example.com/security/advisory-2024-17?ref=slack&amp;utm_source=chat> looks relevant to the incident from Tuesday.",
	  "blocks":[{"type":"rich_text","block_id":"x1","elements":[{"type":"rich_text_section","elements":[
	    {"type":"text","text":"Hey team, has anyone seen this? "},
	    {"type":"link","url":"https://www.example.com/security/advisory-2024-17?ref=slack&utm_source=chat"},
	    {"type":"text","text":" looks relevant to the incident from Tuesday."}]}]}]}`,
	`{"type":"message","user":"U024BE7LH","ts":"1700000000.000200","client_msg_id":"a2",
	  "text":"<@U0G9QF9C6> compare <https://login.examp1e-bank.com/verify|the bank page> with <https://github.com/acme/app/pull/1234> before merging.",
	  "blocks":[{"type":"rich_text","block_id":"x2","elements":[{"type":"rich_text_section","elements":[
	    {"type":"user","user_id":"U0G9QF9C6"},{"type":"text","text":" compare "},
	    {"type":"link","url":"https://login.examp1e-bank.com/verify","text":"the bank page"},
	    {"type":"text","text":" with "},{"type":"link","url":"https://github.com/acme/app/pull/1234"},
	    {"type":"text","text":" before merging."}]}]}]}`,
	`{"type":"message","user":"U0AAA","ts":"1700000000.000300","thread_ts":"1700000000.000100",
	  "text":"Steps:\n• read <https://docs.example.org/runbook#step-3>\n• check <https://acme.slack.com/archives/C1/p1700000000000100>\n• report at <http://Report.Example.NET:80/form?id=7>",
	  "blocks":[{"type":"rich_text","block_id":"x3","elements":[
	    {"type":"rich_text_section","elements":[{"type":"text","text":"Steps:\n"}]},
	    {"type":"rich_text_list","style":"bullet","indent":0,"elements":[
	      {"type":"rich_text_section","elements":[{"type":"text","text":"read "},{"type":"link","url":"https://docs.example.org/runbook#step-3"}]},
	      {"type":"rich_text_section","elements":[{"type":"text","text":"check "},{"type":"link","url":"https://acme.slack.com/archives/C1/p1700000000000100"}]},
	      {"type":"rich_text_section","elements":[{"type":"text","text":"report at "},{"type":"link","url":"http://Report.Example.NET:80/form?id=7"}]}]}]}]}`,
	`{"type":"message","user":"U0BBB","ts":"1700000000.000400",
	  "text":"Thanks, I'll take a look after lunch. The deploy is still blocked on review :eyes:",
	  "blocks":[{"type":"rich_text","block_id":"x4","elements":[{"type":"rich_text_section","elements":[
	    {"type":"text","text":"Thanks, I'll take a look after lunch. The deploy is still blocked on review "},
	    {"type":"emoji","name":"eyes","unicode":"1f440"}]}]}]}`,
	`{"type":"message","user":"U0CCC","ts":"1700000000.000500",
	  "text":"<https://bit.example/3xYz>",
	  "blocks":[{"type":"rich_text","block_id":"x5","elements":[{"type":"rich_text_section","elements":[{"type":"link","url":"https://bit.example/3xYz"}]}]}],
	  "attachments":[{"id":1,"original_url":"https://bit.example/3xYz","from_url":"https://bit.example/3xYz",
	    "title":"Win a prize","title_link":"https://prize.example.net/claim","service_name":"bit.example",
	    "image_url":"https://prize.example.net/og.png","fallback":"Win a prize"}]}`,
	`{"type":"message","subtype":"bot_message","bot_id":"B0MAIL","username":"mail-gateway","ts":"1700000000.000600",
	  "text":"Reported phishing mail",
	  "attachments":[{"id":1,"color":"danger","title":"Suspicious message from billing@example.org",
	    "text":"Links in body: https://invoice-portal.example.com/pay?id=88231 and <https://cdn.example.com/i.png|image>",
	    "fields":[{"title":"Sender","value":"billing@example.org","short":true}]}]}`,
	`{"type":"message","user":"U0DDD","ts":"1700000000.000700",
	  "text":"staging is at <http://10.20.30.40:8080/admin> and prod at <https://app.example.com/>",
	  "blocks":[{"type":"rich_text","block_id":"x7","elements":[{"type":"rich_text_section","elements":[
	    {"type":"text","text":"staging is at "},{"type":"link","url":"http://10.20.30.40:8080/admin"},
	    {"type":"text","text":" and prod at "},{"type":"link","url":"https://app.example.com/"}]}]}]}`,
	`{"type":"message","user":"U0EEE","ts":"1700000000.000800",
	  "text":"meeting moved to 3pm, agenda unchanged",
	  "blocks":[{"type":"rich_text","block_id":"x8","elements":[{"type":"rich_text_section","elements":[
	    {"type":"text","text":"meeting moved to 3pm, agenda unchanged"}]}]}]}`,
}

func decodeCorpus(b *testing.B) []*slack.Msg {
	b.Helper()
	msgs := make([]*slack.Msg, len(benchCorpus))
	for i, js := range benchCorpus {
		msgs[i] = mustMsg(b, js)
	}
	return msgs
}

// BenchmarkExtract measures Extract on one goroutine over the corpus; the
// msgs/s metric is the single-core throughput (run with GOMAXPROCS=1).
func BenchmarkExtract(b *testing.B) {
	msgs := decodeCorpus(b)
	p, err := NewPolicy(Config{InternalDomains: []string{"corp.example.com"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_ = p.Extract(msgs[i%len(msgs)])
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkExtractParallel measures Extract from GOMAXPROCS goroutines
// sharing one Policy.
func BenchmarkExtractParallel(b *testing.B) {
	msgs := decodeCorpus(b)
	p, err := NewPolicy(Config{InternalDomains: []string{"corp.example.com"}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_ = p.Extract(msgs[i%len(msgs)])
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkDecodeAndExtract adds the encoding/json decode of the message,
// which the bot pays anyway (inside slackevents), for scale.
func BenchmarkDecodeAndExtract(b *testing.B) {
	raw := make([][]byte, len(benchCorpus))
	for i, js := range benchCorpus {
		raw[i] = []byte(js)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		var m slack.Msg
		if err := json.Unmarshal(raw[i%len(raw)], &m); err != nil {
			b.Fatal(err)
		}
		_ = (*Policy)(nil).Extract(&m)
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkSet measures Set as edit detection runs it, before the ack:
// on the decoded message and its JSON.
func BenchmarkSet(b *testing.B) {
	msgs := decodeCorpus(b)
	raws := make([][]byte, len(benchCorpus))
	for i, js := range benchCorpus {
		raws[i] = []byte(js)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := i % len(msgs)
		_ = Set(msgs[j], raws[j])
		i++
	}
}

func BenchmarkNormalize(b *testing.B) {
	urls := []string{
		"https://www.example.com/security/advisory-2024-17?ref=slack&utm_source=chat",
		"http://Report.Example.NET:80/form?id=7",
		"https://docs.example.org/runbook#step-3",
		"https://BÜCHER.example/",
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		_, _ = Normalize(urls[i%len(urls)])
		i++
	}
}
