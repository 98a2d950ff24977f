// Package promquery runs one Prometheus instant query over HTTP and reads its answer into a
// gate's reading: gray-controller's measurements (controller/measure) and kubectl gray gate
// test share it, so both read an answer the same way (docs/gates.md).
package promquery

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/gates"
)

// maxAnswer bounds the body of a Prometheus answer read: a gate's query returns one series.
const maxAnswer = 1 << 20

// queryAnswer is the Prometheus HTTP API's answer to an instant query
// (https://prometheus.io/docs/prometheus/latest/querying/api/).
type queryAnswer struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// sample is one [time, "value"] pair.
type sample [2]any

// value is the sample's value: Prometheus writes it as a string ("0.5", "NaN", "+Inf").
func (s sample) value() (float64, error) {
	text, ok := s[1].(string)
	if !ok {
		return 0, fmt.Errorf("sample value %v is not a string", s[1])
	}
	return strconv.ParseFloat(text, 64)
}

// Query runs an instant query against provider p at time at and reads what it returned. The
// caller bounds ctx.
func Query(ctx context.Context, client *http.Client, p *gates.Provider, query string, at time.Time) gates.Reading {
	u := p.URL.JoinPath("api", "v1", "query")
	form := url.Values{"query": {query}, "time": {strconv.FormatFloat(float64(at.UnixMicro())/1e6, 'f', 6, 64)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return gates.Reading{Err: err}
	}
	req.URL.RawQuery = form.Encode()
	resp, err := client.Do(req)
	if err != nil {
		return gates.Reading{Err: fmt.Errorf("provider %s: %w", p.Name, err)}
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return gates.Reading{Err: fmt.Errorf("provider %s: reading the answer: %w", p.Name, err)}
	}
	var a queryAnswer
	// An answer is Prometheus' when it says success or names its error; other JSON (a proxy's, the
	// API server's Status) is shown as it came, or the message would say nothing.
	if err := json.Unmarshal(body, &a); err != nil || (a.Status != "success" && a.ErrorType == "" && a.Error == "") {
		return gates.Reading{Err: fmt.Errorf("provider %s: HTTP %d, not a Prometheus answer: %.200q", p.Name, resp.StatusCode, body)}
	}
	if a.Status != "success" {
		return gates.Reading{Err: fmt.Errorf("provider %s: HTTP %d, %s: %s", p.Name, resp.StatusCode, a.ErrorType, a.Error)}
	}
	return readResult(a.Data.ResultType, a.Data.Result)
}

// readResult reads a query's result: a vector (one value per series) or a scalar.
func readResult(kind string, raw json.RawMessage) gates.Reading {
	switch kind {
	case "scalar":
		var s sample
		if err := json.Unmarshal(raw, &s); err != nil {
			return gates.Reading{Err: fmt.Errorf("scalar result: %w", err)}
		}
		v, err := s.value()
		if err != nil {
			return gates.Reading{Err: err}
		}
		return gates.Reading{Values: []float64{v}}
	case "vector":
		var series []struct {
			Value sample `json:"value"`
		}
		if err := json.Unmarshal(raw, &series); err != nil {
			return gates.Reading{Err: fmt.Errorf("vector result: %w", err)}
		}
		r := gates.Reading{Values: []float64{}}
		for _, s := range series {
			v, err := s.Value.value()
			if err != nil {
				return gates.Reading{Err: err}
			}
			r.Values = append(r.Values, v)
		}
		return r
	}
	return gates.Reading{Err: fmt.Errorf("the query gives a %s, not an instant vector or a scalar", kind)}
}
