package measure

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/kubegray/kubectl-gray/pkg/gates"
)

// maxAnswer bounds the body of a webhook's answer read: the status shows its first 200 bytes,
// and a condition reads a small JSON verdict.
const maxAnswer = 1 << 20

// Call POSTs body to webhook provider p, signed with key when there is one, and returns the
// answer's status and (bounded) body; err when there was no answer. The caller bounds ctx.
func Call(ctx context.Context, client *http.Client, p *gates.Provider, key, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL.String(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if len(key) > 0 {
		req.Header.Set(gates.SignatureHeader, gates.Sign(key, body))
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("provider %s: %w", p.Name, err)
	}
	defer func() { _ = resp.Body.Close() }()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return 0, nil, fmt.Errorf("provider %s: reading the answer: %w", p.Name, err)
	}
	return resp.StatusCode, answer, nil
}
