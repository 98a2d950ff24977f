package measure

import (
	"bytes"
	"context"
	"net/http"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/providerhttp"
)

// maxAnswer bounds the body of a webhook's 2xx answer (a longer one is an error): the status
// shows its first 200 bytes, and a condition reads a small JSON verdict.
const maxAnswer = 1 << 20

// Call POSTs body to webhook provider p, signed with key when there is one, and returns the
// answer's status and body (a failed answer's first providerhttp.MaxShownFailure bytes); err
// when there was no answer to judge (none, a redirect, one over maxAnswer). The caller bounds ctx.
func Call(ctx context.Context, client *http.Client, p *gates.Provider, key, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if len(key) > 0 {
		req.Header.Set(gates.SignatureHeader, gates.Sign(key, body))
	}
	answer, err := providerhttp.Exchange(client, p.Name, req, maxAnswer)
	if err != nil {
		return 0, nil, err
	}
	return answer.Status, answer.Body, nil
}
