package notify

import (
	"time"

	"github.com/verdictbot/verdictbot/card"

	"github.com/verdictbot/verdictbot/verdict"
)

// Representative cards shared by the golden tests of both renderers.

var testTime = time.Date(2026, 11, 22, 10, 15, 0, 0, time.UTC)

func urlScores(ph, ad, mal, il float64) verdict.Scores {
	return verdict.Scores{verdict.CatPhishing: ph, verdict.CatAdvertising: ad, verdict.CatMalicious: mal, verdict.CatIllegal: il}
}

// sampleCards are the golden cases, by file name.
func sampleCards() map[string]*card.Card {
	return map[string]*card.Card{
		"scanning": {
			Channel: "C0123", ThreadTS: "1700000000.000100", SourceTS: "1700000000.000100",
			Poster: "U0POSTER",
			Lines: []card.Line{
				{Kind: card.KindURL, Target: "https://login.example-bank.com/verify?id=1&next=/home", Level: verdict.Pending, Service: "reputation", TaskID: "t-101", Status: "queued"},
				{Kind: card.KindURL, Target: "http://203.0.113.7:8080/payload", Level: verdict.Pending, Service: "reputation", Status: "submitted"},
				{Kind: card.KindFile, Target: "invoice.pdf.exe", Level: verdict.Pending, Service: "sandbox", TaskID: "4711", Status: "running",
					File: &card.FileInfo{Name: "invoice.pdf.exe", Size: 734003}},
			},
		},
		"clean_verbose": {
			Channel: "C0123", ThreadTS: "1700000000.000200", Final: true,
			Lines: []card.Line{
				{Kind: card.KindURL, Target: "https://docs.example.org/guide", Level: verdict.Clean, Category: verdict.CatAdvertising,
					Scores: urlScores(0.01, 0.12, 0, 0), Service: "reputation", TaskID: "t-201", Actions: true, CheckedAt: testTime},
				{Kind: card.KindURL, Target: "https://www.example.com/", Level: verdict.Clean, Category: verdict.CatPhishing,
					Scores: urlScores(0.02, 0.01, 0.01, 0), Service: "reputation", TaskID: "t-202", Cached: true, Actions: true, CheckedAt: testTime.Add(-2 * time.Hour)},
			},
		},
		"malicious_audit": {
			Channel: "C0123", ThreadTS: "1700000000.000300", Final: true, RequestedBy: "U0ANALYST",
			Lines: []card.Line{
				{Kind: card.KindURL, Target: "https://paypal.com.account-check.example/login?user=a&b=<c>", Level: verdict.Malicious, Category: verdict.CatPhishing,
					Scores: urlScores(0.97, 0.05, 0.40, 0), Service: "reputation", TaskID: "t-301", Actions: true, CheckedAt: testTime,
					Detail: "Log in *now* – `PayPal` <script> & see https://paypal.com.account-check.example/a",
					Reports: []card.Report{
						{User: "U0ANALYST", Option: "fp", Category: verdict.CatPhishing, At: testTime.Add(5 * time.Minute)},
						{User: "U0OTHER", Option: "fn", Category: verdict.CatMalicious, At: testTime.Add(6 * time.Minute), Outcome: "task not completed yet"},
					}},
				{Kind: card.KindURL, Target: "https://ads.example.net/banner", Level: verdict.Suspicious, Category: verdict.CatAdvertising,
					Scores: urlScores(0.1, 0.85, 0.05, 0), Service: "reputation", TaskID: "t-302", Actions: true, CheckedAt: testTime},
				{Kind: card.KindURL, Target: "https://example.com/ok", Level: verdict.Clean, Category: verdict.CatPhishing,
					Scores: urlScores(0.03, 0, 0, 0), Service: "reputation", TaskID: "t-303", Actions: true, CheckedAt: testTime},
			},
			Notes: []string{"Rechecked 2026-11-22 10:15 UTC: now malicious."},
		},
		"could_not_check": {
			Channel: "C0123", ThreadTS: "1700000000.000400", Final: true,
			Lines: []card.Line{
				{Kind: card.KindURL, Target: "https://slow.example/", Level: verdict.Unknown, Service: "reputation", TaskID: "t-401",
					Problem: "The reputation service did not answer in time."},
				{Kind: card.KindURL, Target: "https://fine.example/", Level: verdict.Clean, Category: verdict.CatPhishing,
					Scores: urlScores(0, 0, 0, 0), Service: "reputation", TaskID: "t-402", Actions: true},
			},
			Notes: []string{"The check could not complete; try /scan again later."},
		},
		"file_screenshots": {
			Channel: "C0123", ThreadTS: "1700000000.000500", Final: true,
			Lines: []card.Line{
				{Kind: card.KindFile, Target: "invoice.pdf.exe", Level: verdict.Malicious, Service: "sandbox", TaskID: "4711",
					File: &card.FileInfo{
						Name: "invoice.pdf.exe", Type: "PE32 executable (GUI) Intel 80386, for MS Windows", Size: 734003,
						MD5: "d41d8cd98f00b204e9800998ecf8427e", SHA1: "da39a3ee5e6b4b0d3255bfef95601890afd80709",
						SHA256:   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
						MalScore: 8.5, Family: "Emotet",
						AddedOn: "2026-11-22 10:00:01", StartedOn: "2026-11-22 10:00:05", DoneOn: "2026-11-22 10:03:40",
						Screenshots: 2,
					}},
			},
		},
		"skipped_leftout": {
			Channel: "C0123", ThreadTS: "1700000000.000600", Final: true,
			Lines: []card.Line{
				{Kind: card.KindURL, Target: "https://example.org/", Level: verdict.Clean, Category: verdict.CatPhishing,
					Scores: urlScores(0, 0, 0, 0), Service: "reputation", TaskID: "t-601", Actions: true},
			},
			Skipped: []card.Skip{
				{Target: "http://10.0.0.5/admin", Reason: "private or internal host"},
				{Target: "https://intranet.corp.example/wiki", Reason: "allowlisted domain"},
				{Kind: card.KindFile, Target: "backup.iso", Reason: "file too large (4.2 GiB, limit 100 MiB)"},
			},
			LeftOut:  5,
			MaxLinks: 10,
		},
	}
}
