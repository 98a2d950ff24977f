package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// auditWrite is one completed request of kube-apiserver's audit log, with the
// fields the benchmarks read.
type auditWrite struct {
	Stage          string `json:"stage"`
	Verb           string `json:"verb"`
	UserAgent      string `json:"userAgent"`
	StageTimestamp string `json:"stageTimestamp"`
	// Read by readRequests only.
	AuditID                  string `json:"auditID"`
	RequestReceivedTimestamp string `json:"requestReceivedTimestamp"`
	ResponseStatus           struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	at time.Time
}

// scanAudit decodes every event of the audit log at path, in the order logged, and hands each
// to f.
func scanAudit(path string, f func(auditWrite) error) error {
	// A rotated log (kube-apiserver names the old part audit-<time>.log) would be counted in part.
	rotated, err := filepath.Glob(filepath.Join(filepath.Dir(path), "audit-*.log"))
	if err != nil {
		return err
	}
	if len(rotated) > 0 {
		return fmt.Errorf("audit log %s was rotated (%s): its counts would miss requests", path, strings.Join(rotated, ", "))
	}
	file, err := os.Open(path)
	if err != nil {
		return err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 1<<24)
	for scanner.Scan() {
		var w auditWrite
		if err := json.Unmarshal(scanner.Bytes(), &w); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
		if err := f(w); err != nil {
			return fmt.Errorf("audit log %s: %w", path, err)
		}
	}
	return scanner.Err()
}

// readAudit returns the completed requests of the audit log, oldest first.
func readAudit(path string) ([]auditWrite, error) {
	var out []auditWrite
	err := scanAudit(path, func(w auditWrite) error {
		if w.Stage != "ResponseComplete" {
			return nil
		}
		var err error
		if w.at, err = time.Parse(time.RFC3339Nano, w.StageTimestamp); err != nil {
			return err
		}
		out = append(out, w)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out, err
}

// request is one API request of the audit log: its verb and resource, the
// User-Agent, when kube-apiserver received it and the status it answered.
type request struct {
	verb, resource, userAgent string
	code                      int
	received                  time.Time
}

// readRequests returns every request of the audit log once, oldest received
// first. A watch has a ResponseStarted event when it begins and a
// ResponseComplete one only when it ends, perhaps after the log is read, so
// such a request is taken from its first event and its last one skipped by
// audit ID; every other request has one event (RequestReceived is omitted).
func readRequests(path string) ([]request, error) {
	started := map[string]bool{} // audit IDs of long-running requests whose ResponseStarted was read
	var out []request
	err := scanAudit(path, func(w auditWrite) error {
		switch {
		case w.Stage == "ResponseStarted":
			started[w.AuditID] = true
		case started[w.AuditID]:
			delete(started, w.AuditID) // its ResponseComplete: counted already
			return nil
		}
		r := request{verb: w.Verb, resource: w.ObjectRef.Resource, userAgent: w.UserAgent, code: w.ResponseStatus.Code}
		if w.ObjectRef.Subresource != "" {
			r.resource += "/" + w.ObjectRef.Subresource
		}
		var err error
		if r.received, err = time.Parse(time.RFC3339Nano, w.RequestReceivedTimestamp); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	sort.SliceStable(out, func(i, j int) bool { return out[i].received.Before(out[j].received) })
	return out, err
}
