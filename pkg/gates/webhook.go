package gates

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/grayapi"
)

// SignatureHeader carries a webhook call's HMAC: "sha256=" and the hex HMAC-SHA256 of the body
// under the provider's key.
const SignatureHeader = "X-Kubegray-Signature"

// WebhookCall is the JSON body of a webhook gate's call: which hold asks, and what its canary and
// stable revision are (docs/gates.md). SentAt is signed with the rest, so a receiver can refuse
// an old call replayed.
type WebhookCall struct {
	Gate           string    `json:"gate"`
	Namespace      string    `json:"namespace"`
	Name           string    `json:"name"`
	UID            string    `json:"uid"`
	Revision       int64     `json:"revision"`
	StableRevision int64     `json:"stableRevision"`
	Step           int32     `json:"step"`
	Percent        int32     `json:"percent"`
	CanaryHash     string    `json:"canaryHash"`
	StableHash     string    `json:"stableHash"`
	SettledAt      time.Time `json:"settledAt"`
	SentAt         time.Time `json:"sentAt"`
}

// Sign is the SignatureHeader value of body under key.
func Sign(key, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// maxShownAnswer bounds how much of an answer's body a status shows.
const maxShownAnswer = 200

// MaxWebhookAnswer bounds the answer a webhook gate's conditions read: with the condition's own
// length (MaxCondition) and cost (ConditionCost, additions charged by size), it bounds what an
// evaluation can build.
const MaxWebhookAnswer = 64 << 10

// JudgeWebhook gives the outcome of one webhook call from its answer (err: no answer): a 2xx
// passes, or is judged by the conditions over its JSON body (at most MaxWebhookAnswer); 409, 423 and 425 mean "not yet"
// (Inconclusive); another 4xx fails; a 5xx, a timeout or no answer is an Error.
func (d *Definition) JudgeWebhook(status int, body []byte, err error) (outcome grayapi.GateOutcome, value, why string) {
	if err != nil {
		return grayapi.GateError, "", err.Error()
	}
	shown := strings.TrimSpace(string(body))
	if len(shown) > maxShownAnswer {
		shown = shown[:maxShownAnswer] + "..."
	}
	value = fmt.Sprintf("HTTP %d", status)
	if shown != "" {
		value += ": " + shown
	}
	switch {
	case status == http.StatusConflict || status == http.StatusLocked || status == http.StatusTooEarly:
		return grayapi.GateInconclusive, value, fmt.Sprintf("the webhook answered %d: not yet", status)
	case status >= 400 && status < 500:
		return grayapi.GateFail, value, fmt.Sprintf("the webhook answered %d", status)
	case status < 200 || status >= 300:
		return grayapi.GateError, value, fmt.Sprintf("the webhook answered %d", status)
	case d.success == nil && d.failure == nil:
		return grayapi.GatePass, value, fmt.Sprintf("the webhook answered %d", status)
	}
	if len(body) > MaxWebhookAnswer {
		return grayapi.GateError, value, fmt.Sprintf("the answer is %d bytes, at most %d read for the condition", len(body), MaxWebhookAnswer)
	}
	var result any
	if err := json.Unmarshal(body, &result); err != nil {
		return grayapi.GateError, value, fmt.Sprintf("the answer is not JSON for the condition: %v", err)
	}
	outcome, why = d.judge(map[string]any{"result": result})
	return outcome, value, why
}
