// Package promquery runs one Prometheus instant query over HTTP and reads its answer into a
// gate's reading: gray-controller's measurements (controller/measure) and kubectl gray gate
// test share it, so both read an answer the same way (docs/gates.md).
package promquery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/kubegray/kubectl-gray/pkg/gates"
	"github.com/kubegray/kubectl-gray/pkg/providerhttp"
)

// maxAnswer bounds the body of a Prometheus answer: a gate's query returns one series, and a
// longer answer is an error.
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
	answer, err := providerhttp.Exchange(client, p.Name, req, maxAnswer)
	if err != nil {
		return gates.Reading{Err: err}
	}
	var a queryAnswer
	parseErr := json.Unmarshal(answer.Body, &a)
	switch {
	case parseErr == nil && a.Status == "error" && (a.ErrorType != "" || a.Error != ""):
		// Prometheus' own error (a bad query, a timeout): its words say what to fix.
		return gates.Reading{Err: fmt.Errorf("provider %s: HTTP %d, %s: %s", p.Name, answer.Status, a.ErrorType, a.Error)}
	case !answer.OK():
		// Failed, whatever its body says (a proxy's page, the API server's Status): shown as it
		// came, never read as a value.
		return gates.Reading{Err: fmt.Errorf("provider %s: HTTP %d, a failed answer: %.200q", p.Name, answer.Status, answer.Body)}
	case parseErr != nil || a.Status != "success":
		return gates.Reading{Err: fmt.Errorf("provider %s: HTTP %d, not a Prometheus answer: %.200q", p.Name, answer.Status, answer.Body)}
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
