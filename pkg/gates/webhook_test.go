package gates

import (
	"errors"
	"strings"
	"testing"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// TestJudgeWebhook: the status codes and bodies are a receiver's answers; the outcomes are
// written by hand from the rules and the condition.
func TestJudgeWebhook(t *testing.T) {
	plain, err := Parse("smoke", "test", "provider: smoke\n")
	if err != nil {
		t.Fatal(err)
	}
	judged, err := Parse("smoke", "test", "provider: smoke\nsuccess: result.errors == 0\nfailure: result.errors > 3\n")
	if err != nil {
		t.Fatal(err)
	}
	if plain.Kind != KindWebhook || judged.Kind != KindWebhook {
		t.Fatalf("kinds %q, %q, want %q", plain.Kind, judged.Kind, KindWebhook)
	}
	for _, tc := range []struct {
		name   string
		def    *Definition
		status int
		body   string
		err    error
		want   grayapi.GateOutcome
		value  string
	}{
		{"200 without a condition", plain, 200, "ok", nil, grayapi.GatePass, "HTTP 200: ok"},
		{"425 not yet", plain, 425, "", nil, grayapi.GateInconclusive, "HTTP 425"},
		{"409 not yet", plain, 409, "busy", nil, grayapi.GateInconclusive, "HTTP 409: busy"},
		{"422 fails", plain, 422, `{"reason":"smoke test failed"}`, nil, grayapi.GateFail, `HTTP 422: {"reason":"smoke test failed"}`},
		{"503 is an error", plain, 503, "", nil, grayapi.GateError, "HTTP 503"},
		{"no answer", plain, 0, "", errors.New("context deadline exceeded"), grayapi.GateError, ""},
		{"200, no errors", judged, 200, `{"errors": 0}`, nil, grayapi.GatePass, `HTTP 200: {"errors": 0}`},
		{"200, some errors", judged, 200, `{"errors": 2}`, nil, grayapi.GateInconclusive, `HTTP 200: {"errors": 2}`},
		{"200, many errors", judged, 200, `{"errors": 9}`, nil, grayapi.GateFail, `HTTP 200: {"errors": 9}`},
		{"200, not JSON", judged, 200, `fine`, nil, grayapi.GateError, "HTTP 200: fine"},
		{"200, no such field", judged, 200, `{}`, nil, grayapi.GateError, "HTTP 200: {}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, value, why := tc.def.JudgeWebhook(tc.status, []byte(tc.body), tc.err)
			if got != tc.want || value != tc.value || why == "" {
				t.Errorf("JudgeWebhook = %s, %q (%s); want %s, %q and a reason", got, value, why, tc.want, tc.value)
			}
		})
	}
}

func TestSign(t *testing.T) {
	// The HMAC-SHA256 of "hello" under "key", as `printf hello | openssl dgst -sha256 -hmac key` prints it.
	if got, want := Sign([]byte("key"), []byte("hello")), "sha256=9307b3b915efb5171ff14d8cb55fbcc798c6c0ef1456d66ded1a6aa723a58b7b"; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

// TestWebhookAnswerBounded: a condition reads at most MaxWebhookAnswer (64 KiB) of an answer; a
// larger answer is an Error naming the bound, never judged.
func TestWebhookAnswerBounded(t *testing.T) {
	judged, err := Parse("smoke", "test", "provider: smoke\nsuccess: result.errors == 0\n")
	if err != nil {
		t.Fatal(err)
	}
	padded := func(n int) []byte {
		return []byte(`{"errors": 0, "pad": "` + strings.Repeat("x", n-len(`{"errors": 0, "pad": ""}`)) + `"}`)
	}
	if got, _, why := judged.JudgeWebhook(200, padded(64<<10), nil); got != grayapi.GatePass {
		t.Errorf("an answer of 64 KiB: %s (%s), want Pass", got, why)
	}
	if got, _, why := judged.JudgeWebhook(200, padded(64<<10+1), nil); got != grayapi.GateError || !strings.Contains(why, "65537 bytes, at most 65536") {
		t.Errorf("an answer of 64 KiB and a byte: %s (%s), want an Error naming the bound", got, why)
	}
}

// TestConditionChargedBySize: concatenating the strings of an untyped answer is charged by their
// size, so a condition that would build megabytes out of a 60 KB answer stops at the cost limit
// (an Error) instead of allocating them.
func TestConditionChargedBySize(t *testing.T) {
	// 80 concatenations of a 60 KB string (a condition of 898 characters): 60 KB * (2 + 3 + ... +
	// 81) = 199 MB built.
	concat := "size(result.s" + strings.Repeat(" + result.s", 80) + ") > 0"
	d, err := Parse("smoke", "test", "provider: smoke\nsuccess: "+concat+"\n")
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"s": "` + strings.Repeat("x", 60000) + `"}`)
	if got, _, why := d.JudgeWebhook(200, body, nil); got != grayapi.GateError || !strings.Contains(why, "cost limit exceeded") {
		t.Errorf("judged %s (%s), want an Error at the cost limit", got, why)
	}
}
