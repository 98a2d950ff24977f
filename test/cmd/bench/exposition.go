package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
)

// What `bench gates` reads from the servers it measures: their Prometheus exposition, taken
// directly from /metrics at the start and the end of each phase. Reading gray-controller's and
// Prometheus' own /metrics, rather than asking the bench's Prometheus, keeps the bench's reads
// out of the very query count it reports (prometheus_http_requests_total{handler="/api/v1/query"}).

// series is one line of an exposition: a metric name, its labels and its value.
type series struct {
	name   string
	labels map[string]string
	value  float64
}

// exposition is every series of one /metrics page.
type exposition []series

// scrape reads url's exposition in the text format (what a client without an Accept header is
// served).
func scrape(ctx context.Context, url string) (exposition, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	out, err := parseExposition(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return out, nil
}

// parseExposition reads the text format: `name{a="x",b="y"} value`, comments skipped. A line
// with a timestamp after its value is not expected from these servers and is refused.
func parseExposition(r io.Reader) (exposition, error) {
	var out exposition
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<16), 1<<20)
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := series{labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.name = line[:i]
			var err error
			if rest, err = parseLabels(line[i+1:], s.labels); err != nil {
				return nil, fmt.Errorf("%q: %w", line, err)
			}
		} else if i >= 0 {
			s.name, rest = line[:i], line[i:]
		}
		fields := strings.Fields(rest)
		if len(fields) != 1 {
			return nil, fmt.Errorf("%q: want one value after the series", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		s.value = v
		out = append(out, s)
	}
	return out, scanner.Err()
}

// parseLabels reads `a="x",b="y"}` into labels and returns what follows the brace.
func parseLabels(text string, labels map[string]string) (string, error) {
	for {
		text = strings.TrimLeft(text, ", ")
		if strings.HasPrefix(text, "}") {
			return text[1:], nil
		}
		eq := strings.Index(text, `="`)
		if eq < 0 {
			return "", fmt.Errorf("no label value in %q", text)
		}
		name := text[:eq]
		var value strings.Builder
		i := eq + 2
		for ; i < len(text) && text[i] != '"'; i++ {
			if text[i] == '\\' && i+1 < len(text) {
				i++
				switch text[i] {
				case 'n':
					value.WriteByte('\n')
				default: // \\ and \"
					value.WriteByte(text[i])
				}
				continue
			}
			value.WriteByte(text[i])
		}
		if i >= len(text) {
			return "", fmt.Errorf("unterminated value of label %s", name)
		}
		labels[name] = value.String()
		text = text[i+1:]
	}
}

// matches reports whether s carries every label of want.
func (s series) matches(want map[string]string) bool {
	for k, v := range want {
		if s.labels[k] != v {
			return false
		}
	}
	return true
}

// sum adds up the series named name that carry the labels of want (e.g. every code of a
// handler's request counter).
func (e exposition) sum(name string, want map[string]string) float64 {
	total := 0.0
	for _, s := range e {
		if s.name == name && s.matches(want) {
			total += s.value
		}
	}
	return total
}

// bucket is one cumulative bucket of a histogram: observations up to le.
type bucket struct {
	le    float64
	count float64
}

// histogram is a histogram's buckets (sorted by le, +Inf last), sum and count.
type histogram struct {
	buckets    []bucket
	sum, count float64
}

// histogram reads the histogram name (its _bucket, _sum and _count series) among the series
// that carry the labels of want.
func (e exposition) histogram(name string, want map[string]string) histogram {
	var h histogram
	for _, s := range e {
		if !s.matches(want) {
			continue
		}
		switch s.name {
		case name + "_bucket":
			le, err := strconv.ParseFloat(s.labels["le"], 64)
			if err == nil {
				h.buckets = append(h.buckets, bucket{le: le, count: s.value})
			}
		case name + "_sum":
			h.sum = s.value
		case name + "_count":
			h.count = s.value
		}
	}
	sort.Slice(h.buckets, func(i, j int) bool { return h.buckets[i].le < h.buckets[j].le })
	return h
}

// since is what h observed after earlier was read: every counter's difference (the histograms
// of one process, whose counters only grow).
func (h histogram) since(earlier histogram) histogram {
	out := histogram{sum: h.sum - earlier.sum, count: h.count - earlier.count}
	before := map[float64]float64{}
	for _, b := range earlier.buckets {
		before[b.le] = b.count
	}
	for _, b := range h.buckets {
		out.buckets = append(out.buckets, bucket{le: b.le, count: b.count - before[b.le]})
	}
	return out
}

// quantile estimates the q-quantile as PromQL's histogram_quantile does: it finds the bucket
// holding the rank and interpolates linearly inside it (from 0 for the first bucket), and
// answers the highest finite bound when the rank falls in +Inf. NaN without observations. The
// estimate is no finer than the buckets: gray-controller's sync buckets double (1 ms, 2 ms, 4 ms,
// ...) and its queue-wait buckets grow tenfold, so two quantiles in one bucket differ only by how
// the observations spread across it, which interpolation assumes even.
func (h histogram) quantile(q float64) float64 {
	if len(h.buckets) == 0 {
		return math.NaN()
	}
	total := h.buckets[len(h.buckets)-1].count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, below := 0.0, 0.0
	for i, b := range h.buckets {
		if b.count >= rank {
			if math.IsInf(b.le, 1) {
				if i == 0 {
					return math.NaN()
				}
				return h.buckets[i-1].le
			}
			if b.count == below {
				return b.le
			}
			return lower + (b.le-lower)*(rank-below)/(b.count-below)
		}
		lower, below = b.le, b.count
	}
	return lower
}

// mean is the exact mean of the observations (sum over count); NaN without any.
func (h histogram) mean() float64 {
	if h.count <= 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// cpuSeconds is the user and system CPU time pid has used, from /proc/<pid>/stat (utime and
// stime, the 14th and 15th fields, in clock ticks of 1/100 s: USER_HZ is 100 on every Linux
// architecture Go builds this for).
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (2nd field) is in parentheses and may hold spaces: count from after it.
	text := string(data)
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(text[end+1:]) // fields[0] is the 3rd field, state
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	ticks := 0.0
	for _, f := range fields[11:13] {
		n, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return ticks / 100, nil
}
