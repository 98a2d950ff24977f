package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"
)

// auditWrite is one completed request of kube-apiserver's audit log, with the
// fields the benchmarks read.
type auditWrite struct {
	Stage          string `json:"stage"`
	Verb           string `json:"verb"`
	UserAgent      string `json:"userAgent"`
	StageTimestamp string `json:"stageTimestamp"`
	ObjectRef      struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	at time.Time
}

// readAudit returns the completed requests of the audit log, oldest first.
func readAudit(path string) ([]auditWrite, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []auditWrite
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var w auditWrite
		if err := json.Unmarshal(scanner.Bytes(), &w); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		if w.Stage != "ResponseComplete" {
			continue
		}
		if w.at, err = time.Parse(time.RFC3339Nano, w.StageTimestamp); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		out = append(out, w)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out, scanner.Err()
}
